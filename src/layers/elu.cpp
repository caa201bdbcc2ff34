// ELU (Caffe "ELU"): y = x > 0 ? x : alpha * (exp(x) - 1).
#include "core/pointwise_kernel.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "core/neuron_layer.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

const PointwiseKernel kEluForward("elu_forward", {In("x"), Out("y"), Scalar("alpha")},
                                  "y = x > 0.f ? x : alpha * expm1(x);");
// As Caffe: dy/dx = 1 for x > 0, else alpha * exp(x) = alpha + y.
const PointwiseKernel kEluBackward("elu_backward",
                                   {In("x"), In("y"), In("dy"), Out("dx"), Scalar("alpha")},
                                   "dx = x > 0.f ? dy : dy * (alpha + y);");
}  // namespace

class ELULayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "ELU"; }
  // Computes in float, reading and writing any storage type.
  bool SupportsStorage(StorageType) const override { return true; }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    KeepBottomIfInPlace(bottom, top);
    kEluForward.Launch(*ctx_, bottom[0]->count(), {Data(*bottom[0]), Data(*top[0])}, {alpha()}, {},
                       KernelShapeOf(choices_));
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    kEluBackward.Launch(*ctx_, bottom[0]->count(),
                        {BottomForBackward(bottom, top), Data(*top[0]), Diff(*top[0]),
                         Diff(*bottom[0])},
                        {alpha()}, {}, KernelShapeOf(choices_));
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
