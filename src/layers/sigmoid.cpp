// Sigmoid (Caffe "Sigmoid"): y = 1 / (1 + exp(-x)). The gradient follows from
// y alone, so it works in place.
#include "core/pointwise_kernel.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "core/neuron_layer.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

// Computed as 0.5 * tanh(0.5 * x) + 0.5 (as Caffe's CPU path), which neither
// overflows nor loses precision for large |x|.
const PointwiseKernel kSigmoidForward("sigmoid_forward", {In("x"), Out("y")},
                                      "y = 0.5f * tanh(0.5f * x) + 0.5f;");
// dy/dx = y * (1 - y): only y is needed, so in-place use works.
const PointwiseKernel kSigmoidBackward("sigmoid_backward", {In("y"), In("dy"), Out("dx")},
                                       "dx = dy * y * (1.f - y);");
}  // namespace

class SigmoidLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "Sigmoid"; }
  // Computes in float, reading and writing any storage type.
  bool SupportsStorage(StorageType) const override { return true; }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    kSigmoidForward.Launch(*ctx_, bottom[0]->count(), {Data(*bottom[0]), Data(*top[0])}, {}, {},
                           KernelShapeOf(choices_));
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    kSigmoidBackward.Launch(*ctx_, bottom[0]->count(),
                            {Data(*top[0]), Diff(*top[0]), Diff(*bottom[0])}, {}, {},
                            KernelShapeOf(choices_));
  }
};

REGISTER_LAYER_CLASS(Sigmoid);

}  // namespace dlcaffe
