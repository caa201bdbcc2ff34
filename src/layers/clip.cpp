// Clip (Caffe "Clip"): y = min(max(x, min), max); the gradient is zero where x
// lies outside [min, max]. In place, a copy of x is kept: y alone cannot tell
// a clipped element from one that sits exactly on a bound.
#include "core/pointwise_kernel.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "core/neuron_layer.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

const PointwiseKernel kClipForward("clip_forward",
                                   {In("x"), Out("y"), Scalar("min_value"), Scalar("max_value")},
                                   "y = fmin(fmax(x, min_value), max_value);");
// As Caffe: the gradient passes where min <= x <= max (bounds included).
const PointwiseKernel kClipBackward("clip_backward",
                                    {In("x"), In("dy"), Out("dx"), Scalar("min_value"),
                                     Scalar("max_value")},
                                    "dx = x >= min_value && x <= max_value ? dy : (real)0.f;");
}  // namespace

class ClipLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "Clip"; }
  // Computes in float, reading and writing any storage type.
  bool SupportsStorage(StorageType) const override { return true; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    DLC_REQUIRE(param_.has_clip_param(), Where() << "needs clip_param { min: .. max: .. }");
    const caffe::ClipParameter& p = param_.clip_param();
    DLC_REQUIRE(p.min() <= p.max(), Where() << "clip_param.min (" << p.min()
                                            << ") must not exceed clip_param.max ("
                                            << p.max() << ")");
    min_ = p.min();
    max_ = p.max();
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    KeepBottomIfInPlace(bottom, top);
    kClipForward.Launch(*ctx_, bottom[0]->count(), {Data(*bottom[0]), Data(*top[0])}, {min_, max_},
                        {}, KernelShapeOf(choices_));
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    kClipBackward.Launch(*ctx_, bottom[0]->count(),
                         {BottomForBackward(bottom, top), Diff(*top[0]), Diff(*bottom[0])},
                         {min_, max_}, {}, KernelShapeOf(choices_));
  }

 protected:
  bool BackwardReadsBottom() const override { return true; }

 private:
  float min_ = 0.f, max_ = 0.f;
};

REGISTER_LAYER_CLASS(Clip);

}  // namespace dlcaffe
