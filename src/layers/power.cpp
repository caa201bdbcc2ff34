// Power (Caffe "Power"): y = (shift + scale * x)^power. As in Caffe, when
// power * scale = 0 the output is the constant (power == 0 ? 1 : shift^power)
// and the gradient is zero.
#include <cmath>

#include "dlcaffe/layer_registry.hpp"
#include "layers/neuron_layer.hpp"

namespace dlcaffe {

class PowerLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "Power"; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::PowerParameter& p = param_.power_param();
    power_ = p.power();
    scale_ = p.scale();
    shift_ = p.shift();
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int n = bottom[0]->count();
    if (ConstantOutput()) {
      const float value = power_ == 0.f ? 1.f : std::pow(shift_, power_);
      SetFloats(*ctx_, n, value, top[0]->data(), 0);
      return;
    }
    KeepBottomIfInPlace(bottom, top);
    ctx_->Launch1D(ctx_->Kernel("power.cl", "", "power_forward"), n, n, power_, scale_, shift_,
                   bottom[0]->data(), top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    const int n = bottom[0]->count();
    if (ConstantOutput()) {
      SetFloats(*ctx_, n, 0.f, bottom[0]->diff(), 0);
      return;
    }
    ctx_->Launch1D(ctx_->Kernel("power.cl", "", "power_backward"), n, n, power_, scale_, shift_,
                   BottomForBackward(bottom, top), top[0]->diff(), bottom[0]->diff());
  }

 protected:
  // The gradient is a constant for power 1 (and zero for a constant output).
  bool BackwardReadsBottom() const override { return !ConstantOutput() && power_ != 1.f; }

 private:
  bool ConstantOutput() const { return power_ * scale_ == 0.f; }

  float power_ = 1.f, scale_ = 1.f, shift_ = 0.f;
};

REGISTER_LAYER_CLASS(Power);

}  // namespace dlcaffe
