// Silence (Caffe "Silence"): consumes bottoms that nothing else uses, so the
// net does not report them as outputs. No top; backward gives zero gradients.
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class SilenceLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Silence"; }
  int MinBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 0; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {}
  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {}

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    for (size_t i = 0; i < bottom.size(); ++i)
      if (propagate_down[i]) bottom[i]->SetDiff(0.f);
  }
};

REGISTER_LAYER_CLASS(Silence);

}  // namespace dlcaffe
