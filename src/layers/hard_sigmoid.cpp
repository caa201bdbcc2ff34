// HardSigmoid (dlcaffe "HardSigmoid", hard_sigmoid_param): y = max(0, min(1,
// alpha * x + beta)), as ONNX HardSigmoid (alpha 0.2, beta 0.5 by default;
// torch.nn.Hardsigmoid is alpha 1/6, beta 1/2).
//
// Gradient: alpha * dy strictly inside the linear part (0 < alpha x + beta
// < 1), 0 elsewhere, the kinks included: PyTorch's choice (hardsigmoid_backward
// passes the gradient for -3 < x < 3 only). Since the linear part is exactly
// where 0 < y < 1, the gradient follows from y and the layer works in place.
#include <cmath>

#include "core/neuron_layer.hpp"
#include "core/pointwise_kernel.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

const PointwiseKernel kHardSigmoidForward("hard_sigmoid_forward",
                                          {In("x"), Out("y"), Scalar("alpha"), Scalar("beta")},
                                          "y = fmin(fmax(alpha * x + beta, 0.f), 1.f);");
const PointwiseKernel kHardSigmoidBackward("hard_sigmoid_backward",
                                           {In("y"), In("dy"), Out("dx"), Scalar("alpha")},
                                           "dx = y > 0.f && y < 1.f ? alpha * dy : (real)0.f;");
}  // namespace

class HardSigmoidLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "HardSigmoid"; }
  // Computes in float, reading and writing any storage type.
  bool SupportsStorage(StorageType) const override { return true; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::HardSigmoidParameter& p = param_.hard_sigmoid_param();
    DLC_REQUIRE(std::isfinite(p.alpha()) && std::isfinite(p.beta()),
                Where() << "hard_sigmoid_param alpha (" << p.alpha() << ") and beta ("
                        << p.beta() << ") must be finite");
    alpha_ = p.alpha();
    beta_ = p.beta();
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    kHardSigmoidForward.Launch(*ctx_, bottom[0]->count(), {Data(*bottom[0]), Data(*top[0])},
                               {alpha_, beta_}, {}, KernelShapeOf(choices_));
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    kHardSigmoidBackward.Launch(*ctx_, bottom[0]->count(),
                                {Data(*top[0]), Diff(*top[0]), Diff(*bottom[0])}, {alpha_}, {},
                                KernelShapeOf(choices_));
  }

 private:
  float alpha_ = 0.2f, beta_ = 0.5f;
};

REGISTER_LAYER_CLASS(HardSigmoid);

}  // namespace dlcaffe
