// MultinomialLogisticLoss (Caffe "MultinomialLogisticLoss"): the loss of
// given probabilities (num x dim, e.g. a Softmax layer's output) and integer
// labels (num values): -1/num sum_n log(max(p[n, label_n], 1e-20)), Caffe's
// kLOG_THRESHOLD. The loss is a 0-d top computed on the device.
//
// Labels are never read on the host. A label outside [0, dim) is a user
// error, found lazily (LateLabelCheck): that pass's loss is NaN and a later
// Forward throws.
//
// In mixed precision the probabilities and their gradient may be 16-bit; the
// labels (16 bits hold integers only to 2048, bfloat16's to 256) and the
// loss stay float32.
#include "core/late_label_check.hpp"
#include "core/storage_option.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class MultinomialLogisticLossLayer : public LossLayer {
 public:
  using LossLayer::LossLayer;
  const char* type() const override { return "MultinomialLogisticLoss"; }
  bool SupportsStorage(StorageType) const override { return true; }
  bool KeepsBottomInFloat(int index) const override { return index == 1; }
  bool KeepsTopInFloat(int) const override { return true; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    LossLayer::LayerSetUp(bottom, top);
    label_check_ = std::make_unique<LateLabelCheck>(*ctx_);
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    LossLayer::Reshape(bottom, top);
    const Blob& labels = *bottom[1];
    DLC_REQUIRE(labels.count() == labels.num(),
                Where() << "the labels must hold one value per sample (num x 1 x 1 x 1), got "
                        << labels.shape_string());
    num_ = bottom[0]->num();
    dim_ = num_ > 0 ? bottom[0]->count() / num_ : 0;
  }

  void ThrowLateErrors() override {
    if (const auto bad = label_check_->TakeBadValue())
      DLC_FAIL(Where() << BadLabelMessage(*bad, dim_));
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    ThrowLateErrors();
    ctx_->Launch(Kernel(*bottom[0], "multinomial_logistic_loss_forward"), NDRange(kLossGroup),
                 NDRange(kLossGroup), num_, dim_, bottom[0]->data(), bottom[1]->data(),
                 top[0]->data(), label_check_->record());
    label_check_->ReadLater();
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    DLC_REQUIRE(!propagate_down[1], Where() << "cannot backpropagate to the label input");
    if (!propagate_down[0]) return;
    const int count = bottom[0]->count();
    ctx_->Launch1D(Kernel(*bottom[0], "multinomial_logistic_loss_backward"), count, count,
                   dim_, num_, bottom[0]->data(), bottom[1]->data(), top[0]->diff(),
                   bottom[0]->diff());
  }

 private:
  // The probabilities' storage type picks the kernels' DATA_TYPE.
  cl_kernel Kernel(const Blob& prob, const char* name) {
    return ctx_->Kernel("multinomial_logistic_loss.cl",
                        StorageOption("DATA_TYPE", prob.storage_type()), name);
  }

  static constexpr size_t kLossGroup = 128;  // LOSS_GROUP in the .cl

  int num_ = 0, dim_ = 0;
  std::unique_ptr<LateLabelCheck> label_check_;
};

REGISTER_LAYER_CLASS(MultinomialLogisticLoss);

}  // namespace dlcaffe
