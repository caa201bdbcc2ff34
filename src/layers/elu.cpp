// ELU (Caffe "ELU"): y = x > 0 ? x : alpha * (exp(x) - 1).
#include "dlcaffe/layer_registry.hpp"
#include "layers/neuron_layer.hpp"

namespace dlcaffe {

class ELULayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "ELU"; }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    KeepBottomIfInPlace(bottom, top);
    const int n = bottom[0]->count();
    ctx_->Launch1D(ctx_->Kernel("elu.cl", "", "elu_forward"), n, n, alpha(), bottom[0]->data(),
                   top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    const int n = bottom[0]->count();
    ctx_->Launch1D(ctx_->Kernel("elu.cl", "", "elu_backward"), n, n, alpha(),
                   BottomForBackward(bottom, top), top[0]->data(), top[0]->diff(),
                   bottom[0]->diff());
  }

 protected:
  // With alpha >= 0, y > 0 exactly where x > 0, so in place the overwritten
  // bottom still selects the right branch; a negative alpha needs x itself.
  bool BackwardReadsBottom() const override { return alpha() < 0.f; }

 private:
  float alpha() const { return param_.elu_param().alpha(); }
};

REGISTER_LAYER_CLASS(ELU);

}  // namespace dlcaffe
