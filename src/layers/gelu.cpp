// GELU (dlcaffe "GELU", gelu_param): y = x * Phi(x), Phi the standard normal
// CDF, as torch.nn.GELU / ONNX Gelu:
//   approximate NONE (default): y = 0.5 x (1 + erf(x / sqrt 2))
//   approximate TANH:           y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// The gradient needs x, so in place a copy of x is kept (NeuronLayer).
#include "core/neuron_layer.hpp"
#include "core/pointwise_kernel.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

// 0.70710678 = 1 / sqrt 2; 0.39894228 = 1 / sqrt(2 pi).
const PointwiseKernel kGeluForward("gelu_forward", {In("x"), Out("y")},
                                   "y = 0.5f * x * (1.f + erf(x * 0.70710678118654752f));");
// dy/dx = Phi(x) + x * phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi).
const PointwiseKernel kGeluBackward(
    "gelu_backward", {In("x"), In("dy"), Out("dx")},
    "dx = dy * (0.5f * (1.f + erf(x * 0.70710678118654752f)) +\n"
    "           x * 0.39894228040143268f * exp(-0.5f * x * x));");
// 0.79788456 = sqrt(2 / pi).
const PointwiseKernel kGeluTanhForward(
    "gelu_tanh_forward", {In("x"), Out("y")},
    "const real t = tanh(0.79788456080286536f * (x + 0.044715f * x * x * x));\n"
    "y = 0.5f * x * (1.f + t);");
// dy/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2).
const PointwiseKernel kGeluTanhBackward(
    "gelu_tanh_backward", {In("x"), In("dy"), Out("dx")},
    "const real t = tanh(0.79788456080286536f * (x + 0.044715f * x * x * x));\n"
    "dx = dy * (0.5f * (1.f + t) +\n"
    "           0.5f * x * (1.f - t * t) * 0.79788456080286536f * (1.f + 0.134145f * x * x));");
}  // namespace

class GELULayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "GELU"; }
  // Computes in float, reading and writing any storage type.
  bool SupportsStorage(StorageType) const override { return true; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const auto approximate = param_.gelu_param().approximate();
    DLC_REQUIRE(approximate == caffe::GELUParameter::NONE ||
                    approximate == caffe::GELUParameter::TANH,
                Where() << "unknown gelu_param.approximate " << approximate);
    tanh_ = approximate == caffe::GELUParameter::TANH;
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    KeepBottomIfInPlace(bottom, top);
    (tanh_ ? kGeluTanhForward : kGeluForward)
        .Launch(*ctx_, bottom[0]->count(), {Data(*bottom[0]), Data(*top[0])}, {}, {},
                KernelShapeOf(choices_));
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    (tanh_ ? kGeluTanhBackward : kGeluBackward)
        .Launch(*ctx_, bottom[0]->count(),
                {BottomForBackward(bottom, top), Diff(*top[0]), Diff(*bottom[0])}, {}, {},
                KernelShapeOf(choices_));
  }

 protected:
  bool BackwardReadsBottom() const override { return true; }

 private:
  bool tanh_ = false;
};

REGISTER_LAYER_CLASS(GELU);

}  // namespace dlcaffe
