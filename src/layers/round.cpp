// Round (dlcaffe; ONNX Floor, Ceil and Round): each element rounded to a
// whole number (round_param.mode: FLOOR, CEIL, HALF_EVEN, TRUNCATE). Its gradient is
// 0, as PyTorch's for floor, ceil and round. Faster R-CNN's feature-level
// choice (floor(4 + log2(sqrt(area) / 224))) runs through it.
#include <vector>

#include "core/zero_gradients.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class RoundLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Round"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    top[0]->Reshape(bottom[0]->shape());
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int n = top[0]->count();
    ctx_->Launch1D(ctx_->Kernel("round.cl", "", "round_forward"), n, n,
                   static_cast<int>(param_.round_param().mode()), bottom[0]->data(),
                   top[0]->data());
  }

  void Backward(const std::vector<Blob*>&, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    WriteZeroGradients(propagate_down, bottom);
  }
};

REGISTER_LAYER_CLASS(Round);

}  // namespace dlcaffe
