// BatchNorm (Caffe "BatchNorm"): y = (x - mean) / sqrt(var + eps) per channel
// (axis 1) over the batch and spatial positions. Caffe's three blobs hold the
// running statistics, not learned parameters: [0] the mean sum, [1] the
// variance sum, [2] the scale factor (1 value); the statistics are the sums
// divided by the factor. use_global_stats (default: true in the TEST phase)
// uses the stored statistics; otherwise the batch's are used and folded into
// the sums with moving_average_fraction and the unbiased-variance correction
// m/(m-1). Everything stays on the device (the kernels read the factor).
// As in Caffe, the blobs get lr_mult 0 when the net gives no param spec.
// Works in place. With batch statistics it can absorb the Scale in place
// after it (Layer::CanAbsorbScale; the Net decides): it then writes
// gamma * x_norm + beta and computes that Scale's parameter gradients from
// the sums its own backward needs anyway, and may clamp at 0 (a fused ReLU).
#include "core/reduce_kernel.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "layers/channel_sums.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

// Batch statistics in one launch: per channel, the sums of d = x - shift and
// d^2 over m = num * spatial values, shift = the channel's first value x[c *
// spatial] (shifted data: the variance without the cancellation of sum(x^2) -
// sum(x)^2); then mean = shift + sum(d) / m, biased variance = sum(d^2) / m -
// (sum(d) / m)^2, and the running sums become
//   mean_sum = mean + f * mean_sum, var_sum = m/(m-1) * var + f * var_sum,
//   factor = f * factor + 1 (once, by channel 0),
// with f = moving_average_fraction.
const ChannelReduceKernel kBatchStatistics(
    "batch_norm_statistics",
    {In("x"), Channel("shift"), ChannelOut("mean"), ChannelOut("stdev"), ChannelOut("mean_sum"),
     ChannelOut("var_sum"), ChannelOut("factor"), IntScalar("m"), Scalar("fraction"),
     Scalar("eps")},
    {Sum("sum_d", "x - shift"), Sum("sum_dd", "(x - shift) * (x - shift)")},
    "const float shifted_mean = sum_d / m;\n"
    "const float mu = shift + shifted_mean;\n"
    "const float var = fmax(sum_dd / m - shifted_mean * shifted_mean, 0.f);\n"
    "mean = mu;\n"
    "stdev = sqrt(var + eps);\n"
    "const float correction = m > 1 ? (float)m / (m - 1) : 1.f;\n"
    "mean_sum = mu + fraction * mean_sum;\n"
    "var_sum = correction * var + fraction * var_sum;\n"
    "if (channel == 0) factor = factor * fraction + 1.f;");

// Backward with batch statistics, in one launch: per channel, the sums of dy
// and dy * x_norm that batch_norm_backward_from_sums reads (`sums`: [sum(dy);
// sum(dy * x_norm)]), and an absorbed Scale's parameter gradients from the
// same sums (its factor's += sum(dy * x_norm), its bias's += sum(dy); each
// only when its flag is set).
const ChannelReduceKernel kGradientSums(
    "batch_norm_gradient_sums",
    {In("dy"), In("x_norm"), ChannelOut("sum_dy"), ChannelOut("sum_dy_x_norm"),
     ChannelOut("gamma_diff"), ChannelOut("beta_diff"), IntScalar("has_gamma_diff"),
     IntScalar("has_beta_diff")},
    {Sum("s", "dy"), Sum("s_x_norm", "dy * x_norm")},
    "sum_dy = s;\n"
    "sum_dy_x_norm = s_x_norm;\n"
    "if (has_gamma_diff) gamma_diff += s_x_norm;\n"
    "if (has_beta_diff) beta_diff += s;");
}  // namespace

class BatchNormLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "BatchNorm"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool CanFuseRelu() const override { return true; }
  bool CanAbsorbScale() const override { return !use_global_stats_; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::BatchNormParameter& p = param_.batch_norm_param();
    fraction_ = p.moving_average_fraction();
    use_global_stats_ =
        p.has_use_global_stats() ? p.use_global_stats() : param_.phase() == caffe::TEST;
    eps_ = p.eps();
    channels_ = ChannelsOf(*bottom[0]);
    if (blobs_.empty()) {
      for (const std::vector<int>& shape :
           {std::vector<int>{channels_}, std::vector<int>{channels_}, std::vector<int>{1}}) {
        blobs_.push_back(std::make_shared<Blob>(*ctx_, shape));
        blobs_.back()->SetData(0.f);
      }
    }
    // The statistics must never be touched by a solver (Caffe's rule).
    for (int i = 0; i < static_cast<int>(blobs_.size()); ++i) {
      if (param_.param_size() == i) {
        param_.add_param()->set_lr_mult(0.f);
      } else {
        DLC_REQUIRE(param_.param(i).lr_mult() == 0.f,
                    Where() << "param " << i << " has lr_mult " << param_.param(i).lr_mult()
                            << ": the batch normalization statistics cannot be learned "
                               "parameters (use lr_mult 0 or leave the param out)");
      }
      set_param_propagate_down(i, false);
    }
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    DLC_REQUIRE(bottom[0]->num_axes() >= 1 && ChannelsOf(*bottom[0]) == channels_,
                Where() << "the input " << bottom[0]->shape_string() << " must have "
                        << channels_ << " channels (axis 1), as at setup");
    top[0]->ReshapeLike(*bottom[0]);
    x_norm_.ReshapeLike(*bottom[0]);
    mean_.Reshape(std::vector<int>{channels_});
    stdev_.Reshape(std::vector<int>{channels_});
    sums_.Reshape(std::vector<int>{2, channels_});
    num_ = bottom[0]->shape(0);
    spatial_ = num_ * channels_ > 0 ? bottom[0]->count() / (num_ * channels_) : 0;
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int count = bottom[0]->count();
    if (count == 0) return;
    const bool runs = UseChannelRuns(*ctx_);
    const char* shape = ChannelShapeOption(runs);
    if (use_global_stats_) {
      ctx_->Launch1D(ctx_->Kernel("batch_norm.cl", shape, "batch_norm_global_stats"), channels_,
                     channels_, eps_, blobs_[0]->data(), blobs_[1]->data(), blobs_[2]->data(),
                     mean_.data(), stdev_.data());
    } else {
      kBatchStatistics.Launch(*ctx_, workspace_, num_, channels_, spatial_,
                              {bottom[0]->data(), {bottom[0]->data(), 0, spatial_},
                               mean_.data(), stdev_.data(), blobs_[0]->data(),
                               blobs_[1]->data(), {blobs_[2]->data(), 0, 0}},
                              {num_ * spatial_, fraction_, eps_}, ReduceShape(runs));
    }
    LaunchElementwise(*ctx_, runs, ctx_->Kernel("batch_norm.cl", shape, "batch_norm_normalize"),
                      count, channels_, spatial_, bottom[0]->data(), mean_.data(),
                      stdev_.data(), top[0]->data(), x_norm_.data(), ScaleParam(0, false),
                      ScaleParam(1, false), fuse_relu_ ? 1 : 0);
  }

  // The statistics get no gradient; only the input does (and an absorbed
  // Scale's parameters).
  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    const int count = bottom[0]->count();
    if ((!propagate_down[0] && !absorbed_scale_) || count == 0) return;
    const bool runs = UseChannelRuns(*ctx_);
    const char* shape = ChannelShapeOption(runs);
    if (use_global_stats_) {
      LaunchElementwise(*ctx_, runs,
                        ctx_->Kernel("batch_norm.cl", shape, "batch_norm_backward_global"),
                        count, channels_, spatial_, top[0]->diff(), stdev_.data(),
                        bottom[0]->diff());
    } else {
      const cl_mem gamma_diff = ScaleParam(0, true), beta_diff = ScaleParam(1, true);
      kGradientSums.Launch(*ctx_, workspace_, num_, channels_, spatial_,
                           {top[0]->diff(), x_norm_.data(), sums_.data(),
                            {sums_.data(), channels_}, gamma_diff, beta_diff},
                           {gamma_diff != nullptr, beta_diff != nullptr}, ReduceShape(runs));
      if (propagate_down[0])
        LaunchElementwise(*ctx_, runs,
                          ctx_->Kernel("batch_norm.cl", shape, "batch_norm_backward_from_sums"),
                          count, channels_, spatial_, num_ * spatial_, x_norm_.data(),
                          top[0]->diff(), sums_.data(), stdev_.data(), ScaleParam(0, false),
                          bottom[0]->diff());
    }
  }

 private:
  static int ChannelsOf(const Blob& b) { return b.num_axes() == 1 ? 1 : b.shape(1); }
  // The reductions take the shape of the elementwise passes.
  static KernelShape ReduceShape(bool runs) {
    return runs ? KernelShape::kCpu : KernelShape::kGpu;
  }

  // The absorbed Scale's factor (0) or bias (1), data or diff; null without
  // an absorbed Scale, without that blob, or (diff) when it takes no gradient.
  cl_mem ScaleParam(int index, bool diff) const {
    if (!absorbed_scale_ || index >= static_cast<int>(absorbed_scale_->blobs().size()))
      return nullptr;
    if (diff && !absorbed_scale_->param_propagate_down(index)) return nullptr;
    const Blob& blob = *absorbed_scale_->blobs()[index];
    return diff ? blob.diff() : blob.data();
  }

  float fraction_ = 0.999f, eps_ = 1e-5f;
  bool use_global_stats_ = false;
  int channels_ = 0, num_ = 0, spatial_ = 0;
  Blob mean_{*ctx_}, stdev_{*ctx_};  // the statistics this pass uses
  Blob sums_{*ctx_};  // backward's per-channel sums: [sum(dy); sum(dy * x_norm)]
  ReduceWorkspace workspace_;  // the reductions' scratch
  Blob x_norm_{*ctx_};  // the normalized input, kept for backward (the top may change)
};

REGISTER_LAYER_CLASS(BatchNorm);

}  // namespace dlcaffe
