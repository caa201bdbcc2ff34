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
#include "core/softmax_label_loss.hpp"
#include "dlcaffe/io.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class InfogainLossLayer : public SoftmaxLabelLossLayer {
 public:
  using SoftmaxLabelLossLayer::SoftmaxLabelLossLayer;
  const char* type() const override { return "InfogainLoss"; }
  int ExactNumBottomBlobs() const override { return -1; }
  int MinBottomBlobs() const override { return 2; }
  int MaxBottomBlobs() const override { return 3; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index == 0; }
  bool KeepsBottomInFloat(int index) const override { return index >= 1; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    SoftmaxLabelLossLayer::LayerSetUp(bottom, top);
    if (bottom.size() < 3) {
      const caffe::InfogainLossParameter& p = param_.infogain_loss_param();
      DLC_REQUIRE(p.has_source(), Where() << "needs the infogain matrix: a third bottom or "
                                             "infogain_loss_param.source");
      caffe::BlobProto proto;
      ReadProtoFromBinaryFile(p.source(), &proto);
      infogain_.FromProto(proto);
    }
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    SoftmaxLabelLossLayer::Reshape(bottom, top);
    const Blob& H = infogain(bottom);
    DLC_REQUIRE(H.count() == classes_ * classes_,
                Where() << "the infogain matrix must be " << classes_ << " x " << classes_
                        << " for " << classes_ << " classes, got " << H.shape_string());
    sum_rows_.Reshape(std::vector<int>{classes_});
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    ForwardSoftmax(bottom, top);
    ctx_->Launch(Kernel("infogain_loss.cl", "infogain_loss_forward"), NDRange(kLossGroup),
                 NDRange(kLossGroup), outer_, classes_, inner_, prob_.data(), bottom[1]->data(),
                 infogain(bottom).data(), (int)has_ignore_label_, ignore_label_,
                 (int)normalization_, top[0]->data(), normalizer_->mem(), label_error());
    AfterLossKernel();
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    DLC_REQUIRE(!propagate_down[1], Where() << "cannot backpropagate to the label input");
    DLC_REQUIRE(propagate_down.size() < 3 || !propagate_down[2],
                Where() << "cannot backpropagate to the infogain matrix");
    if (!propagate_down[0]) return;
    const Blob& H = infogain(bottom);
    // H may be a bottom that changes, so its row sums are taken every pass.
    ctx_->Launch1D(Kernel("infogain_loss.cl", "infogain_sum_rows"), classes_, classes_,
                   H.data(), sum_rows_.data());
    const int count = prob_.count();
    ctx_->Launch1D(Kernel("infogain_loss.cl", "infogain_loss_backward"), count, count,
                   classes_, inner_, prob_.data(), bottom[1]->data(), H.data(),
                   sum_rows_.data(), (int)has_ignore_label_, ignore_label_, top[0]->diff(),
                   normalizer_->mem(), bottom[0]->diff());
  }

 protected:
  int SoftmaxAxis() const override { return param_.infogain_loss_param().axis(); }
  // The deprecated `normalize` is refused, as in Caffe.
  caffe::LossParameter::NormalizationMode Normalization() const override {
    const caffe::LossParameter& loss = param_.loss_param();
    DLC_REQUIRE(!loss.has_normalize(),
                Where() << "loss_param.normalize is deprecated for InfogainLoss (as in Caffe); "
                           "use loss_param.normalization");
    return loss.normalization();
  }

 private:
  const Blob& infogain(const std::vector<Blob*>& bottom) const {
    return bottom.size() > 2 ? *bottom[2] : infogain_;
  }

  Blob infogain_{*ctx_};  // H read from infogain_loss_param.source
  Blob sum_rows_{*ctx_};  // row sums of H, for backward
};

REGISTER_LAYER_CLASS(InfogainLoss);

}  // namespace dlcaffe
