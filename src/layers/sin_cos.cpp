// Sin and Cos (dlcaffe "Sin", "Cos"): y = sin(x), y = cos(x), element by
// element. What an imported language model computes its rotary tables with
// when their angles come from run-time positions (a model imported for
// decoding: src/import/onnx_decode_positions.cpp). The gradients need x, so
// in-place use keeps a copy of it.
#include "core/neuron_layer.hpp"
#include "core/pointwise_kernel.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

const PointwiseKernel kSinForward("sin_forward", {In("x"), Out("y")}, "y = sin(x);");
const PointwiseKernel kSinBackward("sin_backward", {In("x"), In("dy"), Out("dx")},
                                   "dx = dy * cos(x);");
const PointwiseKernel kCosForward("cos_forward", {In("x"), Out("y")}, "y = cos(x);");
const PointwiseKernel kCosBackward("cos_backward", {In("x"), In("dy"), Out("dx")},
                                   "dx = -dy * sin(x);");

// One of the two, by its kernels.
class SinusoidLayer : public NeuronLayer {
 public:
  SinusoidLayer(const caffe::LayerParameter& param, Context& ctx, const char* type,
                const PointwiseKernel& forward, const PointwiseKernel& backward)
      : NeuronLayer(param, ctx), type_(type), forward_(forward), backward_(backward) {}
  const char* type() const override { return type_; }
  // Computes in float, reading and writing any storage type.
  bool SupportsStorage(StorageType) const override { return true; }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    KeepBottomIfInPlace(bottom, top);
    forward_.Launch(*ctx_, bottom[0]->count(), {Data(*bottom[0]), Data(*top[0])}, {}, {},
                    KernelShapeOf(choices_));
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    backward_.Launch(*ctx_, bottom[0]->count(),
                     {BottomForBackward(bottom, top), Diff(*top[0]), Diff(*bottom[0])}, {}, {},
                     KernelShapeOf(choices_));
  }

 protected:
  bool BackwardReadsBottom() const override { return true; }

 private:
  const char* type_;
  const PointwiseKernel& forward_;
  const PointwiseKernel& backward_;
};

class SinLayer : public SinusoidLayer {
 public:
  SinLayer(const caffe::LayerParameter& param, Context& ctx)
      : SinusoidLayer(param, ctx, "Sin", kSinForward, kSinBackward) {}
};

class CosLayer : public SinusoidLayer {
 public:
  CosLayer(const caffe::LayerParameter& param, Context& ctx)
      : SinusoidLayer(param, ctx, "Cos", kCosForward, kCosBackward) {}
};

}  // namespace

REGISTER_LAYER_CLASS(Sin);
REGISTER_LAYER_CLASS(Cos);

}  // namespace dlcaffe
