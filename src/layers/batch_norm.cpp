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
// after it (LayerEpilogue::scale; the execution plan decides): it then writes
// gamma * x_norm + beta and computes that Scale's parameter gradients from
// the sums its own backward needs anyway, and may clamp at 0 (a fused ReLU),
// in place also masking the diff for that ReLU in backward.
// The bottom, the top and the normalized copy kept for backward may be
// stored in 16 bits (mixed precision); statistics and sums are float.
#include <limits>

#include "core/pointwise_kernel.hpp"
#include "core/reduce_kernel.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "core/channel_sums.hpp"

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

// The top diff that backward reads: dy, or with a fused ReLU's backward
// (LayerEpilogue::relu_diff_mask) dy masked where that ReLU's output was not
// positive, recomputed from x_norm exactly as kNormalize clamped it (and as
// ReLU's backward writes it: 0 * dy).
#define BN_DY "(relu == 0 || fma(gamma, x_norm, beta) > 0.f ? dy : 0.f * dy)"

// Backward with batch statistics, in one launch: per channel, the sums of dy
// and dy * x_norm that batch_norm_backward_from_sums reads (`sums`: [sum(dy);
// sum(dy * x_norm)]), and an absorbed Scale's parameter gradients from the
// same sums (its factor's += sum(dy * x_norm), its bias's += sum(dy); each
// only when its flag is set).
const ChannelReduceKernel kGradientSums(
    "batch_norm_gradient_sums",
    {In("dy"), In("x_norm"), Channel("gamma"), Channel("beta"), ChannelOut("sum_dy"),
     ChannelOut("sum_dy_x_norm"), ChannelOut("gamma_diff"), ChannelOut("beta_diff"),
     IntScalar("has_gamma_diff"), IntScalar("has_beta_diff"), IntScalar("relu")},
    {Sum("s", BN_DY), Sum("s_x_norm", BN_DY " * x_norm")},
    "sum_dy = s;\n"
    "sum_dy_x_norm = s_x_norm;\n"
    "if (has_gamma_diff) gamma_diff += s_x_norm;\n"
    "if (has_beta_diff) beta_diff += s;");

// x_norm (the copy backward reads) = (x - mean) / stdev and y = gamma *
// x_norm + beta, clamped below at `floor` (0 for a fused ReLU, else -inf);
// without an absorbed Scale gamma is 1 and beta 0 (one constant for every
// channel). y may alias x.
const PointwiseKernel kNormalize(
    "batch_norm_normalize",
    {In("x"), Channel("mean"), Channel("stdev"), Channel("gamma"), Channel("beta"), Out("y"),
     Out("x_norm"), Scalar("floor")},
    "x_norm = (x - mean) / stdev;\n"
    "y = fmax(fma(gamma, x_norm, beta), floor);");

// Batch statistics: dx = gamma * (dy - mean(dy) - mean(dy * x_norm) * x_norm)
// / stdev, the means from kGradientSums' sums over m values (gamma: an
// absorbed Scale's factor, dy then being the Scale's top diff; else 1). dx
// may alias dy.
const PointwiseKernel kBackwardFromSums(
    "batch_norm_backward_from_sums",
    {In("x_norm"), In("dy"), Channel("sum_dy"), Channel("sum_dy_x_norm"), Channel("stdev"),
     Channel("gamma"), Channel("beta"), Out("dx"), Scalar("m"), Scalar("relu")},
    "dx = (" BN_DY " - sum_dy / m - sum_dy_x_norm / m * x_norm) * (gamma / stdev);");

// Stored statistics are constants: dx = dy / stdev (gamma 1, beta 0).
const PointwiseKernel kBackwardGlobal(
    "batch_norm_backward_global",
    {In("dy"), In("x_norm"), Channel("gamma"), Channel("beta"), Channel("stdev"), Out("dx"),
     Scalar("relu")},
    "dx = " BN_DY " / stdev;");
#undef BN_DY
}  // namespace

class BatchNormLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "BatchNorm"; }
  // Normalising with its stored statistics (use_global_stats, the TEST
  // phase's default), it is a per-channel affine.
  EpilogueRole RoleInEpilogue(const Blob&) const override {
    const caffe::BatchNormParameter& p = param_.batch_norm_param();
    const bool stored = p.has_use_global_stats() ? p.use_global_stats()
                                                 : param_.phase() == caffe::TEST;
    return stored && blobs_.size() == 3 ? EpilogueRole::kStoredStatisticsAffine
                                        : EpilogueRole::kNone;
  }
  bool SupportsStorage(StorageType) const override { return true; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  unsigned EpilogueSupport() const override {
    return LayerEpilogue::kRelu | LayerEpilogue::kReluDiffMask |
           (use_global_stats_ ? 0u : unsigned(LayerEpilogue::kScale));
  }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::BatchNormParameter& p = param_.batch_norm_param();
    fraction_ = p.moving_average_fraction();
    use_global_stats_ =
        p.has_use_global_stats() ? p.use_global_stats() : param_.phase() == caffe::TEST;
    eps_ = p.eps();
    channels_ = ChannelsOf(*bottom[0]);
    identity_.WriteData({1.f, 0.f});
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
    // In the bottom's type: in 16 bits it is as large as an activation.
    if (x_norm_.storage_type() != bottom[0]->storage_type())
      x_norm_.set_storage_type(bottom[0]->storage_type());
    x_norm_.set_diff_on_demand();  // data only: as large as the input
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
    if (use_global_stats_) {
      ctx_->Launch1D(ctx_->Kernel("batch_norm.cl", "", "batch_norm_global_stats"), channels_,
                     channels_, eps_, blobs_[0]->data(), blobs_[1]->data(), blobs_[2]->data(),
                     mean_.data(), stdev_.data());
    } else {
      kBatchStatistics.Launch(*ctx_, workspace_, num_, channels_, spatial_,
                              {Data(*bottom[0]), Shifts(*bottom[0]),
                               mean_.data(), stdev_.data(), blobs_[0]->data(),
                               blobs_[1]->data(), {blobs_[2]->data(), 0, 0}},
                              {num_ * spatial_, fraction_, eps_}, KernelShapeOf(choices_));
    }
    const float floor = epilogue_.relu ? 0.f : -std::numeric_limits<float>::infinity();
    kNormalize.Launch(*ctx_, count,
                      {Data(*bottom[0]), mean_.data(), stdev_.data(), Gamma(), Beta(),
                       Data(*top[0]), Data(x_norm_)},
                      {floor}, {channels_, spatial_}, KernelShapeOf(choices_));
  }

  // The statistics get no gradient; only the input does (and an absorbed
  // Scale's parameters).
  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    const int count = bottom[0]->count();
    if ((!propagate_down[0] && !epilogue_.scale) || count == 0) return;
    const float relu = epilogue_.relu_diff_mask ? 1.f : 0.f;
    if (use_global_stats_) {
      kBackwardGlobal.Launch(*ctx_, count,
                             {Diff(*top[0]), Data(x_norm_), Gamma(), Beta(), stdev_.data(),
                              Diff(*bottom[0])},
                             {relu}, {channels_, spatial_}, KernelShapeOf(choices_));
    } else {
      const cl_mem gamma_diff = ScaleParam(0, true), beta_diff = ScaleParam(1, true);
      kGradientSums.Launch(*ctx_, workspace_, num_, channels_, spatial_,
                           {Diff(*top[0]), Data(x_norm_), Gamma(), Beta(), sums_.data(),
                            {sums_.data(), channels_}, gamma_diff, beta_diff},
                           {gamma_diff != nullptr, beta_diff != nullptr, epilogue_.relu_diff_mask},
                           KernelShapeOf(choices_));
      if (propagate_down[0])
        kBackwardFromSums.Launch(*ctx_, count,
                                 {Data(x_norm_), Diff(*top[0]), sums_.data(),
                                  {sums_.data(), channels_}, stdev_.data(), Gamma(), Beta(),
                                  Diff(*bottom[0])},
                                 {static_cast<float>(num_ * spatial_), relu},
                                 {channels_, spatial_},
                                 KernelShapeOf(choices_));
    }
  }

 private:
  static int ChannelsOf(const Blob& b) { return b.num_axes() == 1 ? 1 : b.shape(1); }
  // The statistics' shift per channel: its first value, x[c * spatial].
  BufferArg Shifts(const Blob& x) const {
    BufferArg shifts(x.data(), 0, spatial_);
    shifts.type = x.storage_type();
    return shifts;
  }
  // The absorbed Scale's factor and bias as per-channel arguments; without
  // them, the constants 1 and 0 for every channel (stride 0).
  BufferArg Gamma() const {
    const cl_mem gamma = ScaleParam(0, false);
    return gamma ? BufferArg(gamma) : BufferArg(identity_.data(), 0, 0);
  }
  BufferArg Beta() const {
    const cl_mem beta = ScaleParam(1, false);
    return beta ? BufferArg(beta) : BufferArg(identity_.data(), 1, 0);
  }

  // The absorbed Scale's factor (0) or bias (1), data or diff; null without
  // an absorbed Scale, without that blob, or (diff) when it takes no gradient.
  cl_mem ScaleParam(int index, bool diff) const {
    if (!epilogue_.scale || index >= static_cast<int>(epilogue_.scale->blobs().size()))
      return nullptr;
    if (diff && !epilogue_.scale->param_propagate_down(index)) return nullptr;
    const Blob& blob = *epilogue_.scale->blobs()[index];
    return diff ? blob.diff() : blob.data();
  }

  float fraction_ = 0.999f, eps_ = 1e-5f;
  bool use_global_stats_ = false;
  int channels_ = 0, num_ = 0, spatial_ = 0;
  Blob mean_{*ctx_}, stdev_{*ctx_};  // the statistics this pass uses
  Blob sums_{*ctx_};  // backward's per-channel sums: [sum(dy); sum(dy * x_norm)]
  ReduceWorkspace workspace_;  // the reductions' scratch
  Blob x_norm_{*ctx_};  // the normalized input, kept for backward (the top may change)
  Blob identity_{*ctx_, {2}};  // {1, 0}: gamma and beta without an absorbed Scale
};

REGISTER_LAYER_CLASS(BatchNorm);
REGISTER_LAYER_TRAITS(BatchNorm, LayerTraits().RunsInPlace().BackwardReadsNoTop());

}  // namespace dlcaffe
