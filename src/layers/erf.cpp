// Erf (dlcaffe "Erf", no parameters): y = erf(x), as ONNX Erf. The gradient,
// 2 / sqrt(pi) * exp(-x^2), needs x: in place a copy of x is kept.
#include "core/neuron_layer.hpp"
#include "core/pointwise_kernel.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

const PointwiseKernel kErfForward("erf_forward", {In("x"), Out("y")}, "y = erf(x);");
// 1.12837917 = 2 / sqrt(pi).
const PointwiseKernel kErfBackward("erf_backward", {In("x"), In("dy"), Out("dx")},
                                   "dx = dy * 1.1283791670955126f * exp(-x * x);");
}  // namespace

class ErfLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "Erf"; }
  // Computes in float, reading and writing any storage type.
  bool SupportsStorage(StorageType) const override { return true; }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    KeepBottomIfInPlace(bottom, top);
    kErfForward.Launch(*ctx_, bottom[0]->count(), {Data(*bottom[0]), Data(*top[0])}, {}, {},
                       KernelShapeOf(choices_));
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    kErfBackward.Launch(*ctx_, bottom[0]->count(),
                        {BottomForBackward(bottom, top), Diff(*top[0]), Diff(*bottom[0])}, {}, {},
                        KernelShapeOf(choices_));
  }

 protected:
  bool BackwardReadsBottom() const override { return true; }
};

REGISTER_LAYER_CLASS(Erf);

}  // namespace dlcaffe
