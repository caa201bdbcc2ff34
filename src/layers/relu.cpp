// ReLU (Caffe "ReLU"): y = max(0, x) + negative_slope * min(0, x). Works in
// place: in backward, x > 0 and y > 0 select the same elements.
#include "core/pointwise_kernel.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

const PointwiseKernel kReluForward("relu_forward", {In("x"), Out("y"), Scalar("slope")},
                                   "y = x > 0.f ? x : slope * x;");
// The gradient at exactly 0 is taken as slope, as in Caffe.
const PointwiseKernel kReluBackward("relu_backward",
                                    {In("x"), In("dy"), Out("dx"), Scalar("slope")},
                                    "dx = x > 0.f ? dy : slope * dy;");
}  // namespace

class ReLULayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "ReLU"; }
  EpilogueRole RoleInEpilogue(const Blob&) const override {
    return param_.relu_param().negative_slope() == 0.f ? EpilogueRole::kClamp
                                                       : EpilogueRole::kNone;
  }
  // Computes in float, reading and writing any storage type.
  bool SupportsStorage(StorageType) const override { return true; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    top[0]->ReshapeLike(*bottom[0]);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    kReluForward.Launch(*ctx_, bottom[0]->count(), {Data(*bottom[0]), Data(*top[0])}, {slope()}, {},
                        KernelShapeOf(choices_));
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    // In place, bottom data already holds y; its sign matches x's.
    kReluBackward.Launch(*ctx_, bottom[0]->count(),
                         {Data(*top[0]), Diff(*top[0]), Diff(*bottom[0])}, {slope()}, {},
                         KernelShapeOf(choices_));
  }

 private:
  float slope() const { return param_.relu_param().negative_slope(); }
};

REGISTER_LAYER_CLASS(ReLU);
REGISTER_LAYER_TRAITS(ReLU, LayerTraits().RunsInPlace());

}  // namespace dlcaffe
