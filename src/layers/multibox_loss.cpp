// MultiBoxLoss (Caffe SSD "MultiBoxLoss", multibox_loss_param): the SSD
// training loss (caffe.proto's MultiBoxLossParameter says what). Bottoms:
// location predictions (N x priors * 4), raw class confidences (N x priors *
// num_classes), PriorBox's priors (1 x 2 x priors * 4) and the ground truth
// (AnnotatedData's 1 x 1 x G x 8 rows). Matching, the confidence losses,
// hard negative mining and the sum run on the device (src/cl/
// multibox_loss.cl) with no host read; Caffe SSD runs them on the host.
//
// Where Caffe SSD sorts equal losses in an unspecified order, the mining
// takes the first prior among equals. A ground-truth row with a label out of
// range or the background's is an error, reported by the next Forward (as
// the loss layers' labels: core/late_label_check.hpp).
#include <memory>
#include <vector>

#include "core/exact_division.hpp"
#include "core/grow_buffer.hpp"
#include "core/late_label_check.hpp"
#include "core/zero_gradients.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "layers/ssd_priors.hpp"

namespace dlcaffe {

class MultiBoxLossLayer : public LossLayer {
 public:
  using LossLayer::LossLayer;
  const char* type() const override { return "MultiBoxLoss"; }
  int ExactNumBottomBlobs() const override { return 4; }
  // The priors and the ground truth take no gradient.
  bool AllowForceBackward(int index) const override { return index < 2; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    LossLayer::LayerSetUp(bottom, top);
    const caffe::MultiBoxLossParameter& p = param_.multibox_loss_param();
    DLC_REQUIRE(p.has_num_classes() && p.num_classes() > 0,
                Where() << "multibox_loss_param.num_classes must be given (and positive)");
    classes_ = static_cast<int>(p.num_classes());
    background_ = static_cast<int>(p.background_label_id());
    DLC_REQUIRE(background_ < classes_, Where() << "multibox_loss_param.background_label_id "
                                                << background_ << " must be below num_classes "
                                                << classes_);
    DLC_REQUIRE(!p.map_object_to_agnostic() || background_ + 1 < classes_,
                Where() << "map_object_to_agnostic trains the objects toward label "
                        << background_ + 1 << ", which needs num_classes above it");
    DLC_REQUIRE(p.share_location(),
                Where() << "multibox_loss_param.share_location: false (a box per class) is not "
                           "supported; SSD's nets share locations (docs/detection.md)");
    DLC_REQUIRE(!p.bp_inside(), Where() << "multibox_loss_param.bp_inside is not supported "
                                           "(docs/detection.md)");
    mining_ = p.mining_type();
    if (p.has_do_neg_mining()) {
      LOG(WARNING) << Where() << "do_neg_mining is deprecated (as in Caffe SSD): read as "
                   << "mining_type " << (p.do_neg_mining() ? "MAX_NEGATIVE" : "NONE");
      mining_ = p.do_neg_mining() ? caffe::MultiBoxLossParameter_MiningType_MAX_NEGATIVE
                                  : caffe::MultiBoxLossParameter_MiningType_NONE;
    }
    DLC_REQUIRE(mining_ != caffe::MultiBoxLossParameter_MiningType_HARD_EXAMPLE,
                Where() << "mining_type HARD_EXAMPLE (online hard example mining) is not "
                           "supported; MAX_NEGATIVE (SSD's) and NONE are (docs/detection.md)");
    DLC_REQUIRE(p.neg_pos_ratio() >= 0.f,
                Where() << "multibox_loss_param.neg_pos_ratio must be at least 0, got "
                        << p.neg_pos_ratio());
    const caffe::LossParameter& loss = param_.loss_param();
    normalization_ = loss.normalization();
    if (!loss.has_normalization() && loss.has_normalize())
      normalization_ = loss.normalize() ? caffe::LossParameter_NormalizationMode_VALID
                                        : caffe::LossParameter_NormalizationMode_BATCH_SIZE;
    DLC_REQUIRE(ctx_->info().max_work_group_size >= kGroup,
                Where() << "needs work-groups of " << kGroup << " work-items; the device allows "
                        << ctx_->info().max_work_group_size);
    build_options_ = ExactDivisionOption(ctx_->info());
    normalizer_ = ctx_->Allocate(sizeof(float));
    label_check_ = std::make_unique<LateLabelCheck>(*ctx_);
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const Blob &loc = *bottom[0], &conf = *bottom[1], &prior = *bottom[2], &gt = *bottom[3];
    images_ = loc.num_axes() > 0 ? loc.shape(0) : 0;
    priors_ = PriorCount(prior, Where());
    DLC_REQUIRE(loc.num_axes() >= 2 && loc.count(1) == priors_ * 4,
                Where() << "bottom 0 (the locations) must be N x " << priors_ * 4 << " ("
                        << priors_ << " priors x 4), got " << loc.shape_string());
    DLC_REQUIRE(conf.num_axes() >= 2 && conf.shape(0) == images_ &&
                    conf.count(1) == priors_ * classes_,
                Where() << "bottom 1 (the confidences) must be " << images_ << " x "
                        << priors_ * classes_ << " (" << priors_ << " priors x " << classes_
                        << " classes), got " << conf.shape_string());
    DLC_REQUIRE(gt.count() % 8 == 0 && (gt.num_axes() == 0 || gt.shape(-1) == 8),
                Where() << "bottom 3 (the ground truth) must be rows of 8 (image, label, "
                           "instance, xmin, ymin, xmax, ymax, difficult), got "
                        << gt.shape_string());
    rows_ = gt.count() / 8;
    top[0]->Reshape(std::vector<int>{});
    const size_t n = std::max(images_, 1), np = n * std::max(priors_, 1);
    GrowBuffer(*ctx_, &image_gt_, n * std::max(rows_, 1) * sizeof(int));
    GrowBuffer(*ctx_, &taken_, n * std::max(rows_, 1) * sizeof(int));
    GrowBuffer(*ctx_, &match_, np * sizeof(int));
    GrowBuffer(*ctx_, &best_overlap_, np * sizeof(float));
    GrowBuffer(*ctx_, &conf_loss_, np * sizeof(float));
    GrowBuffer(*ctx_, &role_, np * sizeof(int));
    GrowBuffer(*ctx_, &matches_, n * sizeof(int));
    if (!param_.multibox_loss_param().use_prior_for_matching())
      GrowBuffer(*ctx_, &decoded_, np * 4 * sizeof(float));
  }

