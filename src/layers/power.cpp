// Power (Caffe "Power"): y = (shift + scale * x)^power. As in Caffe, when
// power * scale = 0 the output is the constant (power == 0 ? 1 : shift^power)
// and the gradient is zero.
#include <cmath>

#include "core/pointwise_kernel.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "core/neuron_layer.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

// Exact squares and identities; pow() is only accurate to a few ulp.
const PointwiseKernel kPowerForward("power_forward",
                                    {In("x"), Out("y"), Scalar("power"), Scalar("scale"),
                                     Scalar("shift")},
                                    "const real t = shift + scale * x;\n"
                                    "y = power == 1.f ? t : (power == 2.f ? t * t : "
                                    "pow(t, (real)power));");
// dy/dx = power * scale * (shift + scale * x)^(power - 1). Caffe writes the
// general case as power * scale * y / (shift + scale * x), which is NaN where
// shift + scale * x = 0; the direct form gives the true limit there.
const PointwiseKernel kPowerBackward("power_backward",
                                     {In("x"), In("dy"), Out("dx"), Scalar("power"),
                                      Scalar("scale"), Scalar("shift")},
                                     "const float diff_scale = power * scale;\n"
                                     "if (power == 1.f) {\n"
                                     "  dx = dy * diff_scale;\n"
                                     "} else {\n"
                                     "  const real t = shift + scale * x;\n"
                                     "  dx = dy * (diff_scale * (power == 2.f ? t : "
                                     "pow(t, (real)(power - 1.f))));\n"
                                     "}");
}  // namespace

class PowerLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "Power"; }
  // Computes in float, reading and writing any storage type.
  bool SupportsStorage(StorageType) const override { return true; }

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
      top[0]->SetData(value);
      return;
    }
    KeepBottomIfInPlace(bottom, top);
    kPowerForward.Launch(*ctx_, n, {Data(*bottom[0]), Data(*top[0])}, {power_, scale_, shift_}, {},
                         KernelShapeOf(choices_));
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    const int n = bottom[0]->count();
    if (ConstantOutput()) {
      bottom[0]->SetDiff(0.f);
      return;
    }
    kPowerBackward.Launch(*ctx_, n,
                          {BottomForBackward(bottom, top), Diff(*top[0]), Diff(*bottom[0])},
                          {power_, scale_, shift_}, {}, KernelShapeOf(choices_));
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
