// Threshold (Caffe "Threshold"): y = x > threshold ? 1 : 0. A step function
// has no useful gradient; Caffe does not implement its Backward, so asking to
// propagate through it is an error here too.
#include "core/pointwise_kernel.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "core/neuron_layer.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

const PointwiseKernel kThresholdForward("threshold_forward",
                                        {In("x"), Out("y"), Scalar("threshold")},
                                        "y = x > threshold ? (real)1.f : (real)0.f;");
}  // namespace

class ThresholdLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "Threshold"; }
  // Computes in float, reading and writing any storage type.
  bool SupportsStorage(StorageType) const override { return true; }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    kThresholdForward.Launch(*ctx_, bottom[0]->count(), {Data(*bottom[0]), Data(*top[0])},
                             {param_.threshold_param().threshold()}, {}, KernelShapeOf(choices_));
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    DLC_REQUIRE(!propagate_down[0],
                Where() << "has no gradient (a step function; Caffe implements no Threshold "
                           "backward either): keep it off the path from the loss to learnable "
                           "parameters, or set propagate_down: false on its consumer");
  }
};

REGISTER_LAYER_CLASS(Threshold);

}  // namespace dlcaffe
