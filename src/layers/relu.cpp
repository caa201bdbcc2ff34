// ReLU (Caffe "ReLU"): y = max(0, x) + negative_slope * min(0, x). Works in
// place: in backward, x > 0 and y > 0 select the same elements.
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class ReLULayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "ReLU"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    top[0]->ReshapeLike(*bottom[0]);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int n = bottom[0]->count();
    ctx_->Launch1D(ctx_->Kernel("relu.cl", "", "relu_forward"), n, n, slope(),
                   bottom[0]->data(), top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    const int n = bottom[0]->count();
    // In place, bottom data already holds y; its sign matches x's.
    ctx_->Launch1D(ctx_->Kernel("relu.cl", "", "relu_backward"), n, n, slope(),
                   top[0]->data(), top[0]->diff(), bottom[0]->diff());
  }

 private:
  float slope() const { return param_.relu_param().negative_slope(); }
};

REGISTER_LAYER_CLASS(ReLU);

}  // namespace dlcaffe
