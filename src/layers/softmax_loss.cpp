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
#include "core/softmax_label_loss.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class SoftmaxWithLossLayer : public SoftmaxLabelLossLayer {
 public:
  using SoftmaxLabelLossLayer::SoftmaxLabelLossLayer;
  const char* type() const override { return "SoftmaxWithLoss"; }
  bool KeepsBottomInFloat(int index) const override { return index == 1; }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    ForwardSoftmax(bottom, top);
    ctx_->Launch(Kernel("softmax_loss.cl", "softmax_loss_forward"), NDRange(kLossGroup),
                 NDRange(kLossGroup), outer_, classes_, inner_, prob_.data(), bottom[1]->data(),
                 (int)has_ignore_label_, ignore_label_, (int)normalization_, top[0]->data(),
                 normalizer_->mem(), label_error());
    AfterLossKernel();
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    DLC_REQUIRE(!propagate_down[1], Where() << "cannot backpropagate to the label input");
    if (!propagate_down[0]) return;
    const int count = prob_.count();
    ctx_->Launch1D(Kernel("softmax_loss.cl", "softmax_loss_backward"), count, count, classes_,
                   inner_, prob_.data(), bottom[1]->data(), (int)has_ignore_label_,
                   ignore_label_, top[0]->diff(), normalizer_->mem(), bottom[0]->diff());
  }

 protected:
  int SoftmaxAxis() const override { return param_.softmax_param().axis(); }
  // The legacy `normalize` bool where normalization is not given.
  caffe::LossParameter::NormalizationMode Normalization() const override {
    const caffe::LossParameter& loss = param_.loss_param();
    if (!loss.has_normalization() && loss.has_normalize())
      return loss.normalize() ? caffe::LossParameter_NormalizationMode_VALID
                              : caffe::LossParameter_NormalizationMode_BATCH_SIZE;
    return loss.normalization();
  }
};

REGISTER_LAYER_CLASS(SoftmaxWithLoss);

}  // namespace dlcaffe
