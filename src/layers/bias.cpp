// Bias (Caffe "Bias"): y = x + b, where b covers num_axes axes of x starting
// at `axis` and is broadcast over the others. b is bottom[1] or, with one
// bottom, a learned blob shaped like those axes (num_axes -1: all remaining
// axes, 0: a scalar), filled with `filler` (default constant 0). Works in
// place. With a learned bias, x and y may be stored in 16 bits (mixed
// precision; the bias and its gradient are float).
#include "core/blob_copy.hpp"
#include "core/pointwise_kernel.hpp"
#include "dlcaffe/filler.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "core/channel_sums.hpp"
#include "core/broadcast_shape.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

// x is outer x bias_dim x inner, b has bias_dim values.
const PointwiseKernel kBiasForward("bias_forward", {In("x"), Channel("b"), Out("y")},
                                   "y = x + b;");
}  // namespace

class BiasLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Bias"; }
  // A second bottom's gradient is written by the float sums.
  bool SupportsStorage(StorageType) const override { return param_.bottom_size() < 2; }
  int MinBottomBlobs() const override { return 1; }
  int MaxBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::BiasParameter& p = param_.bias_param();
    if (bottom.size() == 1 && blobs_.empty()) {
      blobs_.push_back(std::make_shared<Blob>(
          *ctx_, BroadcastShape(*bottom[0], p.axis(), p.num_axes(), "bias", Where())));
      FillBlob(p.filler(), blobs_[0].get());
    }
    for (size_t i = 0; i < blobs_.size(); ++i) set_param_propagate_down(i, true);
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const Blob& x = *bottom[0];
    const Blob& bias = bottom.size() > 1 ? *bottom[1] : *blobs_[0];
    // A scalar is the same at any axis; 0 makes outer 1.
    const int axis = bias.num_axes() == 0 ? 0 : x.CanonicalAxisIndex(param_.bias_param().axis());
    DLC_REQUIRE(x.num_axes() >= axis + bias.num_axes(),
                Where() << "the bias " << bias.shape_string() << " from axis " << axis
                        << " extends past the input " << x.shape_string());
    for (int i = 0; i < bias.num_axes(); ++i)
      DLC_REQUIRE(x.shape(axis + i) == bias.shape(i),
                  Where() << "the bias " << bias.shape_string() << " does not fit the input "
                          << x.shape_string() << " from axis " << axis << ": dimension "
                          << axis + i << " is " << x.shape(axis + i) << ", the bias has "
                          << bias.shape(i));
    outer_ = x.count(0, axis);
    bias_dim_ = bias.count();
    inner_ = x.count(axis + bias.num_axes());
    if (bottom[0] != top[0]) top[0]->ReshapeLike(x);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int count = bottom[0]->count();
    const Blob& bias = bottom.size() > 1 ? *bottom[1] : *blobs_[0];
    kBiasForward.Launch(*ctx_, count, {Data(*bottom[0]), bias.data(), Data(*top[0])}, {},
                        {bias_dim_, inner_}, KernelShapeOf(choices_));
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (propagate_down[0]) CopyBlobValues(*ctx_, *bottom[0], top[0]->diff(), bottom[0]->diff());
    const bool learned = bottom.size() == 1;
    if (bias_dim_ == 0 || !(learned ? param_propagate_down(0) : bool(propagate_down[1]))) return;
    // A learned bias accumulates its gradient; bottom[1]'s is written.
    Blob& bias = learned ? *blobs_[0] : *bottom[1];
    ChannelSums(*ctx_, KernelShapeOf(choices_), ChannelSumKind::kProducts, outer_, bias_dim_,
                inner_, Diff(*top[0]), nullptr, {bias.diff(), 0, learned}, {}, &workspace_);
  }

 private:
  int outer_ = 0, bias_dim_ = 0, inner_ = 0;
  ReduceWorkspace workspace_;  // the gradient sums' scratch
};

REGISTER_LAYER_CLASS(Bias);
REGISTER_LAYER_TRAITS(Bias, LayerTraits().BackwardReadsNoTop());

}  // namespace dlcaffe
