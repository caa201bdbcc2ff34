// Softmax (Caffe "Softmax"): y = exp(x) / sum over the `axis` dimension
// (default 1, negative counts from the end) of exp(x), computed stably by
// subtracting the maximum first. Works in place.
//
// Two kernels (src/cl/softmax.cl): a work-item per position walking its
// channels, and for rows of many channels (inner 1, kRowChannels or more: a
// language model's logits) a work-group per row, whose reads are coalesced
// and whose time does not grow with the channels walked one by one.
#include <string>

#include "core/storage_option.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class SoftmaxLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Softmax"; }
  bool SupportsStorage(StorageType) const override { return true; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int axis = bottom[0]->CanonicalAxisIndex(param_.softmax_param().axis());
    channels_ = bottom[0]->shape(axis);
    outer_ = bottom[0]->count(0, axis);
    inner_ = bottom[0]->count(axis + 1);
    top[0]->ReshapeLike(*bottom[0]);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    if (ByRows()) {
      ctx_->Launch(ctx_->Kernel("softmax.cl", GroupOption() + TypeOption(*bottom[0]),
                                "softmax_forward_rows"),
                   NDRange(size_t(outer_) * Group()), NDRange(Group()), channels_,
                   bottom[0]->data(), top[0]->data());
      return;
    }
    const int positions = outer_ * inner_;
    ctx_->Launch1D(ctx_->Kernel("softmax.cl", TypeOption(*bottom[0]), "softmax_forward"),
                   positions, positions,
                   channels_, inner_, bottom[0]->data(), top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    if (ByRows()) {
      ctx_->Launch(ctx_->Kernel("softmax.cl", GroupOption() + TypeOption(*bottom[0]),
                                "softmax_backward_rows"),
                   NDRange(size_t(outer_) * Group()), NDRange(Group()), channels_,
                   top[0]->data(), top[0]->diff(), bottom[0]->diff());
      return;
    }
    const int positions = outer_ * inner_;
    ctx_->Launch1D(ctx_->Kernel("softmax.cl", TypeOption(*bottom[0]), "softmax_backward"),
                   positions, positions,
                   channels_, inner_, top[0]->data(), top[0]->diff(), bottom[0]->diff());
  }

 private:
  static constexpr int kRowChannels = 256;

  bool ByRows() const { return inner_ == 1 && channels_ >= kRowChannels && outer_ > 0; }
  // Work-items per row: 256, or the largest power of two the device allows.
  size_t Group() const {
    size_t group = 256;
    while (group > ctx_->info().max_work_group_size) group /= 2;
    return group;
  }
  std::string GroupOption() const { return "-DGROUP=" + std::to_string(Group()); }
  static std::string TypeOption(const Blob& blob) {
    return StorageOption("DATA_TYPE", blob.storage_type());
  }

  int outer_ = 0, channels_ = 0, inner_ = 0;
};

REGISTER_LAYER_CLASS(Softmax);

}  // namespace dlcaffe