  void ThrowLateErrors() override {
    if (const auto bad = label_check_->TakeBadValue())
      DLC_FAIL(Where() << "ground-truth row " << bad->position / 8 << " (bottom 3) has label "
                       << bad->value << ": labels must be in [0, " << classes_
                       << ") and not the background, " << background_);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    ThrowLateErrors();
    const caffe::MultiBoxLossParameter& p = param_.multibox_loss_param();
    const int count = images_ * priors_;
    if (count == 0) {
      top[0]->SetData(0.f);
      ctx_->Fill(normalizer_->mem(), 0, 1, 1.f);
      return;
    }
    cl_mem boxes = bottom[2]->data();
    if (!p.use_prior_for_matching()) {
      // Match the decoded predictions instead (Caffe SSD decodes them with
      // the same code type, unclipped).
      ctx_->Launch1D(ctx_->Kernel("detection_output.cl", build_options_, "detection_decode"), count, count,
                     priors_, 1, static_cast<int>(p.code_type()),
                     static_cast<int>(p.encode_variance_in_target()), bottom[0]->data(),
                     bottom[2]->data(), decoded_->mem());
      boxes = decoded_->mem();
    }
    const int per_prediction = p.match_type() == caffe::MultiBoxLossParameter_MatchType_PER_PREDICTION;
    const int logistic = p.conf_loss_type() == caffe::MultiBoxLossParameter_ConfLossType_LOGISTIC;
    ctx_->Launch(Kernel("multibox_match"), NDRange(kGroup * images_), NDRange(kGroup), priors_,
                 rows_, classes_, background_, static_cast<int>(p.use_difficult_gt()),
                 per_prediction, p.overlap_threshold(),
                 static_cast<int>(p.ignore_cross_boundary_bbox()),
                 static_cast<int>(!p.use_prior_for_matching()), bottom[3]->data(), boxes,
                 image_gt_->mem(), taken_->mem(), match_->mem(), best_overlap_->mem(),
                 matches_->mem());
    ctx_->Launch1D(Kernel("multibox_conf_loss"), count, count, classes_, background_,
                   static_cast<int>(p.map_object_to_agnostic()), logistic, bottom[1]->data(),
                   bottom[3]->data(), match_->mem(), conf_loss_->mem());
    ctx_->Launch(Kernel("multibox_mine"), NDRange(kGroup * images_), NDRange(kGroup), priors_,
                 static_cast<int>(mining_), p.neg_pos_ratio(), p.neg_overlap(), background_,
                 static_cast<int>(p.map_object_to_agnostic()), bottom[3]->data(), match_->mem(),
                 best_overlap_->mem(), conf_loss_->mem(), matches_->mem(), role_->mem());
    ctx_->Launch(Kernel("multibox_total"), NDRange(kGroup), NDRange(kGroup), images_, priors_,
                 rows_, classes_, background_, static_cast<int>(p.code_type()),
                 static_cast<int>(p.encode_variance_in_target()), L2(), p.loc_weight(),
                 static_cast<int>(normalization_), bottom[0]->data(), bottom[2]->data(),
                 bottom[3]->data(), match_->mem(), role_->mem(), conf_loss_->mem(),
                 top[0]->data(), normalizer_->mem(), label_check_->record());
    label_check_->ReadLater();
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    WriteZeroGradients({false, false, propagate_down[2], propagate_down[3]}, bottom);
    const int count = images_ * priors_;
    if (count == 0 || !(propagate_down[0] || propagate_down[1])) return;
    const caffe::MultiBoxLossParameter& p = param_.multibox_loss_param();
    ctx_->Launch1D(Kernel("multibox_backward"), count, count, priors_, classes_,
                   static_cast<int>(p.code_type()),
                   static_cast<int>(p.encode_variance_in_target()), L2(),
                   static_cast<int>(p.conf_loss_type() ==
                                    caffe::MultiBoxLossParameter_ConfLossType_LOGISTIC),
                   p.loc_weight(), static_cast<int>(propagate_down[0]),
                   static_cast<int>(propagate_down[1]), bottom[0]->data(), bottom[1]->data(),
                   bottom[2]->data(), bottom[3]->data(), match_->mem(), role_->mem(),
                   top[0]->diff(), normalizer_->mem(), bottom[0]->diff(), bottom[1]->diff());
  }

