// DetectionEvaluate (Caffe SSD "DetectionEvaluate", detection_evaluate_param):
// marks each detection (bottom 0, DetectionOutput's 1 x 1 x D x 7 rows) a true
// or false positive against the ground truth (bottom 1, AnnotatedData's
// 1 x 1 x G x 8 rows), for the solver's eval_type "detection"
// (solvers/detection_evaluation.hpp turns the rows into mAP). Caffe SSD's
// algorithm and top (caffe.proto's DetectionEvaluateParameter): per image and
// label, the detections best first (equal scores in row order), each taking
// the box it overlaps most if that overlap reaches overlap_threshold and the
// box is not taken yet.
//
// Bookkeeping on the host, as the test phase's last step: the bottoms are a
// few hundred rows and the solver reads the top to the host anyway. Boxes
// are compared normalized: name_size_file and resize_param, with which Caffe
// SSD compares them in the original images' pixels, are read and not used
// (docs/detection.md).
#include <algorithm>
#include <map>
#include <vector>

#include <glog/logging.h>

#include "core/zero_gradients.hpp"
#include "data/ssd_augmentation.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

namespace {

using ssd::Box;

struct Detection {
  float score;
  Box box;
};

struct Truth {
  Box box;
  bool difficult;
};

}  // namespace

class DetectionEvaluateLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "DetectionEvaluate"; }
  int ExactNumBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int) const override { return false; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::DetectionEvaluateParameter& p = param_.detection_evaluate_param();
    DLC_REQUIRE(p.has_num_classes() && p.num_classes() > 0,
                Where() << "detection_evaluate_param.num_classes must be given (and positive)");
    classes_ = static_cast<int>(p.num_classes());
    background_ = static_cast<int>(p.background_label_id());
    if (p.has_name_size_file() || p.has_resize_param())
      LOG(WARNING) << Where() << "name_size_file and resize_param are read but not used: boxes "
                   << "are compared in normalized coordinates (docs/detection.md)";
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    DLC_REQUIRE(bottom[0]->count() % 7 == 0 && (bottom[0]->num_axes() == 0 || bottom[0]->shape(-1) == 7),
                Where() << "bottom 0 must be DetectionOutput's rows of 7, got "
                        << bottom[0]->shape_string());
    DLC_REQUIRE(bottom[1]->count() % 8 == 0 && (bottom[1]->num_axes() == 0 || bottom[1]->shape(-1) == 8),
                Where() << "bottom 1 must be the ground truth's rows of 8, got "
                        << bottom[1]->shape_string());
    top[0]->Reshape({1, 1, CountedClasses() + bottom[0]->count() / 7, 5});
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const std::vector<float> det = bottom[0]->ReadData(), gt = bottom[1]->ReadData();
    // image -> label -> boxes, in row order.
    std::map<int, std::map<int, std::vector<Detection>>> detections;
    for (size_t r = 0; r + 7 <= det.size(); r += 7) {
      const int image = static_cast<int>(det[r]), label = static_cast<int>(det[r + 1]);
      // DetectionOutput's row for an image without detections: (n, -1, ...).
      if (image == -1 || label == -1) continue;
      DLC_REQUIRE(label != background_, Where() << "detection row " << r / 7
                                                << " has the background label " << label);
      detections[image][label].push_back({det[r + 2], Box{det[r + 3], det[r + 4], det[r + 5], det[r + 6]}});
    }
    std::map<int, std::map<int, std::vector<Truth>>> truths;
    std::map<int, int> positives;
    const bool difficult_counts = param_.detection_evaluate_param().evaluate_difficult_gt();
    for (size_t r = 0; r + 8 <= gt.size(); r += 8) {
      const int image = static_cast<int>(gt[r]), label = static_cast<int>(gt[r + 1]);
      if (image == -1) continue;  // AnnotatedData's row for a batch without boxes
      DLC_REQUIRE(label != background_, Where() << "ground-truth row " << r / 8
                                                << " has the background label " << label);
      const bool difficult = gt[r + 7] != 0.f;
      truths[image][label].push_back({Box{gt[r + 3], gt[r + 4], gt[r + 5], gt[r + 6]}, difficult});
      if (difficult_counts || !difficult) ++positives[label];
    }
    std::vector<float> rows(top[0]->count(), 0.f);
    size_t at = 0;
    auto row = [&](float a, float b, float c, float d, float e) {
      rows[at++] = a, rows[at++] = b, rows[at++] = c, rows[at++] = d, rows[at++] = e;
    };
    for (int c = 0; c < classes_; ++c)
      if (c != background_) row(-1, c, static_cast<float>(positives[c]), -1, -1);
    for (auto& [image, labels] : detections)
      for (auto& [label, boxes] : labels) {
        std::stable_sort(boxes.begin(), boxes.end(),
                         [](const Detection& a, const Detection& b) { return a.score > b.score; });
        const std::vector<Truth>* candidates = nullptr;
        if (const auto t = truths.find(image); t != truths.end())
          if (const auto l = t->second.find(label); l != t->second.end()) candidates = &l->second;
        std::vector<bool> taken(candidates ? candidates->size() : 0, false);
        for (const Detection& d : boxes) {
          float best = -1.f;
          int match = -1;
          for (size_t j = 0; candidates && j < candidates->size(); ++j) {
            const float o = ssd::Jaccard(d.box, (*candidates)[j].box);
            if (o > best) best = o, match = static_cast<int>(j);
          }
          float tp = 0.f, fp = 1.f;
          if (match >= 0 && best >= param_.detection_evaluate_param().overlap_threshold()) {
            if (!difficult_counts && (*candidates)[match].difficult) {
              fp = 0.f;  // neither: a difficult box's match does not count
            } else if (!taken[match]) {
              tp = 1.f, fp = 0.f;
              taken[match] = true;
            }
          }
          row(static_cast<float>(image), static_cast<float>(label), d.score, tp, fp);
        }
      }
    top[0]->WriteData(rows);
  }

  void Backward(const std::vector<Blob*>&, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    WriteZeroGradients(propagate_down, bottom);
  }

 private:
  int CountedClasses() const {
    return background_ >= 0 && background_ < classes_ ? classes_ - 1 : classes_;
  }

  int classes_ = 0, background_ = 0;
};

REGISTER_LAYER_CLASS(DetectionEvaluate);

}  // namespace dlcaffe
