// LRN (Caffe "LRN"): local response normalization of a 4-D blob,
// y = x * scale^-beta, with Caffe's two regions:
//   ACROSS_CHANNELS: scale = k + alpha/local_size * sum of x^2 over local_size
//                    neighbouring channels (zero-padded);
//   WITHIN_CHANNEL:  scale = 1 + alpha/local_size^2 * sum of x^2 over a
//                    local_size x local_size window (zero-padded).
// Caffe builds WITHIN_CHANNEL from Split, Power, AVE Pooling, Power and Eltwise
// layers; its pooling always divides by local_size^2 (padding counts) and its
// power layer shifts by 1, not k. The kernels compute the same directly.
// In place, the input is kept in an internal blob for backward.
// x, y, their gradients and that copy may be stored in 16 bits (mixed
// precision); the scales, the ratios and all sums are float.
#include <string>

#include "core/blob_copy.hpp"
#include "core/storage_option.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class LRNLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "LRN"; }
  bool SupportsStorage(StorageType) const override { return true; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::LRNParameter& p = param_.lrn_param();
    size_ = static_cast<int>(p.local_size());
    DLC_REQUIRE(size_ % 2 == 1, Where() << "local_size must be odd, got " << size_);
    alpha_ = p.alpha();
    beta_ = p.beta();
    k_ = p.k();
    within_channel_ = p.norm_region() == caffe::LRNParameter_NormRegion_WITHIN_CHANNEL;
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    DLC_REQUIRE(bottom[0]->num_axes() == 4,
                Where() << "the input must have 4 axes (num, channels, height, width), got "
                        << bottom[0]->shape_string());
    top[0]->ReshapeLike(*bottom[0]);
    scale_.ReshapeLike(*bottom[0]);
    options_ = StorageOption("DATA_TYPE", bottom[0]->storage_type());
    if (bottom[0] == top[0]) {
      if (input_copy_.storage_type() != bottom[0]->storage_type())
        input_copy_.set_storage_type(bottom[0]->storage_type());
      input_copy_.set_diff_on_demand();  // data only: as large as the input
      input_copy_.ReshapeLike(*bottom[0]);
    }
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int count = bottom[0]->count();
    cl_mem x = bottom[0]->data();
    if (bottom[0] == top[0]) {
      CopyBlobValues(*ctx_, *bottom[0], x, input_copy_.data());
      x = input_copy_.data();
    }
    if (within_channel_) {
      ctx_->Launch1D(ctx_->Kernel("lrn.cl", options_, "lrn_within_scale"), count, count,
                     bottom[0]->height(), bottom[0]->width(), size_,
                     alpha_ / float(size_ * size_), x, scale_.data());
    } else {
      ctx_->Launch1D(ctx_->Kernel("lrn.cl", options_, "lrn_across_scale"), count, count,
                     bottom[0]->channels(), spatial(*bottom[0]), size_, alpha_ / size_, k_, x,
                     scale_.data());
    }
    ctx_->Launch1D(ctx_->Kernel("lrn.cl", options_, "lrn_output"), count, count, beta_, x,
                   scale_.data(), top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    const int count = bottom[0]->count();
    const cl_mem x = bottom[0] == top[0] ? input_copy_.data() : bottom[0]->data();
    // The ratio goes into the scale blob's diff, which is otherwise unused.
    ctx_->Launch1D(ctx_->Kernel("lrn.cl", options_, "lrn_ratio"), count, count, beta_, x,
                   scale_.data(), top[0]->diff(), scale_.diff());
    if (within_channel_) {
      ctx_->Launch1D(ctx_->Kernel("lrn.cl", options_, "lrn_within_backward"), count, count,
                     bottom[0]->height(), bottom[0]->width(), size_, beta_,
                     2.f * beta_ * alpha_ / float(size_ * size_), x, scale_.data(),
                     top[0]->diff(), scale_.diff(), bottom[0]->diff());
    } else {
      ctx_->Launch1D(ctx_->Kernel("lrn.cl", options_, "lrn_across_backward"), count, count,
                     bottom[0]->channels(), spatial(*bottom[0]), size_, beta_,
                     2.f * beta_ * alpha_ / size_, x, scale_.data(), top[0]->diff(),
                     scale_.diff(), bottom[0]->diff());
    }
  }

 private:
  static int spatial(const Blob& b) { return b.height() * b.width(); }

  int size_ = 5;
  float alpha_ = 1.f, beta_ = 0.75f, k_ = 1.f;
  bool within_channel_ = false;
  std::string options_;     // the blobs' storage type
  Blob scale_{*ctx_};       // data: scale; diff: the ratio of backward
  Blob input_copy_{*ctx_};  // the input, when working in place
};

REGISTER_LAYER_CLASS(LRN);

}  // namespace dlcaffe
