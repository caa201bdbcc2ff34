// BNLL (Caffe "BNLL"): y = log(1 + exp(x)), the softplus. The gradient needs
// x, so in-place use keeps a copy of it.
#include "core/pointwise_kernel.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "core/neuron_layer.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

// Written so that exp never overflows: x + log(1 + exp(-x)) for x > 0.
const PointwiseKernel kBnllForward("bnll_forward", {In("x"), Out("y")},
                                   "y = x > 0.f ? x + log1p(exp(-x)) : log1p(exp(x));");
// dy/dx = exp(x) / (1 + exp(x)), with x capped at 50 as in Caffe (the ratio is
// 1 in float well before that).
const PointwiseKernel kBnllBackward("bnll_backward", {In("x"), In("dy"), Out("dx")},
                                    "const real e = exp(fmin(x, 50.f));\n"
                                    "dx = dy * e / (e + 1.f);");
}  // namespace

class BNLLLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "BNLL"; }
  // Computes in float, reading and writing any storage type.
  bool SupportsStorage(StorageType) const override { return true; }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    KeepBottomIfInPlace(bottom, top);
    kBnllForward.Launch(*ctx_, bottom[0]->count(), {Data(*bottom[0]), Data(*top[0])}, {}, {},
                        KernelShapeOf(choices_));
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    kBnllBackward.Launch(*ctx_, bottom[0]->count(),
                         {BottomForBackward(bottom, top), Diff(*top[0]), Diff(*bottom[0])}, {}, {},
                         KernelShapeOf(choices_));
  }

 protected:
  bool BackwardReadsBottom() const override { return true; }
};

REGISTER_LAYER_CLASS(BNLL);

}  // namespace dlcaffe
