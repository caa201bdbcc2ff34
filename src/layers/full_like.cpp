// FullLike (dlcaffe; torch.full_like, ONNX ConstantOfShape of a run-time
// Shape): the bottom's shape with every element full_like_param.value. The
// bottom's values are not read; no gradient reaches it.
#include <vector>

#include "core/zero_gradients.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class FullLikeLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "FullLike"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    top[0]->Reshape(bottom[0]->shape());
  }

  void Forward(const std::vector<Blob*>&, const std::vector<Blob*>& top) override {
    ctx_->Fill(top[0]->data(), 0, top[0]->count(), param_.full_like_param().value());
  }

  void Backward(const std::vector<Blob*>&, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    WriteZeroGradients(propagate_down, bottom);
  }
};

REGISTER_LAYER_CLASS(FullLike);

}  // namespace dlcaffe
