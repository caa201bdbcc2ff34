// InfogainLoss (Caffe "InfogainLoss", Caffe 1.0 master semantics): takes raw
// scores and applies a softmax over infogain_loss_param.axis internally, then
//   loss = -1/normalizer sum over positions with label l of
//          sum_j H[l, j] log(max(prob_j, 1e-20)),
// with the L x L infogain matrix H from bottom[2] or from the .binaryproto
// file infogain_loss_param.source. LossParameter ignore_label and
// normalization (FULL, VALID, BATCH_SIZE, NONE; the deprecated `normalize` is
// refused, as in Caffe) apply. The loss is a 0-d top computed on the device;
// an optional second top shares the probabilities. Neither labels nor H get
// gradients.
//
// Labels are never read on the host. A label outside [0, L) is a user error,
// found lazily (LateLabelCheck): that pass's loss is NaN and a later Forward
// throws.
//
// In mixed precision the scores, the probabilities and the scores' gradient
// may be 16-bit, as in SoftmaxWithLoss; the labels (16 bits hold integers
// only to 2048, bfloat16's to 256), H and the loss stay float32, and so
// does a layer with the probabilities as a second top.
#include <CL/cl.h>

#include "core/late_label_check.hpp"
#include "core/storage_option.hpp"
#include "dlcaffe/io.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class InfogainLossLayer : public LossLayer {
 public:
  using LossLayer::LossLayer;
  const char* type() const override { return "InfogainLoss"; }
  int ExactNumBottomBlobs() const override { return -1; }
  int MinBottomBlobs() const override { return 2; }
  int MaxBottomBlobs() const override { return 3; }
  int ExactNumTopBlobs() const override { return -1; }
  int MinTopBlobs() const override { return 1; }
  int MaxTopBlobs() const override { return 2; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index == 0; }
  bool SupportsStorage(StorageType) const override { return param_.top_size() < 2; }
  bool KeepsBottomInFloat(int index) const override { return index >= 1; }
  bool KeepsTopInFloat(int index) const override { return index == 0; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    LossLayer::LayerSetUp(bottom, top);
    caffe::LayerParameter softmax_param = param_;
    softmax_param.set_type("Softmax");
    softmax_param.set_name(param_.name() + "/softmax");
    softmax_param.clear_loss_weight();
    softmax_param.mutable_softmax_param()->set_axis(param_.infogain_loss_param().axis());
    softmax_ = LayerRegistry::Create(softmax_param, *ctx_);
    prob_.set_storage_type(bottom[0]->storage_type());
    softmax_->SetUp({bottom[0]}, {&prob_});

    const caffe::LossParameter& loss = param_.loss_param();
    DLC_REQUIRE(!loss.has_normalize(),
                Where() << "loss_param.normalize is deprecated for InfogainLoss (as in Caffe); "
                           "use loss_param.normalization");
    has_ignore_label_ = loss.has_ignore_label();
    ignore_label_ = loss.ignore_label();
    normalization_ = loss.normalization();
    if (bottom.size() < 3) {
      const caffe::InfogainLossParameter& p = param_.infogain_loss_param();
      DLC_REQUIRE(p.has_source(), Where() << "needs the infogain matrix: a third bottom or "
                                             "infogain_loss_param.source");
      caffe::BlobProto proto;
      ReadProtoFromBinaryFile(p.source(), &proto);
      infogain_.FromProto(proto);
    }
    normalizer_ = ctx_->Allocate(sizeof(cl_float));
    label_check_ = std::make_unique<LateLabelCheck>(*ctx_);
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    LossLayer::Reshape(bottom, top);
    softmax_->Reshape({bottom[0]}, {&prob_});
    const int axis = bottom[0]->CanonicalAxisIndex(param_.infogain_loss_param().axis());
    outer_ = bottom[0]->count(0, axis);
    num_labels_ = bottom[0]->shape(axis);
    inner_ = bottom[0]->count(axis + 1);
    DLC_REQUIRE(outer_ * inner_ == bottom[1]->count(),
                Where() << "the number of labels must match the number of predictions: "
                           "predictions "
                        << bottom[0]->shape_string() << " with axis " << axis << " need "
                        << outer_ * inner_ << " labels, got " << bottom[1]->shape_string());
    const Blob& H = infogain(bottom);
    DLC_REQUIRE(H.count() == num_labels_ * num_labels_,
                Where() << "the infogain matrix must be " << num_labels_ << " x " << num_labels_
                        << " for " << num_labels_ << " classes, got " << H.shape_string());
    sum_rows_.Reshape(std::vector<int>{num_labels_});
    if (top.size() > 1) top[1]->ReshapeLike(*bottom[0]);
  }

  void ThrowLateErrors() override {
    if (const auto bad = label_check_->TakeBadValue())
      DLC_FAIL(Where() << BadLabelMessage(*bad, num_labels_));
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    ThrowLateErrors();
    softmax_->Forward({bottom[0]}, {&prob_});
    ctx_->Launch(Kernel("infogain_loss_forward"), NDRange(kLossGroup), NDRange(kLossGroup),
                 outer_, num_labels_, inner_, prob_.data(), bottom[1]->data(),
                 infogain(bottom).data(), (int)has_ignore_label_, ignore_label_,
                 (int)normalization_, top[0]->data(), normalizer_->mem(),
                 label_check_->record());
    if (top.size() > 1) top[1]->ShareData(prob_);
    label_check_->ReadLater();
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    DLC_REQUIRE(!propagate_down[1], Where() << "cannot backpropagate to the label input");
    DLC_REQUIRE(propagate_down.size() < 3 || !propagate_down[2],
                Where() << "cannot backpropagate to the infogain matrix");
    if (!propagate_down[0]) return;
    const Blob& H = infogain(bottom);
    // H may be a bottom that changes, so its row sums are taken every pass.
    ctx_->Launch1D(Kernel("infogain_sum_rows"), num_labels_, num_labels_, H.data(),
                   sum_rows_.data());
    const int count = prob_.count();
    ctx_->Launch1D(Kernel("infogain_loss_backward"), count, count, num_labels_, inner_,
                   prob_.data(), bottom[1]->data(), H.data(), sum_rows_.data(),
                   (int)has_ignore_label_, ignore_label_, top[0]->diff(), normalizer_->mem(),
                   bottom[0]->diff());
  }

 private:
  static constexpr size_t kLossGroup = 128;  // LOSS_GROUP in infogain_loss.cl
  static_assert(caffe::LossParameter_NormalizationMode_FULL == 0 &&
                    caffe::LossParameter_NormalizationMode_VALID == 1 &&
                    caffe::LossParameter_NormalizationMode_BATCH_SIZE == 2 &&
                    caffe::LossParameter_NormalizationMode_NONE == 3,
                "infogain_loss.cl numbers the normalization modes as caffe.proto");

  // The probabilities' storage type (the scores') picks the kernels' DATA_TYPE.
  cl_kernel Kernel(const char* name) {
    return ctx_->Kernel("infogain_loss.cl", StorageOption("DATA_TYPE", prob_.storage_type()),
                        name);
  }

  const Blob& infogain(const std::vector<Blob*>& bottom) const {
    return bottom.size() > 2 ? *bottom[2] : infogain_;
  }

  std::unique_ptr<Layer> softmax_;
  Blob prob_{*ctx_};
  Blob infogain_{*ctx_};  // H read from infogain_loss_param.source
  Blob sum_rows_{*ctx_};  // row sums of H, for backward
  bool has_ignore_label_ = false;
  int ignore_label_ = 0;
  caffe::LossParameter::NormalizationMode normalization_ =
      caffe::LossParameter_NormalizationMode_VALID;
  int outer_ = 0, num_labels_ = 0, inner_ = 0;
  BufferPtr normalizer_;  // 1 float, written by forward for backward
  std::unique_ptr<LateLabelCheck> label_check_;
};

REGISTER_LAYER_CLASS(InfogainLoss);

}  // namespace dlcaffe
