// Scale (Caffe "Scale"): y = x * s (+ b with bias_term), where s covers
// num_axes axes of x starting at `axis` and is broadcast over the others. s is
// bottom[1] or, with one bottom, a learned blob shaped like those axes
// (num_axes -1: all remaining axes, 0: a scalar), filled with `filler`
// (default constant 1). The bias is an internal Bias layer, as in Caffe, whose
// blob follows the scale's: blobs are [scale, bias], or [bias] with bottom[1].
// In place, the input is kept in an internal blob for the scale's gradient.
// x, y and that copy may be stored in 16 bits (mixed precision); the scale,
// learned or bottom[1], the bias and their gradients stay float32.
#include "core/pointwise_kernel.hpp"
#include "dlcaffe/filler.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "core/broadcast_shape.hpp"
#include "core/channel_sums.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

// y = x * s (+ b, the bias term's blob, when has_bias), clamped at 0 when
// relu (a fused ReLU); x is outer x scale_dim x inner, s and b have
// scale_dim values. fma(x, s, 0) rounds as x * s does.
#define DLC_SCALE_BODY                                  \
  "const real v = fma(x, s, has_bias ? b : (real)0.f);\n" \
  "y = relu ? fmax(v, 0.f) : v;"
const PointwiseKernel kScaleForward("scale_forward",
                                    {In("x"), Channel("s"), Channel("b"), Out("y"),
                                     IntScalar("has_bias"), IntScalar("relu")},
                                    DLC_SCALE_BODY);
// The same, keeping the input (backward's, when y aliases x) in x_copy.
const PointwiseKernel kScaleForwardKeepingInput("scale_forward_keeping_input",
                                                {In("x"), Channel("s"), Channel("b"), Out("y"),
                                                 Out("x_copy"), IntScalar("has_bias"),
                                                 IntScalar("relu")},
                                                "x_copy = x;\n" DLC_SCALE_BODY);
#undef DLC_SCALE_BODY
// dx = dy * s; dx may alias dy.
const PointwiseKernel kScaleBottomBackward("scale_bottom_backward",
                                           {In("dy"), Channel("s"), Out("dx")}, "dx = dy * s;");
}  // namespace

class ScaleLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Scale"; }
  // Factors (and a bias) of its own, one per channel of `top` (axis 1,
  // num_axes 1, one bottom).
  EpilogueRole RoleInEpilogue(const Blob& top) const override {
    if (param_.bottom_size() != 1 || blobs_.empty() || top.num_axes() < 2)
      return EpilogueRole::kNone;
    const Blob& gamma = *blobs_[0];
    const caffe::ScaleParameter& p = param_.scale_param();
    return gamma.num_axes() == 1 && gamma.shape(0) == top.shape(1) && p.num_axes() == 1 &&
                   top.CanonicalAxisIndex(p.axis()) == 1
               ? EpilogueRole::kChannelScale
               : EpilogueRole::kNone;
  }
  bool SupportsStorage(StorageType) const override { return true; }
  // A second bottom is read as float and its gradient written by the float
  // sums, as a learned scale's.
  bool KeepsBottomInFloat(int index) const override { return index == 1; }
  int MinBottomBlobs() const override { return 1; }
  int MaxBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  unsigned EpilogueSupport() const override { return LayerEpilogue::kRelu; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::ScaleParameter& p = param_.scale_param();
    if (bottom.size() == 1 && blobs_.empty()) {
      blobs_.push_back(std::make_shared<Blob>(
          *ctx_, BroadcastShape(*bottom[0], p.axis(), p.num_axes(), "scale", Where())));
      caffe::FillerParameter filler = p.filler();
      if (!p.has_filler()) {  // identity by default
        filler.set_type("constant");
        filler.set_value(1.f);
      }
      FillBlob(filler, blobs_[0].get());
    }
    if (p.bias_term()) {
      caffe::LayerParameter bias_param = param_;
      bias_param.set_type("Bias");
      bias_param.set_name(param_.name() + "/bias");
      bias_param.clear_loss_weight();
      bias_param.clear_param();
      caffe::BiasParameter* b = bias_param.mutable_bias_param();
      b->set_axis(p.axis());
      b->set_num_axes(bottom.size() > 1 ? bottom[1]->num_axes() : p.num_axes());
      *b->mutable_filler() = p.bias_filler();
      bias_layer_ = LayerRegistry::Create(bias_param, *ctx_);
      bias_layer_->set_choices(choices_);  // no plan decides for it: it runs as this layer
      bias_layer_->SetUp({bottom[0]}, top);
      bias_param_id_ = static_cast<int>(blobs_.size());
      blobs_.push_back(bias_layer_->blobs()[0]);
    }
    for (size_t i = 0; i < blobs_.size(); ++i) set_param_propagate_down(i, true);
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const Blob& x = *bottom[0];
    const Blob& scale = bottom.size() > 1 ? *bottom[1] : *blobs_[0];
    // A scalar is the same at any axis; 0 makes outer 1.
    const int axis =
        scale.num_axes() == 0 ? 0 : x.CanonicalAxisIndex(param_.scale_param().axis());
    DLC_REQUIRE(x.num_axes() >= axis + scale.num_axes(),
                Where() << "the scale " << scale.shape_string() << " from axis " << axis
                        << " extends past the input " << x.shape_string());
    for (int i = 0; i < scale.num_axes(); ++i)
      DLC_REQUIRE(x.shape(axis + i) == scale.shape(i),
                  Where() << "the scale " << scale.shape_string() << " does not fit the input "
                          << x.shape_string() << " from axis " << axis << ": dimension "
                          << axis + i << " is " << x.shape(axis + i) << ", the scale has "
                          << scale.shape(i));
    DLC_REQUIRE(scale.storage_type() == StorageType::kFloat32,
                Where() << "bottom[1] (the scale) must be stored in float32, got "
                        << StorageTypeName(scale.storage_type()));
    outer_ = x.count(0, axis);
    scale_dim_ = scale.count();
    inner_ = x.count(axis + scale.num_axes());
    // In place, the input's copy is made by Forward: a Scale that a BatchNorm
    // absorbs (passes/plan_absorb_scale.cpp) never runs, and keeps none.
    if (bottom[0] != top[0]) top[0]->ReshapeLike(x);
    if (bias_layer_) {
      bias_layer_->set_choices(choices_);  // this layer's may have changed (Net::set_options)
      bias_layer_->Reshape({top[0]}, {top[0]});
    }
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int count = bottom[0]->count();
    const Blob& scale = bottom.size() > 1 ? *bottom[1] : *blobs_[0];
    // The bias term's blob has the scale's shape: one pass adds it. In place,
    // the same pass keeps the input for the scale's gradient.
    const cl_mem bias = bias_layer_ ? blobs_[bias_param_id_]->data() : scale.data();
    const std::vector<ScalarArg> flags = {bias_layer_ != nullptr, epilogue_.relu};
    const ChannelAxis axis = {scale_dim_, inner_};
    if (bottom[0] == top[0]) {
      if (input_copy_.storage_type() != bottom[0]->storage_type())
        input_copy_.set_storage_type(bottom[0]->storage_type());
      input_copy_.set_diff_on_demand();  // data only: as large as the input
      input_copy_.ReshapeLike(*bottom[0]);
      kScaleForwardKeepingInput.Launch(
          *ctx_, count, {Data(*bottom[0]), scale.data(), bias, Data(*top[0]), Data(input_copy_)},
          flags, axis, KernelShapeOf(choices_));
    } else {
      kScaleForward.Launch(*ctx_, count, {Data(*bottom[0]), scale.data(), bias, Data(*top[0])},
                           flags, axis, KernelShapeOf(choices_));
    }
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    // Every gradient reads top's diff before bottom's (maybe the same) is written.
    const bool bias_grad = bias_layer_ && param_propagate_down(bias_param_id_);
    const bool learned = bottom.size() == 1;
    Blob& scale = learned ? *blobs_[0] : *bottom[1];
    if (scale_dim_ > 0 && (learned ? param_propagate_down(0) : bool(propagate_down[1]))) {
      // One reduction gives both: sum(dy) is the bias's gradient, sum(dy * x)
      // the scale's. A learned scale accumulates its gradient; bottom[1]'s is
      // written.
      const BufferArg x = Data(bottom[0] == top[0] ? input_copy_ : *bottom[0]);
      ChannelSumTarget bias_target;
      if (bias_grad) bias_target = {blobs_[bias_param_id_]->diff(), 0, true};
      ChannelSums(*ctx_, KernelShapeOf(choices_), ChannelSumKind::kProducts, outer_, scale_dim_,
                  inner_, Diff(*top[0]), x, bias_target, {scale.diff(), 0, learned}, &workspace_);
    } else if (bias_grad) {
      bias_layer_->Backward({top[0]}, {false}, {top[0]});
    }
    if (propagate_down[0]) {
      kScaleBottomBackward.Launch(*ctx_, bottom[0]->count(),
                                  {Diff(*top[0]), scale.data(), Diff(*bottom[0])}, {},
                                  {scale_dim_, inner_}, KernelShapeOf(choices_));
    }
  }

 private:
  int outer_ = 0, scale_dim_ = 0, inner_ = 0;
  std::unique_ptr<Layer> bias_layer_;
  int bias_param_id_ = -1;
  Blob input_copy_{*ctx_};  // the input, when working in place
  ReduceWorkspace workspace_;  // the gradient sums' scratch
};

REGISTER_LAYER_CLASS(Scale);
REGISTER_LAYER_TRAITS(Scale, LayerTraits().RunsInPlace().BackwardReadsNoTop());

}  // namespace dlcaffe
