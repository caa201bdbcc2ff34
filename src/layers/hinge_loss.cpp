// HingeLoss (Caffe "HingeLoss"): one-vs-all hinge loss of scores (num x dim)
// and integer labels (num values). With t = -1 for the label's column and +1
// elsewhere, m = max(0, 1 + t x): loss = 1/num sum m (norm L1, the default)
// or 1/num sum m^2 (L2), Caffe's normalisation by num. The loss is a 0-d top
// computed on the device.
//
// Labels are never read on the host. A label outside [0, dim) is a user
// error, found lazily (LateLabelCheck): that pass's loss is NaN and a later
// Forward throws.
//
// In mixed precision the scores and their gradient may be 16-bit; the labels
// (16 bits hold integers only to 2048, bfloat16's to 256) and the loss stay
// float32.
#include "core/late_label_check.hpp"
#include "core/storage_option.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class HingeLossLayer : public LossLayer {
 public:
  using LossLayer::LossLayer;
  const char* type() const override { return "HingeLoss"; }
  bool SupportsStorage(StorageType) const override { return true; }
  bool KeepsBottomInFloat(int index) const override { return index == 1; }
  bool KeepsTopInFloat(int) const override { return true; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    LossLayer::LayerSetUp(bottom, top);
    squared_ = param_.hinge_loss_param().norm() == caffe::HingeLossParameter_Norm_L2;
    label_check_ = std::make_unique<LateLabelCheck>(*ctx_);
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    LossLayer::Reshape(bottom, top);
    DLC_REQUIRE(bottom[1]->count() == bottom[1]->num(),
                Where() << "the labels must hold one value per sample, got "
                        << bottom[1]->shape_string());
    num_ = bottom[0]->num();
    dim_ = num_ > 0 ? bottom[0]->count() / num_ : 0;
  }

  void ThrowLateErrors() override {
    if (const auto bad = label_check_->TakeBadValue())
      DLC_FAIL(Where() << BadLabelMessage(*bad, dim_));
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    ThrowLateErrors();
    ctx_->Launch(Kernel(*bottom[0], "hinge_loss_forward"), NDRange(kLossGroup),
                 NDRange(kLossGroup), num_, dim_, (int)squared_, bottom[0]->data(),
                 bottom[1]->data(), top[0]->data(), label_check_->record());
    label_check_->ReadLater();
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    DLC_REQUIRE(!propagate_down[1], Where() << "cannot backpropagate to the label input");
    if (!propagate_down[0]) return;
    const int count = bottom[0]->count();
    ctx_->Launch1D(Kernel(*bottom[0], "hinge_loss_backward"), count, count,
                   dim_, num_, (int)squared_, bottom[0]->data(), bottom[1]->data(),
                   top[0]->diff(), bottom[0]->diff());
  }

 private:
  // The scores' storage type picks the kernels' DATA_TYPE.
  cl_kernel Kernel(const Blob& scores, const char* name) {
    return ctx_->Kernel("hinge_loss.cl", StorageOption("DATA_TYPE", scores.storage_type()), name);
  }

  static constexpr size_t kLossGroup = 128;  // LOSS_GROUP in hinge_loss.cl

  bool squared_ = false;
  int num_ = 0, dim_ = 0;
  std::unique_ptr<LateLabelCheck> label_check_;
};

REGISTER_LAYER_CLASS(HingeLoss);

}  // namespace dlcaffe
