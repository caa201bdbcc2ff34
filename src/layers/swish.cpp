// Swish (Caffe "Swish"): y = x * sigmoid(beta * x). The sigmoid is kept in an
// internal blob for Backward, whose formula needs only y and it, so the layer
// works in place.
#include "dlcaffe/layer_registry.hpp"
#include "layers/neuron_layer.hpp"

namespace dlcaffe {

class SwishLayer : public NeuronLayer {
 public:
  SwishLayer(const caffe::LayerParameter& param, Context& ctx)
      : NeuronLayer(param, ctx), sigmoid_(ctx) {}
  const char* type() const override { return "Swish"; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    NeuronLayer::Reshape(bottom, top);
    sigmoid_.ReshapeLike(*bottom[0]);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int n = bottom[0]->count();
    ctx_->Launch1D(ctx_->Kernel("swish.cl", "", "swish_forward"), n, n, beta(),
                   bottom[0]->data(), sigmoid_.data(), top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    const int n = bottom[0]->count();
    ctx_->Launch1D(ctx_->Kernel("swish.cl", "", "swish_backward"), n, n, beta(),
                   top[0]->data(), sigmoid_.data(), top[0]->diff(), bottom[0]->diff());
  }

 private:
  float beta() const { return param_.swish_param().beta(); }

  Blob sigmoid_;  // sigmoid(beta * x) of the last Forward
};

REGISTER_LAYER_CLASS(Swish);

}  // namespace dlcaffe
