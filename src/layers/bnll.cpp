// BNLL (Caffe "BNLL"): y = log(1 + exp(x)), the softplus. The gradient needs
// x, so in-place use keeps a copy of it.
#include "dlcaffe/layer_registry.hpp"
#include "layers/neuron_layer.hpp"

namespace dlcaffe {

class BNLLLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "BNLL"; }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    KeepBottomIfInPlace(bottom, top);
    const int n = bottom[0]->count();
    ctx_->Launch1D(ctx_->Kernel("bnll.cl", "", "bnll_forward"), n, n, bottom[0]->data(),
                   top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    const int n = bottom[0]->count();
    ctx_->Launch1D(ctx_->Kernel("bnll.cl", "", "bnll_backward"), n, n,
                   BottomForBackward(bottom, top), top[0]->diff(), bottom[0]->diff());
  }

 protected:
  bool BackwardReadsBottom() const override { return true; }
};

REGISTER_LAYER_CLASS(BNLL);

}  // namespace dlcaffe
