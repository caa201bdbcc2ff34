// NonMaxSuppression (dlcaffe; ONNX NonMaxSuppression, torchvision.ops.nms
// per class): bottom 0 holds boxes B x N x 4 (corners, either diagonal, or
// centre and size with center_point_box 1), bottom 1 scores B x C x N. For
// each batch entry and class, the boxes scoring above score_threshold
// (where set) in falling score order (ties by box index) are kept unless
// their overlap with a box kept before exceeds iou_threshold, at most
// max_output_boxes_per_class of them. The top has one row (batch, class,
// box index) per kept box: batch entries, then classes, in order, each
// class's boxes by falling score. Forward reads the kept counts (one host
// read) and sizes the top; Reshape gives it the bound. All on the device
// (src/cl/non_max_suppression.cl). No gradient.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/exact_division.hpp"
#include "core/grow_buffer.hpp"
#include "core/zero_gradients.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class NonMaxSuppressionLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "NonMaxSuppression"; }
  int ExactNumBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  bool SizesTopsInForward() const override { return true; }

  void LayerSetUp(const std::vector<Blob*>&, const std::vector<Blob*>&) override {
    const caffe::NonMaxSuppressionParameter& p = param_.non_max_suppression_param();
    DLC_REQUIRE(p.center_point_box() == 0 || p.center_point_box() == 1,
                Where() << "center_point_box is " << p.center_point_box() << "; it must be 0 or 1");
    DLC_REQUIRE(p.max_output_boxes_per_class() >= 0,
                Where() << "max_output_boxes_per_class is " << p.max_output_boxes_per_class()
                        << "; it must be at least 0");
    group_ = static_cast<int>(std::min<size_t>(256, ctx_->info().max_work_group_size));
    build_options_ = ExactDivisionOption(ctx_->info());
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const Blob &boxes = *bottom[0], &scores = *bottom[1];
    DLC_REQUIRE(boxes.num_axes() == 3 && boxes.shape(2) == 4,
                Where() << "the boxes (bottom 0) must be B x N x 4, got " << boxes.shape_string());
    batch_ = boxes.shape(0);
    n_ = boxes.shape(1);
    DLC_REQUIRE(scores.num_axes() == 3 && scores.shape(0) == batch_ && scores.shape(2) == n_,
                Where() << "the scores (bottom 1) must be " << batch_ << " x C x " << n_
                        << " for boxes of shape " << boxes.shape_string() << ", got "
                        << scores.shape_string());
    classes_ = scores.shape(1);
    max_kept_ = static_cast<int>(std::min<int64_t>(
        param_.non_max_suppression_param().max_output_boxes_per_class(), n_));
    capacity_ = 1;
    while (capacity_ < n_) capacity_ <<= 1;
    const size_t groups = size_t(batch_) * classes_, kept = std::max(max_kept_, 1);
    GrowBuffer(*ctx_, &key_, groups * capacity_ * sizeof(float));
    GrowBuffer(*ctx_, &id_, groups * capacity_ * sizeof(int));
    GrowBuffer(*ctx_, &kept_box_, groups * kept * 4 * sizeof(float));
    GrowBuffer(*ctx_, &kept_, groups * kept * sizeof(int));
    GrowBuffer(*ctx_, &kept_count_, groups * sizeof(int));
    GrowBuffer(*ctx_, &offset_, groups * sizeof(int));
    top[0]->Reshape({static_cast<int>(groups) * max_kept_, 3});
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::NonMaxSuppressionParameter& p = param_.non_max_suppression_param();
    const int groups = batch_ * classes_;
    if (groups == 0 || n_ == 0 || max_kept_ == 0) {
      top[0]->Reshape(std::vector<int>{0, 3});
      return;
    }
    ctx_->Launch(Kernel("nms_select"), NDRange(size_t(group_) * groups), NDRange(group_),
                 classes_, n_, p.center_point_box(), p.iou_threshold(),
                 static_cast<int>(p.has_score_threshold()), p.score_threshold(), max_kept_,
                 capacity_, bottom[0]->data(), bottom[1]->data(), key_->mem(), id_->mem(),
                 kept_box_->mem(), kept_->mem(), kept_count_->mem(),
                 LocalMemory{group_ * sizeof(int)}, LocalMemory{group_ * 4 * sizeof(float)},
                 LocalMemory{size_t(group_) * ((group_ + 31) / 32) * sizeof(cl_uint)},
                 LocalMemory{sizeof(int)});
    // The kept counts set the top's shape: the one read to the host.
    std::vector<int> counts(groups), offsets(groups);
    ctx_->Read(kept_count_->mem(), 0, groups * sizeof(int), counts.data());
    int rows = 0;
    for (int g = 0; g < groups; ++g) {
      offsets[g] = rows;
      rows += counts[g];
    }
    top[0]->Reshape({rows, 3});
    if (rows == 0) return;
    ctx_->Write(offset_->mem(), 0, groups * sizeof(int), offsets.data());
    ctx_->Launch(Kernel("nms_rows"), NDRange(size_t(group_) * groups), NDRange(group_), classes_,
                 max_kept_, kept_->mem(), kept_count_->mem(), offset_->mem(), top[0]->data());
  }

  void Backward(const std::vector<Blob*>&, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    WriteZeroGradients(propagate_down, bottom);
  }

 private:
  cl_kernel Kernel(const char* name) {
    return ctx_->Kernel("non_max_suppression.cl", build_options_, name);
  }

  int group_ = 1, batch_ = 0, n_ = 0, classes_ = 0, max_kept_ = 0, capacity_ = 1;
  std::string build_options_;  // overlaps as the host's (core/exact_division.hpp)
  BufferPtr key_, id_, kept_box_, kept_, kept_count_, offset_;
};

REGISTER_LAYER_CLASS(NonMaxSuppression);

}  // namespace dlcaffe
