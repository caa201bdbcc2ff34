// Log (Caffe "Log"): y = log_base(shift + scale * x); base -1 (the default)
// means e. The gradient needs x, so in-place use keeps a copy of it.
#include <cmath>

#include "core/pointwise_kernel.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "core/neuron_layer.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

// y = ln(shift + scale * x) * base_scale, base_scale = 1 / ln(base).
const PointwiseKernel kLogForward("log_forward",
                                  {In("x"), Out("y"), Scalar("scale"), Scalar("shift"),
                                   Scalar("base_scale")},
                                  "y = log(shift + scale * x) * base_scale;");
// dy/dx = scale * base_scale / (shift + scale * x).
const PointwiseKernel kLogBackward("log_backward",
                                   {In("x"), In("dy"), Out("dx"), Scalar("scale"),
                                    Scalar("shift"), Scalar("base_scale")},
                                   "dx = dy * (scale * base_scale) / (shift + scale * x);");
}  // namespace

class LogLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "Log"; }
  // Computes in float, reading and writing any storage type.
  bool SupportsStorage(StorageType) const override { return true; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::LogParameter& p = param_.log_param();
    const bool natural = p.base() == -1.f;
    DLC_REQUIRE(natural || (p.base() > 0.f && p.base() != 1.f && std::isfinite(p.base())),
                Where() << "log_param.base must be positive, finite and not 1 (or -1 for e), got "
                        << p.base());
    scale_ = p.scale();
    shift_ = p.shift();
    base_scale_ = natural ? 1.f : static_cast<float>(1.0 / std::log(double(p.base())));
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    KeepBottomIfInPlace(bottom, top);
    kLogForward.Launch(*ctx_, bottom[0]->count(), {Data(*bottom[0]), Data(*top[0])},
                       {scale_, shift_, base_scale_}, {}, KernelShapeOf(choices_));
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    kLogBackward.Launch(*ctx_, bottom[0]->count(),
                        {BottomForBackward(bottom, top), Diff(*top[0]), Diff(*bottom[0])},
                        {scale_, shift_, base_scale_}, {}, KernelShapeOf(choices_));
  }

 protected:
  bool BackwardReadsBottom() const override { return true; }

 private:
  float scale_ = 1.f, shift_ = 0.f, base_scale_ = 1.f;
};

REGISTER_LAYER_CLASS(Log);

}  // namespace dlcaffe
