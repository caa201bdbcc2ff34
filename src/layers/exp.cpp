// Exp (Caffe "Exp"): y = base^(shift + scale * x); base -1 (the default)
// means e. The gradient follows from y alone, so it works in place.
#include <cmath>

#include "core/pointwise_kernel.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "core/neuron_layer.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

// y = outer_scale * exp(inner_scale * x), with inner_scale = ln(base) * scale
// and outer_scale = base^shift.
const PointwiseKernel kExpForward("exp_forward",
                                  {In("x"), Out("y"), Scalar("inner_scale"),
                                   Scalar("outer_scale")},
                                  "y = outer_scale * exp(inner_scale * x);");
// dy/dx = inner_scale * y: only y is needed, so in-place use works.
const PointwiseKernel kExpBackward("exp_backward",
                                   {In("y"), In("dy"), Out("dx"), Scalar("inner_scale")},
                                   "dx = dy * y * inner_scale;");
}  // namespace

class ExpLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "Exp"; }
  // Computes in float, reading and writing any storage type.
  bool SupportsStorage(StorageType) const override { return true; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::ExpParameter& p = param_.exp_param();
    const bool natural = p.base() == -1.f;
    DLC_REQUIRE(natural || (p.base() > 0.f && std::isfinite(p.base())),
                Where() << "exp_param.base must be positive and finite (or -1 for e), got "
                        << p.base());
    // Computed in double so that base^shift rounds once, as Caffe's pow.
    const double log_base = natural ? 1.0 : std::log(double(p.base()));
    inner_scale_ = static_cast<float>(log_base * p.scale());
    outer_scale_ = p.shift() == 0.f ? 1.f : static_cast<float>(std::exp(log_base * p.shift()));
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    kExpForward.Launch(*ctx_, bottom[0]->count(), {Data(*bottom[0]), Data(*top[0])},
                       {inner_scale_, outer_scale_}, {}, KernelShapeOf(choices_));
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    kExpBackward.Launch(*ctx_, bottom[0]->count(), {Data(*top[0]), Diff(*top[0]), Diff(*bottom[0])},
                        {inner_scale_}, {}, KernelShapeOf(choices_));
  }

 private:
  float inner_scale_ = 1.f, outer_scale_ = 1.f;
};

REGISTER_LAYER_CLASS(Exp);

}  // namespace dlcaffe
