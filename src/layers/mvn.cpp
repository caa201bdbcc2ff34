// MVN (Caffe "MVN"): mean-variance normalization. Each row — one channel of
// one sample, or a whole sample with across_channels — gets its mean
// subtracted and, with normalize_variance, is divided by (std + eps): Caffe
// adds eps to the standard deviation, not to the variance. Works in place.
// x, y and their gradients may be stored in 16 bits (mixed precision); the
// statistics and sums are float, and backward reads y as stored.
#include <string>

#include "core/storage_option.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class MVNLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "MVN"; }
  bool SupportsStorage(StorageType) const override { return true; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    top[0]->ReshapeLike(*bottom[0]);
    const Blob& b = *bottom[0];
    rows_ = param_.mvn_param().across_channels() ? b.num() : b.num() * b.channels();
    dim_ = rows_ > 0 ? b.count() / rows_ : 0;
    stdev_.Reshape(std::vector<int>{rows_});
    storage_ = b.storage_type();
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    if (rows_ == 0 || dim_ == 0) return;
    const caffe::MVNParameter& p = param_.mvn_param();
    ctx_->Launch(ctx_->Kernel("mvn.cl", Options(), "mvn_forward"), NDRange(rows_ * kGroup),
                 NDRange(kGroup), dim_, p.eps(), bottom[0]->data(), top[0]->data(),
                 stdev_.data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0] || rows_ == 0 || dim_ == 0) return;
    ctx_->Launch(ctx_->Kernel("mvn.cl", Options(), "mvn_backward"), NDRange(rows_ * kGroup),
                 NDRange(kGroup), dim_, top[0]->data(), top[0]->diff(), stdev_.data(),
                 bottom[0]->diff());
  }

 private:
  static constexpr size_t kGroup = 64;  // MVN_GROUP in mvn.cl

  std::string Options() const {
    return std::string(param_.mvn_param().normalize_variance() ? "-DNORMALIZE_VARIANCE=1"
                                                               : "-DNORMALIZE_VARIANCE=0") +
           StorageOption("DATA_TYPE", storage_);
  }

  int rows_ = 0, dim_ = 0;
  StorageType storage_ = StorageType::kFloat32;  // the bottom's and the top's
  Blob stdev_{*ctx_};  // std + eps per row, for backward
};

REGISTER_LAYER_CLASS(MVN);

}  // namespace dlcaffe
