// TanH (Caffe "TanH"): y = tanh(x). The gradient follows from y alone, so it
// works in place.
#include "dlcaffe/layer_registry.hpp"
#include "layers/neuron_layer.hpp"

namespace dlcaffe {

class TanHLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "TanH"; }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int n = bottom[0]->count();
    ctx_->Launch1D(ctx_->Kernel("tanh.cl", "", "tanh_forward"), n, n, bottom[0]->data(),
                   top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    const int n = bottom[0]->count();
    ctx_->Launch1D(ctx_->Kernel("tanh.cl", "", "tanh_backward"), n, n, top[0]->data(),
                   top[0]->diff(), bottom[0]->diff());
  }
};

REGISTER_LAYER_CLASS(TanH);

}  // namespace dlcaffe
