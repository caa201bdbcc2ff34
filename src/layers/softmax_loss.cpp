// SoftmaxWithLoss (Caffe "SoftmaxWithLoss"): softmax over softmax_param.axis
// followed by the multinomial logistic loss of the integer labels, with
// Caffe's LossParameter (ignore_label; normalization FULL, VALID, BATCH_SIZE or
// NONE; the legacy `normalize` bool). The loss is a 0-d top computed on the
// device; an optional second top shares the probabilities.
//
// In mixed precision the scores, probabilities and their gradient may be
// 16-bit; the labels (16 bits hold integers only to 2048, bfloat16's to 256)
// and the loss stay float32, and so does a layer with the probabilities as a
// second top.
//
// Labels are never read on the host. A label out of range is a user error,
// found lazily (LateLabelCheck): that pass's loss is NaN and a later Forward
// throws.
#include <CL/cl.h>

#include "dlcaffe/layer_registry.hpp"
#include "core/late_label_check.hpp"
#include "core/storage_option.hpp"

namespace dlcaffe {

class SoftmaxWithLossLayer : public LossLayer {
 public:
  using LossLayer::LossLayer;
  const char* type() const override { return "SoftmaxWithLoss"; }
  int ExactNumTopBlobs() const override { return -1; }
  int MinTopBlobs() const override { return 1; }
  int MaxTopBlobs() const override { return 2; }
  bool SupportsStorage(StorageType) const override { return param_.top_size() < 2; }
  bool KeepsBottomInFloat(int index) const override { return index == 1; }
  bool KeepsTopInFloat(int index) const override { return index == 0; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    LossLayer::LayerSetUp(bottom, top);
    caffe::LayerParameter softmax_param = param_;
    softmax_param.set_type("Softmax");
    softmax_param.set_name(param_.name() + "/softmax");
    softmax_param.clear_loss_weight();
    softmax_ = LayerRegistry::Create(softmax_param, *ctx_);
    prob_.set_storage_type(bottom[0]->storage_type());
    softmax_->SetUp({bottom[0]}, {&prob_});

    const caffe::LossParameter& loss = param_.loss_param();
    has_ignore_label_ = loss.has_ignore_label();
    ignore_label_ = loss.ignore_label();
    if (!loss.has_normalization() && loss.has_normalize()) {
      normalization_ = loss.normalize() ? caffe::LossParameter_NormalizationMode_VALID
                                        : caffe::LossParameter_NormalizationMode_BATCH_SIZE;
    } else {
      normalization_ = loss.normalization();
    }
    normalizer_ = ctx_->Allocate(sizeof(cl_float));
    label_check_ = std::make_unique<LateLabelCheck>(*ctx_);
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    LossLayer::Reshape(bottom, top);
    softmax_->Reshape({bottom[0]}, {&prob_});
    const int axis = bottom[0]->CanonicalAxisIndex(param_.softmax_param().axis());
    outer_ = bottom[0]->count(0, axis);
    channels_ = bottom[0]->shape(axis);
    inner_ = bottom[0]->count(axis + 1);
    DLC_REQUIRE(outer_ * inner_ == bottom[1]->count(),
                Where() << "the number of labels must match the number of predictions: "
                           "predictions "
                        << bottom[0]->shape_string() << " with softmax axis " << axis
                        << " need " << outer_ * inner_ << " labels, got "
                        << bottom[1]->shape_string());
    if (top.size() > 1) top[1]->ReshapeLike(*bottom[0]);
  }

  void ThrowLateErrors() override {
    if (const auto bad = label_check_->TakeBadValue())
      DLC_FAIL(Where() << BadLabelMessage(*bad, channels_));
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    ThrowLateErrors();
    softmax_->Forward({bottom[0]}, {&prob_});
    ctx_->Launch(Kernel("softmax_loss_forward"),
                 NDRange(kLossGroup), NDRange(kLossGroup), outer_, channels_, inner_,
                 prob_.data(), bottom[1]->data(), (int)has_ignore_label_, ignore_label_,
                 (int)normalization_, top[0]->data(), normalizer_->mem(),
                 label_check_->record());
    if (top.size() > 1) top[1]->ShareData(prob_);
    label_check_->ReadLater();
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    DLC_REQUIRE(!propagate_down[1], Where() << "cannot backpropagate to the label input");
    if (!propagate_down[0]) return;
    const int count = prob_.count();
    ctx_->Launch1D(Kernel("softmax_loss_backward"), count,
                   count, channels_, inner_, prob_.data(), bottom[1]->data(),
                   (int)has_ignore_label_, ignore_label_, top[0]->diff(),
                   normalizer_->mem(), bottom[0]->diff());
  }

 private:
  cl_kernel Kernel(const char* name) {
    return ctx_->Kernel("softmax_loss.cl", StorageOption("DATA_TYPE", prob_.storage_type()),
                        name);
  }

  static constexpr size_t kLossGroup = 128;  // LOSS_GROUP in softmax_loss.cl
  static_assert(caffe::LossParameter_NormalizationMode_FULL == 0 &&
                    caffe::LossParameter_NormalizationMode_VALID == 1 &&
                    caffe::LossParameter_NormalizationMode_BATCH_SIZE == 2 &&
                    caffe::LossParameter_NormalizationMode_NONE == 3,
                "softmax_loss.cl numbers the normalization modes as caffe.proto");

  std::unique_ptr<Layer> softmax_;
  Blob prob_{*ctx_};
  bool has_ignore_label_ = false;
  int ignore_label_ = 0;
  caffe::LossParameter::NormalizationMode normalization_ =
      caffe::LossParameter_NormalizationMode_VALID;
  int outer_ = 0, channels_ = 0, inner_ = 0;
  BufferPtr normalizer_;  // 1 float, written by forward for backward
  std::unique_ptr<LateLabelCheck> label_check_;
};

REGISTER_LAYER_CLASS(SoftmaxWithLoss);

}  // namespace dlcaffe
