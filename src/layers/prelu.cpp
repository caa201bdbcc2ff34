// PReLU (Caffe "PReLU"): y = x > 0 ? x : slope * x with a learnable slope per
// channel (axis 1), or one shared by all channels (channel_shared). The slope
// blob has Caffe's layout: shape {channels}, or a scalar (shape {}) when
// shared; its filler defaults to constant 0.25. In place, Forward keeps a
// copy of x for Backward, as Caffe's bottom_memory_. x, y, their gradients
// and that copy may be stored in 16 bits (mixed precision); the slopes and
// their gradient sums are float.
#include "core/pointwise_kernel.hpp"
#include "core/reduce_kernel.hpp"
#include "dlcaffe/filler.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "core/neuron_layer.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

// The bottom is num x channels x dim; slope is per channel (a stride 0
// binding shares one among all channels).
const PointwiseKernel kPReLUForward("prelu_forward", {In("x"), Channel("slope"), Out("y")},
                                    "y = x > 0.f ? x : slope * x;");
// dx = dy for x > 0, else slope * dy (x = 0 counts as negative, as in Caffe).
const PointwiseKernel kPReLUBackward("prelu_backward",
                                     {In("x"), Channel("slope"), In("dy"), Out("dx")},
                                     "dx = x > 0.f ? dy : slope * dy;");
// The slope's gradient, ADDED: per channel, the sum of dy * x over x <= 0.
const ChannelReduceKernel kPReLUSlopeGradient("prelu_slope_gradient",
                                              {In("x"), In("dy"), ChannelOut("slope_diff")},
                                              {Sum("sum", "x <= 0.f ? dy * x : (real)0.f")},
                                              "slope_diff += sum;");
}  // namespace

class PReLULayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "PReLU"; }
  bool SupportsStorage(StorageType) const override { return true; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    DLC_REQUIRE(bottom[0]->num_axes() >= 2,
                Where() << "needs a bottom with at least 2 axes (num, channels, ...), got "
                        << bottom[0]->shape_string());
    const caffe::PReLUParameter& p = param_.prelu_param();
    channel_shared_ = p.channel_shared();
    const int channels = bottom[0]->shape(1);
    if (blobs_.empty()) {  // else shared or loaded already
      blobs_.push_back(std::make_shared<Blob>(
          *ctx_, channel_shared_ ? std::vector<int>{} : std::vector<int>{channels}));
      caffe::FillerParameter filler;
      if (p.has_filler()) {
        filler = p.filler();
      } else {
        filler.set_type("constant");
        filler.set_value(0.25f);
      }
      FillBlob(filler, blobs_[0].get());
    }
    set_param_propagate_down(0, true);
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    DLC_REQUIRE(bottom[0]->num_axes() >= 2,
                Where() << "needs a bottom with at least 2 axes (num, channels, ...), got "
                        << bottom[0]->shape_string());
    const int slopes = channel_shared_ ? 1 : bottom[0]->shape(1);
    DLC_REQUIRE(blobs_[0]->count() == slopes,
                Where() << "has " << blobs_[0]->count() << " slope(s) for a bottom of shape "
                        << bottom[0]->shape_string() << " (needs " << slopes
                        << (channel_shared_ ? ", channel_shared" : ", one per channel")
                        << ")");
    NeuronLayer::Reshape(bottom, top);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    KeepBottomIfInPlace(bottom, top);
    kPReLUForward.Launch(*ctx_, bottom[0]->count(), {Data(*bottom[0]), slope(), Data(*top[0])}, {},
                         {channels(bottom), dim(bottom)}, KernelShapeOf(choices_));
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    const pointwise::BufferArg x = BottomForBackward(bottom, top);
    // The slope gradient first: in place, the bottom diff overwrites dy.
    if (param_propagate_down(0)) {
      // Shared: the whole blob is one channel.
      const int outer = channel_shared_ ? 1 : bottom[0]->shape(0);
      const int slopes = channel_shared_ ? 1 : channels(bottom);
      const int inner = channel_shared_ ? bottom[0]->count() : dim(bottom);
      kPReLUSlopeGradient.Launch(*ctx_, slope_workspace_, outer, slopes, inner,
                                 {x, Diff(*top[0]), blobs_[0]->diff()}, {},
                                 KernelShapeOf(choices_));
    }
    if (propagate_down[0]) {
      kPReLUBackward.Launch(*ctx_, bottom[0]->count(),
                            {x, slope(), Diff(*top[0]), Diff(*bottom[0])}, {},
                            {channels(bottom), dim(bottom)}, KernelShapeOf(choices_));
    }
  }

 protected:
  bool BackwardReadsBottom() const override { return true; }

 private:
  static int channels(const std::vector<Blob*>& bottom) { return bottom[0]->shape(1); }
  static int dim(const std::vector<Blob*>& bottom) { return bottom[0]->count(2); }
  // The slopes, one per channel, or one for all when shared.
  BufferArg slope() const { return {blobs_[0]->data(), 0, channel_shared_ ? 0 : 1}; }

  bool channel_shared_ = false;
  ReduceWorkspace slope_workspace_;
};

REGISTER_LAYER_CLASS(PReLU);

}  // namespace dlcaffe
