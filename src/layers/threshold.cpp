// Threshold (Caffe "Threshold"): y = x > threshold ? 1 : 0. A step function
// has no useful gradient; Caffe does not implement its Backward, so asking to
// propagate through it is an error here too.
#include "dlcaffe/layer_registry.hpp"
#include "layers/neuron_layer.hpp"

namespace dlcaffe {

class ThresholdLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "Threshold"; }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int n = bottom[0]->count();
    ctx_->Launch1D(ctx_->Kernel("threshold.cl", "", "threshold_forward"), n, n,
                   param_.threshold_param().threshold(), bottom[0]->data(), top[0]->data());
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
