// TanH (Caffe "TanH"): y = tanh(x). The gradient follows from y alone, so it
// works in place.
#include "core/pointwise_kernel.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "core/neuron_layer.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

const PointwiseKernel kTanHForward("tanh_forward", {In("x"), Out("y")}, "y = tanh(x);");
// dy/dx = 1 - y^2: only y is needed, so in-place use works.
const PointwiseKernel kTanHBackward("tanh_backward", {In("y"), In("dy"), Out("dx")},
                                    "dx = dy * (1.f - y * y);");
}  // namespace

class TanHLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "TanH"; }
  // Computes in float, reading and writing any storage type.
  bool SupportsStorage(StorageType) const override { return true; }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    kTanHForward.Launch(*ctx_, bottom[0]->count(), {Data(*bottom[0]), Data(*top[0])}, {}, {},
                        KernelShapeOf(choices_));
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    kTanHBackward.Launch(*ctx_, bottom[0]->count(),
                         {Data(*top[0]), Diff(*top[0]), Diff(*bottom[0])}, {}, {},
                         KernelShapeOf(choices_));
  }
};

REGISTER_LAYER_CLASS(TanH);

}  // namespace dlcaffe
