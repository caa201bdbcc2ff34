// AbsVal (Caffe "AbsVal"): y = |x|. Caffe refuses in-place use because the
// gradient needs the sign of x; here in place keeps a copy of x instead.
#include "core/pointwise_kernel.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "core/neuron_layer.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

const PointwiseKernel kAbsValForward("absval_forward", {In("x"), Out("y")}, "y = fabs(x);");
// dy/dx = sign(x), with sign(0) = 0 as Caffe's caffe_sign.
const PointwiseKernel kAbsValBackward("absval_backward", {In("x"), In("dy"), Out("dx")},
                                      "dx = x > 0.f ? dy : (x < 0.f ? -dy : (real)0.f);");
}  // namespace

class AbsValLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "AbsVal"; }
  // Computes in float, reading and writing any storage type.
  bool SupportsStorage(StorageType) const override { return true; }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    KeepBottomIfInPlace(bottom, top);
    kAbsValForward.Launch(*ctx_, bottom[0]->count(), {Data(*bottom[0]), Data(*top[0])}, {}, {},
                          KernelShapeOf(choices_));
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    kAbsValBackward.Launch(*ctx_, bottom[0]->count(),
                           {BottomForBackward(bottom, top), Diff(*top[0]), Diff(*bottom[0])}, {},
                           {}, KernelShapeOf(choices_));
  }

 protected:
  bool BackwardReadsBottom() const override { return true; }
};

REGISTER_LAYER_CLASS(AbsVal);

}  // namespace dlcaffe
