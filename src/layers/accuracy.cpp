// Accuracy (Caffe "Accuracy"): the fraction of positions whose label is among
// the top_k scores along `axis`, skipping ignore_label; an optional second top
// holds the accuracy of each class. Computed on the device, without the host.
// It has no gradient: the Net never asks it for one. The scores may be
// stored in 16 bits (mixed precision); the labels and the tops stay float32
// (a 16-bit float holds integers exactly only up to 2048, a bfloat16 up to
// 256).
#include "core/storage_option.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class AccuracyLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Accuracy"; }
  bool SupportsStorage(StorageType) const override { return true; }
  bool KeepsBottomInFloat(int index) const override { return index == 1; }
  bool KeepsTopInFloat(int) const override { return true; }
  int ExactNumBottomBlobs() const override { return 2; }
  int MinTopBlobs() const override { return 1; }
  int MaxTopBlobs() const override { return 2; }
  bool AllowForceBackward(int bottom_index) const override { return false; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::AccuracyParameter& p = param_.accuracy_param();
    top_k_ = p.top_k();
    has_ignore_label_ = p.has_ignore_label();
    ignore_label_ = p.ignore_label();
    DLC_REQUIRE(top_k_ >= 1, Where() << "top_k must be at least 1");
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int axis = bottom[0]->CanonicalAxisIndex(param_.accuracy_param().axis());
    outer_ = bottom[0]->count(0, axis);
    classes_ = bottom[0]->shape(axis);
    inner_ = bottom[0]->count(axis + 1);
    DLC_REQUIRE(top_k_ <= classes_, Where() << "top_k " << top_k_ << " exceeds the "
                                            << classes_ << " classes of "
                                            << bottom[0]->shape_string());
    DLC_REQUIRE(outer_ * inner_ == bottom[1]->count(),
                Where() << "the number of labels must match the number of predictions: "
                           "predictions "
                        << bottom[0]->shape_string() << " with class axis " << axis
                        << " need " << outer_ * inner_ << " labels, got "
                        << bottom[1]->shape_string());
    top[0]->Reshape(std::vector<int>{});
    if (top.size() > 1) top[1]->Reshape(std::vector<int>{classes_});
    const size_t bytes = std::max<size_t>(bottom[1]->count(), 1) * sizeof(cl_int);
    if (!outcome_ || outcome_->bytes() < bytes) outcome_ = ctx_->Allocate(bytes);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    ctx_->Launch(ctx_->Kernel("accuracy.cl", StorageOption("DATA_TYPE", bottom[0]->storage_type()),
                              "accuracy_forward"),
                 NDRange(kGroup),
                 NDRange(kGroup), outer_, classes_, inner_, bottom[0]->data(),
                 bottom[1]->data(), (int)has_ignore_label_, ignore_label_, top_k_,
                 top[0]->data(), outcome_->mem());
    if (top.size() > 1) {
      const int positions = outer_ * inner_;
      ctx_->Launch1D(ctx_->Kernel("accuracy.cl", "", "accuracy_per_class"), classes_,
                     positions, classes_, bottom[1]->data(), outcome_->mem(),
                     top[1]->data());
    }
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    for (bool down : propagate_down)
      DLC_REQUIRE(!down, Where() << "Accuracy has no gradient; it cannot be part of "
                                    "the path to a loss");
  }

 private:
  static constexpr size_t kGroup = 128;  // ACCURACY_GROUP in accuracy.cl
  int top_k_ = 1;
  bool has_ignore_label_ = false;
  int ignore_label_ = 0;
  int outer_ = 0, classes_ = 0, inner_ = 0;
  BufferPtr outcome_;  // int per position: 1 hit, 0 miss, -1 ignored
};

REGISTER_LAYER_CLASS(Accuracy);

}  // namespace dlcaffe