 private:
  cl_kernel Kernel(const char* name) {
    return ctx_->Kernel("multibox_loss.cl", build_options_, name);
  }
  int L2() const {
    return param_.multibox_loss_param().loc_loss_type() == caffe::MultiBoxLossParameter_LocLossType_L2;
  }

  static constexpr size_t kGroup = 128;  // MB_GROUP in multibox_loss.cl
  static_assert(caffe::MultiBoxLossParameter_MiningType_NONE == 0 &&
                    caffe::MultiBoxLossParameter_LocLossType_L2 == 0,
                "multibox_loss.cl numbers the mining and location loss types as caffe.proto");

  int classes_ = 0, background_ = 0;
  caffe::MultiBoxLossParameter::MiningType mining_ =
      caffe::MultiBoxLossParameter_MiningType_MAX_NEGATIVE;
  caffe::LossParameter::NormalizationMode normalization_ =
      caffe::LossParameter_NormalizationMode_VALID;
  std::string build_options_;  // overlaps as the host's (core/exact_division.hpp)
  int images_ = 0, priors_ = 0, rows_ = 0;
  BufferPtr decoded_;              // N x priors x 4, without use_prior_for_matching
  BufferPtr image_gt_, taken_;     // N x G: each image's usable rows; bipartite scratch
  BufferPtr match_, best_overlap_; // N x priors
  BufferPtr conf_loss_, role_;     // N x priors
  BufferPtr matches_;              // N
  BufferPtr normalizer_;           // 1 float, written by forward for backward
  std::unique_ptr<LateLabelCheck> label_check_;
};

REGISTER_LAYER_CLASS(MultiBoxLoss);

}  // namespace dlcaffe
