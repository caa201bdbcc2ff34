// ContrastiveLoss (Caffe "ContrastiveLoss"): bottoms a and b are paired
// features (num x channels, as N x C x 1 x 1), bottom 2 the similarity labels
// (num values, non-zero = similar). With d = |a - b|:
//   loss = 1/(2 num) sum [similar ? d^2 : max(margin - d, 0)^2],
// or max(margin - d^2, 0) for dissimilar pairs with legacy_version. Both
// feature bottoms get gradients, the labels none. The loss is a 0-d top
// computed on the device.
//
// In mixed precision the features and their gradients may be 16-bit (one
// type for both); the labels, the distances and the loss stay float32.
#include <string>

#include "core/storage_option.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class ContrastiveLossLayer : public LossLayer {
 public:
  using LossLayer::LossLayer;
  const char* type() const override { return "ContrastiveLoss"; }
  int ExactNumBottomBlobs() const override { return 3; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index != 2; }
  bool SupportsStorage(StorageType) const override { return true; }
  bool KeepsBottomInFloat(int index) const override { return index == 2; }
  bool KeepsTopInFloat(int) const override { return true; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    LossLayer::Reshape(bottom, top);
    const Blob &a = *bottom[0], &b = *bottom[1], &similar = *bottom[2];
    DLC_REQUIRE(a.shape() == b.shape() && a.height() == 1 && a.width() == 1,
                Where() << "the two features must have the same num x channels (x 1 x 1) shape, "
                           "got "
                        << a.shape_string() << " and " << b.shape_string());
    DLC_REQUIRE(similar.count() == a.num(),
                Where() << "the similarity labels must hold one value per pair ("
                        << a.num() << "), got " << similar.shape_string());
    DLC_REQUIRE(a.storage_type() == b.storage_type(),
                Where() << "stores both features in one type, got "
                        << StorageTypeName(a.storage_type()) << " and "
                        << StorageTypeName(b.storage_type()));
    num_ = a.num();
    channels_ = a.channels();
    dist_sq_.Reshape(std::vector<int>{num_});
    options_ = StorageOption("DATA_TYPE", a.storage_type());
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::ContrastiveLossParameter& p = param_.contrastive_loss_param();
    ctx_->Launch(ctx_->Kernel("contrastive_loss.cl", options_, "contrastive_loss_forward"),
                 NDRange(kLossGroup), NDRange(kLossGroup), num_, channels_, p.margin(),
                 (int)p.legacy_version(), bottom[0]->data(), bottom[1]->data(),
                 bottom[2]->data(), dist_sq_.data(), top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    DLC_REQUIRE(!propagate_down[2], Where() << "cannot backpropagate to the similarity labels");
    const caffe::ContrastiveLossParameter& p = param_.contrastive_loss_param();
    const int count = bottom[0]->count();
    for (int i = 0; i < 2; ++i) {
      if (!propagate_down[i]) continue;
      ctx_->Launch1D(ctx_->Kernel("contrastive_loss.cl", options_, "contrastive_loss_backward"),
                     count, count, channels_, num_, p.margin(), (int)p.legacy_version(),
                     i == 0 ? 1.f : -1.f, bottom[0]->data(), bottom[1]->data(),
                     bottom[2]->data(), dist_sq_.data(), top[0]->diff(), bottom[i]->diff());
    }
  }

 private:
  static constexpr size_t kLossGroup = 128;  // LOSS_GROUP in contrastive_loss.cl

  int num_ = 0, channels_ = 0;
  Blob dist_sq_{*ctx_};  // |a - b|^2 per pair, for backward
  std::string options_;  // the features' storage type
};

REGISTER_LAYER_CLASS(ContrastiveLoss);

}  // namespace dlcaffe
