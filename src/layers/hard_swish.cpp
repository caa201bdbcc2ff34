// HardSwish (dlcaffe "HardSwish", no parameters): y = x * max(0, min(1,
// x / 6 + 1 / 2)), as ONNX HardSwish and torch.nn.Hardswish.
//
// Gradient, PyTorch's choice at the kinks (hardswish_backward): 0 for
// x < -3, dy * (x / 3 + 1 / 2) for -3 <= x <= 3 (both kinks take the middle
// piece's slope: -1/2 at -3, 3/2 at 3), dy for x > 3. y cannot tell x <= -3
// from x = 0, so in place a copy of x is kept.
#include "core/neuron_layer.hpp"
#include "core/pointwise_kernel.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

const PointwiseKernel kHardSwishForward(
    "hard_swish_forward", {In("x"), Out("y")},
    "y = x * fmin(fmax(x * (1.f / 6.f) + 0.5f, 0.f), 1.f);");
const PointwiseKernel kHardSwishBackward(
    "hard_swish_backward", {In("x"), In("dy"), Out("dx")},
    "dx = x < -3.f ? (real)0.f : (x <= 3.f ? dy * (x * (1.f / 3.f) + 0.5f) : dy);");
}  // namespace

class HardSwishLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "HardSwish"; }
  // Computes in float, reading and writing any storage type.
  bool SupportsStorage(StorageType) const override { return true; }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    KeepBottomIfInPlace(bottom, top);
    kHardSwishForward.Launch(*ctx_, bottom[0]->count(), {Data(*bottom[0]), Data(*top[0])}, {}, {},
                             KernelShapeOf(choices_));
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    kHardSwishBackward.Launch(*ctx_, bottom[0]->count(),
                              {BottomForBackward(bottom, top), Diff(*top[0]), Diff(*bottom[0])}, {},
                              {}, KernelShapeOf(choices_));
  }

 protected:
  bool BackwardReadsBottom() const override { return true; }
};

REGISTER_LAYER_CLASS(HardSwish);

}  // namespace dlcaffe
