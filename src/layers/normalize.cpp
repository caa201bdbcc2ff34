// Normalize (Caffe SSD "Normalize", norm_param): y = scale * x / r with r =
// sqrt(sum x^2 + eps) over each sample (across_spatial) or over the channels
// at each position; the scale is the layer's blob (1 value, or one per
// channel), learned. Backward: dx = (s dy - x * sum(s dy x) / r^2) / r over
// the same groups, and ds = sum(dy * x / r) per channel (or in all).
// N x C x ... blobs (the axes after C are the positions). Not in place: the
// backward reads x.
#include "core/channel_sums.hpp"
#include "dlcaffe/filler.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class NormalizeLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Normalize"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::NormalizeParameter& p = param_.norm_param();
    DLC_REQUIRE(bottom[0]->num_axes() >= 2,
                Where() << "needs N x C x ... input, got " << bottom[0]->shape_string());
    DLC_REQUIRE(std::isfinite(p.eps()) && p.eps() >= 0.f,
                Where() << "norm_param.eps must be finite and >= 0, got " << p.eps());
    const int scales = p.channel_shared() ? 1 : bottom[0]->shape(1);
    if (blobs_.empty()) {  // else loaded or shared
      blobs_.push_back(std::make_shared<Blob>(*ctx_, std::vector<int>{scales}));
      if (p.has_scale_filler()) {
        FillBlob(p.scale_filler(), blobs_[0].get());
      } else {
        blobs_[0]->SetData(1.f);
      }
    }
    DLC_REQUIRE(blobs_[0]->count() == scales,
                Where() << "the scale has " << blobs_[0]->count() << " values; "
                        << (p.channel_shared() ? "channel_shared takes 1" : "one per channel: ")
                        << (p.channel_shared() ? "" : std::to_string(scales)));
    set_param_propagate_down(0, true);
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    DLC_REQUIRE(bottom[0] != top[0], Where() << "cannot work in place (backward reads x)");
    const Blob& x = *bottom[0];
    DLC_REQUIRE(x.num_axes() >= 2, Where() << "needs N x C x ... input, got " << x.shape_string());
    DLC_REQUIRE(param_.norm_param().channel_shared() || x.shape(1) == blobs_[0]->count(),
                Where() << "has " << blobs_[0]->count() << " channel scales for an input of "
                        << x.shape(1) << " channels (" << x.shape_string() << ")");
    N_ = x.shape(0), C_ = x.shape(1), inner_ = x.count(2);
    top[0]->ReshapeLike(x);
    xhat_.ReshapeLike(x);
    const int groups = across() ? N_ : N_ * inner_;
    sumsq_.Reshape({groups});
    dot_.Reshape({groups});
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int count = bottom[0]->count();
    if (count == 0) return;
    GroupDot(bottom[0]->data(), bottom[0]->data(), false, sumsq_.data());
    ctx_->Launch1D(Kernel("normalize_forward"), count, count, C_, inner_, int(across()), eps(),
                   bottom[0]->data(), sumsq_.data(), blobs_[0]->data(), int(shared()),
                   xhat_.data(), top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    const int count = bottom[0]->count();
    if (count == 0) return;
    if (param_propagate_down(0)) {
      // ds: the sum of dy * xhat per channel, or over everything.
      const int outer = shared() ? 1 : N_, channels = shared() ? 1 : C_,
                inner = shared() ? count : inner_;
      ChannelSums(*ctx_, KernelShapeOf(choices_), ChannelSumKind::kProducts, outer, channels, inner,
                  top[0]->diff(), xhat_.data(), {}, {blobs_[0]->diff(), 0, true}, &workspace_);
    }
    if (!propagate_down[0]) return;
    if (across()) {
      // dot[n] = sum of (scale dy) x over the sample.
      ctx_->Launch1D(Kernel("normalize_scale_diff"), count, count, C_, inner_, top[0]->diff(),
                     blobs_[0]->data(), int(shared()), xhat_.diff());
      GroupDot(xhat_.diff(), bottom[0]->data(), false, dot_.data());
    } else {
      GroupDot(top[0]->diff(), bottom[0]->data(), true, dot_.data());
    }
    ctx_->Launch1D(Kernel("normalize_backward"), count, count, C_, inner_, int(across()), eps(),
                   bottom[0]->data(), top[0]->diff(), sumsq_.data(), dot_.data(),
                   blobs_[0]->data(), int(shared()), bottom[0]->diff());
  }

 private:
  bool across() const { return param_.norm_param().across_spatial(); }
  bool shared() const { return param_.norm_param().channel_shared(); }
  float eps() const { return param_.norm_param().eps(); }
  cl_kernel Kernel(const char* name) { return ctx_->Kernel("normalize.cl", "", name); }

  // out[g] = sum over group g of a * b (* the channel's scale with `scaled`,
  // per position only: across a sample, a is scaled beforehand).
  void GroupDot(cl_mem a, cl_mem b, bool scaled, cl_mem out) {
    if (across()) {
      ChannelSums(*ctx_, KernelShapeOf(choices_), ChannelSumKind::kProducts, 1, N_, C_ * inner_, a,
                  b, {}, {out, 0, false}, &workspace_);
      return;
    }
    const int locations = N_ * inner_;
    ctx_->Launch1D(Kernel("normalize_channel_dot"), locations, locations, C_, inner_, a, b,
                   blobs_[0]->data(), int(scaled), int(shared()), out);
  }

  int N_ = 0, C_ = 0, inner_ = 0;
  Blob xhat_{*ctx_};   // data: x / r, for the scale's gradient; diff: scratch
  Blob sumsq_{*ctx_};  // per group: sum x^2
  Blob dot_{*ctx_};    // per group: sum scale * dy * x (backward)
  ReduceWorkspace workspace_;
};

REGISTER_LAYER_CLASS(Normalize);

}  // namespace dlcaffe
