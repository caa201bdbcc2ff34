// Switch (dlcaffe; ONNX If on a condition known only at run time): the top
// is a copy of bottom 1 where the scalar bottom 0 is not 0, else of bottom
// 2, shape included. Forward reads the condition (one host read). The
// importer computes both branches of the If and lets this layer pick, so a
// branch must be able to run on what the other is taken for. The chosen
// bottom gets the top's gradient, the other a zero one.
#include <vector>

#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class SwitchLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Switch"; }
  int ExactNumBottomBlobs() const override { return 3; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index > 0; }
  bool SizesTopsInForward() const override { return true; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    DLC_REQUIRE(bottom[0]->count() == 1, Where() << "the condition (bottom 0) must hold one value, "
                                                 << "got shape " << bottom[0]->shape_string());
    top[0]->Reshape(bottom[chosen_]->shape());
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    float condition = 0;
    ctx_->Read(bottom[0]->data(), 0, sizeof(float), &condition);
    chosen_ = condition != 0.f ? 1 : 2;
    top[0]->Reshape(bottom[chosen_]->shape());
    if (top[0]->count() > 0)
      ctx_->Copy(bottom[chosen_]->data(), 0, top[0]->data(), 0, top[0]->count() * sizeof(float));
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    DLC_REQUIRE(!propagate_down[0], Where() << "cannot backpropagate to the condition");
    for (int b = 1; b <= 2; ++b) {
      if (!propagate_down[b] || bottom[b]->count() == 0) continue;
      if (b == chosen_)
        ctx_->Copy(top[0]->diff(), 0, bottom[b]->diff(), 0, top[0]->count() * sizeof(float));
      else
        bottom[b]->SetDiff(0.f);
    }
  }

 private:
  int chosen_ = 1;
};

REGISTER_LAYER_CLASS(Switch);

}  // namespace dlcaffe
