// DetectionOutput (Caffe SSD "DetectionOutput", detection_output_param): an
// SSD head's detections (caffe.proto's DetectionOutputParameter says what,
// in what order). Bottoms: location predictions, class confidences (after
// softmax), PriorBox's priors. Decoding, each class's selection, sort and
// NMS, and each image's keep_top_k run on the device
// (src/cl/detection_output.cl); the one host read is the number of rows,
// which the top's shape needs (Caffe's top is 1 x 1 x D x 7 too).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <glog/logging.h>

#include "core/exact_division.hpp"
#include "core/grow_buffer.hpp"
#include "core/zero_gradients.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "layers/ssd_priors.hpp"

namespace dlcaffe {

class DetectionOutputLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "DetectionOutput"; }
  int ExactNumBottomBlobs() const override { return 3; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int) const override { return false; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::DetectionOutputParameter& p = param_.detection_output_param();
    DLC_REQUIRE(p.has_num_classes() && p.num_classes() > 0,
                Where() << "detection_output_param.num_classes must be given (and positive)");
    classes_ = static_cast<int>(p.num_classes());
    loc_classes_ = p.share_location() ? 1 : classes_;
    background_ = p.background_label_id();
    DLC_REQUIRE(background_ >= -1 && background_ < classes_,
                Where() << "detection_output_param.background_label_id " << background_
                        << " must be -1 (none) or a class below num_classes " << classes_);
    const caffe::NonMaximumSuppressionParameter& nms = p.nms_param();
    DLC_REQUIRE(std::isfinite(nms.nms_threshold()) && nms.nms_threshold() >= 0.f,
                Where() << "nms_param.nms_threshold must be at least 0, got " << nms.nms_threshold());
    DLC_REQUIRE(nms.eta() > 0.f && nms.eta() <= 1.f,
                Where() << "nms_param.eta must be in (0, 1], got " << nms.eta());
    top_k_ = nms.has_top_k() ? nms.top_k() : -1;
    DLC_REQUIRE(top_k_ >= -1, Where() << "nms_param.top_k must be -1 (all) or more, got " << top_k_);
    DLC_REQUIRE(p.keep_top_k() >= -1,
                Where() << "detection_output_param.keep_top_k must be -1 (all) or more, got "
                        << p.keep_top_k());
    // Caffe SSD considers every box when no threshold is given.
    threshold_ = p.has_confidence_threshold() ? p.confidence_threshold()
                                              : -std::numeric_limits<float>::max();
    if (p.save_output_param().has_output_directory() || p.visualize() || p.has_save_file())
      LOG(WARNING) << Where() << "detection_output_param's save_output_param, visualize and "
                   << "save_file are read but not done: the detections are in the top blob";
    group_ = static_cast<int>(std::min<size_t>(128, ctx_->info().max_work_group_size));
    build_options_ = ExactDivisionOption(ctx_->info());
    top[0]->Reshape({1, 1, 1, 7});
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const Blob &loc = *bottom[0], &conf = *bottom[1], &prior = *bottom[2];
    images_ = loc.num_axes() > 0 ? loc.shape(0) : 0;
    priors_ = PriorCount(prior, Where());
    DLC_REQUIRE(loc.num_axes() >= 2 && loc.count(1) == priors_ * loc_classes_ * 4,
                Where() << "bottom 0 (the locations) must be N x " << priors_ * loc_classes_ * 4
                        << " (" << priors_ << " priors x " << loc_classes_
                        << " location classes x 4), got " << loc.shape_string());
    DLC_REQUIRE(conf.num_axes() >= 2 && conf.shape(0) == images_ &&
                    conf.count(1) == priors_ * classes_,
                Where() << "bottom 1 (the confidences) must be " << images_ << " x "
                        << priors_ * classes_ << " (" << priors_ << " priors x " << classes_
                        << " classes), got " << conf.shape_string());
    const int keep_top_k = param_.detection_output_param().keep_top_k();
    sort_capacity_ = NextPow2(std::max(priors_, 1));
    kept_capacity_ = std::max(top_k_ >= 0 ? std::min(top_k_, priors_) : priors_, 1);
    const int all_kept = classes_ * kept_capacity_;
    row_capacity_ = std::max(keep_top_k >= 0 ? std::min(keep_top_k, all_kept) : all_kept, 1);
    // keep_top_k's sort over the image's kept boxes: scratch only where it
    // can cut (the kernel sorts only then).
    top_capacity_ = keep_top_k >= 0 && keep_top_k < all_kept ? NextPow2(all_kept) : 1;
    const size_t n = std::max(images_, 1), nc = n * classes_;
    GrowBuffer(*ctx_, &boxes_, n * loc_classes_ * priors_ * 4 * sizeof(float));
    GrowBuffer(*ctx_, &sort_score_, nc * sort_capacity_ * sizeof(float));
    GrowBuffer(*ctx_, &sort_prior_, nc * sort_capacity_ * sizeof(int));
    GrowBuffer(*ctx_, &kept_score_, nc * kept_capacity_ * sizeof(float));
    GrowBuffer(*ctx_, &kept_prior_, nc * kept_capacity_ * sizeof(int));
    GrowBuffer(*ctx_, &kept_count_, nc * sizeof(int));
    GrowBuffer(*ctx_, &class_offset_, n * (classes_ + 1) * sizeof(int));
    GrowBuffer(*ctx_, &selected_, nc * sizeof(int));
    GrowBuffer(*ctx_, &top_score_, n * top_capacity_ * sizeof(float));
    GrowBuffer(*ctx_, &top_id_, n * top_capacity_ * sizeof(int));
    GrowBuffer(*ctx_, &rows_, n * row_capacity_ * 7 * sizeof(float));
    GrowBuffer(*ctx_, &image_rows_, n * sizeof(int));
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::DetectionOutputParameter& p = param_.detection_output_param();
    if (images_ > 0 && priors_ > 0) {
      const int decoded = images_ * loc_classes_ * priors_;
      ctx_->Launch1D(Kernel("detection_decode"), decoded, decoded,
                     priors_, loc_classes_, static_cast<int>(p.code_type()),
                     static_cast<int>(p.variance_encoded_in_target()), bottom[0]->data(),
                     bottom[2]->data(), boxes_->mem());
      ctx_->Launch(Kernel("detection_nms"),
                   NDRange(size_t(group_) * classes_, images_), NDRange(group_, 1), classes_,
                   priors_, loc_classes_, background_, threshold_, top_k_,
                   p.nms_param().nms_threshold(), p.nms_param().eta(), sort_capacity_,
                   kept_capacity_, bottom[1]->data(), boxes_->mem(), sort_score_->mem(),
                   sort_prior_->mem(), kept_score_->mem(), kept_prior_->mem(), kept_count_->mem());
      ctx_->Launch(Kernel("detection_gather"),
                   NDRange(size_t(group_) * images_), NDRange(group_), classes_, priors_,
                   loc_classes_, p.keep_top_k(), kept_capacity_, row_capacity_, top_capacity_,
                   kept_score_->mem(), kept_prior_->mem(), kept_count_->mem(), boxes_->mem(),
                   class_offset_->mem(), selected_->mem(), top_score_->mem(), top_id_->mem(),
                   rows_->mem(), image_rows_->mem());
    }
    // The rows' number sets the top's shape: the one read to the host.
    std::vector<int> image_rows(images_, 0);
    if (images_ > 0 && priors_ > 0)
      ctx_->Read(image_rows_->mem(), 0, images_ * sizeof(int), image_rows.data());
    int total = 0;
    for (int r : image_rows) total += r;
    if (total == 0) {
      // Caffe SSD's rows when nothing is found: one per image, the image's
      // index and then -1s.
      top[0]->Reshape({1, 1, images_, 7});
      std::vector<float> none(size_t(images_) * 7, -1.f);
      for (int n = 0; n < images_; ++n) none[size_t(n) * 7] = static_cast<float>(n);
      if (images_ > 0) top[0]->WriteData(none);
      return;
    }
    top[0]->Reshape({1, 1, total, 7});
    size_t at = 0;
    for (int n = 0; n < images_; ++n) {
      const size_t bytes = size_t(image_rows[n]) * 7 * sizeof(float);
      if (bytes > 0)
        ctx_->Copy(rows_->mem(), size_t(n) * row_capacity_ * 7 * sizeof(float), top[0]->data(), at,
                   bytes);
      at += bytes;
    }
  }

  void Backward(const std::vector<Blob*>&, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    WriteZeroGradients(propagate_down, bottom);
  }

 private:
  cl_kernel Kernel(const char* name) {
    return ctx_->Kernel("detection_output.cl", build_options_, name);
  }
  // The sorts' capacity for n pairs (a power of two).
  int NextPow2(int n) const {
    DLC_REQUIRE(n <= (1 << 30), Where() << n << " candidates to sort are more than 2^30");
    int p = 1;
    while (p < n) p <<= 1;
    return p;
  }

  int classes_ = 0, loc_classes_ = 1, background_ = 0, top_k_ = -1, group_ = 128;
  float threshold_ = 0.f;
  std::string build_options_;  // overlaps as the host's (core/exact_division.hpp)
  int images_ = 0, priors_ = 0;
  int sort_capacity_ = 1, kept_capacity_ = 1, row_capacity_ = 1, top_capacity_ = 1;
  BufferPtr boxes_;                      // decoded: N x loc classes x priors x 4
  BufferPtr sort_score_, sort_prior_;    // each (image, class)'s candidates, sorted
  BufferPtr kept_score_, kept_prior_;    // each (image, class)'s kept, best first
  BufferPtr kept_count_;                 // N x C
  BufferPtr class_offset_, selected_;    // per image: class offsets, rows per class
  BufferPtr top_score_, top_id_;         // per image: keep_top_k's sort
  BufferPtr rows_;                       // per image: its rows, N x row_capacity x 7
  BufferPtr image_rows_;                 // N
};

REGISTER_LAYER_CLASS(DetectionOutput);

}  // namespace dlcaffe
