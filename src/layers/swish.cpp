// Swish (Caffe "Swish"): y = x * sigmoid(beta * x). The sigmoid is kept in an
// internal blob for Backward, whose formula needs only y and it, so the layer
// works in place.
#include "core/pointwise_kernel.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "core/neuron_layer.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

// Keeps s = sigmoid(beta * x) for the backward pass, as Caffe does.
const PointwiseKernel kSwishForward("swish_forward",
                                    {In("x"), Out("s"), Out("y"), Scalar("beta")},
                                    "s = 0.5f * tanh(0.5f * beta * x) + 0.5f;\n"
                                    "y = x * s;");
// dy/dx = s + beta * x * s * (1 - s) = beta * y + s * (1 - beta * y): needs
// only y and s, so in-place use works.
const PointwiseKernel kSwishBackward("swish_backward",
                                     {In("y"), In("s"), In("dy"), Out("dx"), Scalar("beta")},
                                     "const real by = beta * y;\n"
                                     "dx = dy * (by + s * (1.f - by));");
}  // namespace

class SwishLayer : public NeuronLayer {
 public:
  SwishLayer(const caffe::LayerParameter& param, Context& ctx)
      : NeuronLayer(param, ctx), sigmoid_(ctx) {}
  const char* type() const override { return "Swish"; }
  // Computes in float, reading and writing any storage type.
  bool SupportsStorage(StorageType) const override { return true; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    NeuronLayer::Reshape(bottom, top);
    sigmoid_.set_diff_on_demand();  // data only: as large as the input
    sigmoid_.ReshapeLike(*bottom[0]);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    kSwishForward.Launch(*ctx_, bottom[0]->count(),
                         {Data(*bottom[0]), sigmoid_.data(), Data(*top[0])}, {beta()}, {},
                         KernelShapeOf(choices_));
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    kSwishBackward.Launch(*ctx_, bottom[0]->count(),
                          {Data(*top[0]), sigmoid_.data(), Diff(*top[0]), Diff(*bottom[0])},
                          {beta()}, {}, KernelShapeOf(choices_));
  }

 private:
  float beta() const { return param_.swish_param().beta(); }

  Blob sigmoid_;  // sigmoid(beta * x) of the last Forward
};

REGISTER_LAYER_CLASS(Swish);

}  // namespace dlcaffe
