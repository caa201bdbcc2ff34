// PReLU (Caffe "PReLU"): y = x > 0 ? x : slope * x with a learnable slope per
// channel (axis 1), or one shared by all channels (channel_shared). The slope
// blob has Caffe's layout: shape {channels}, or a scalar (shape {}) when
// shared; its filler defaults to constant 0.25. In place, Forward keeps a
// copy of x for Backward, as Caffe's bottom_memory_.
#include "dlcaffe/filler.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "layers/neuron_layer.hpp"

namespace dlcaffe {

class PReLULayer : public NeuronLayer {
 public:
  PReLULayer(const caffe::LayerParameter& param, Context& ctx)
      : NeuronLayer(param, ctx), slope_partial_(ctx) {}
  const char* type() const override { return "PReLU"; }

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
    slope_partial_.Reshape({bottom[0]->shape(0) * bottom[0]->shape(1)});
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    KeepBottomIfInPlace(bottom, top);
    const int n = bottom[0]->count();
    ctx_->Launch1D(ctx_->Kernel("prelu.cl", "", "prelu_forward"), n, n, channels(bottom),
                   dim(bottom), div_factor(bottom), bottom[0]->data(), blobs_[0]->data(),
                   top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    const cl_mem x = BottomForBackward(bottom, top);
    // The slope gradient first: in place, the bottom diff overwrites dy.
    if (param_propagate_down(0)) {
      const int rows = bottom[0]->shape(0) * channels(bottom);
      ctx_->Launch1D(ctx_->Kernel("prelu.cl", "", "prelu_slope_partial"), rows, rows,
                     dim(bottom), x, top[0]->diff(), slope_partial_.data());
      const int slopes = blobs_[0]->count();
      ctx_->Launch1D(ctx_->Kernel("prelu.cl", "", "prelu_slope_accumulate"), slopes, slopes,
                     bottom[0]->shape(0), channels(bottom), slope_partial_.data(),
                     blobs_[0]->diff());
    }
    if (propagate_down[0]) {
      const int n = bottom[0]->count();
      ctx_->Launch1D(ctx_->Kernel("prelu.cl", "", "prelu_backward"), n, n, channels(bottom),
                     dim(bottom), div_factor(bottom), x, blobs_[0]->data(), top[0]->diff(),
                     bottom[0]->diff());
    }
  }

 protected:
  bool BackwardReadsBottom() const override { return true; }

 private:
  static int channels(const std::vector<Blob*>& bottom) { return bottom[0]->shape(1); }
  static int dim(const std::vector<Blob*>& bottom) { return bottom[0]->count(2); }
  int div_factor(const std::vector<Blob*>& bottom) const {
    return channel_shared_ ? channels(bottom) : 1;
  }

  bool channel_shared_ = false;
  Blob slope_partial_;  // per (sample, channel) sums of the slope gradient
};

REGISTER_LAYER_CLASS(PReLU);

}  // namespace dlcaffe
