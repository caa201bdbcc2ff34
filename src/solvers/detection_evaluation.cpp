#include "dlcaffe/detection_evaluation.hpp"

#include <algorithm>
#include <cmath>

#include "dlcaffe/error.hpp"

namespace dlcaffe {

bool IsApVersion(const std::string& version) {
  return version == "11point" || version == "MaxIntegral" || version == "Integral";
}

float AveragePrecision(std::vector<std::pair<float, int>> detections, int num_positives,
                       const std::string& version) {
  DLC_REQUIRE(IsApVersion(version), "ap_version '" << version
                                                   << "' is not 11point, MaxIntegral or Integral");
  if (detections.empty() || num_positives == 0) return 0.f;
  std::stable_sort(detections.begin(), detections.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  const int num = static_cast<int>(detections.size());
  std::vector<float> precision(num), recall(num);
  int tp = 0;
  for (int i = 0; i < num; ++i) {
    tp += detections[i].second;
    precision[i] = static_cast<float>(tp) / (i + 1);
    recall[i] = static_cast<float>(tp) / num_positives;
  }
  const float eps = 1e-6f;
  float ap = 0.f;
  if (version == "11point") {
    // The best precision at recall >= j / 10, as Caffe SSD's loop finds it.
    std::vector<float> best(11, 0.f);
    int start = num - 1;
    for (int j = 10; j >= 0; --j) {
      for (int i = start; i >= 0; --i) {
        if (recall[i] < j / 10.) {  // in double, as Caffe SSD compares
          start = i;
          if (j > 0) best[j - 1] = best[j];
          break;
        }
        best[j] = std::max(best[j], precision[i]);
      }
    }
    for (int j = 10; j >= 0; --j) ap += best[j] / 11;
  } else if (version == "MaxIntegral") {
    float cur_recall = recall.back(), cur_precision = precision.back();
    for (int i = num - 2; i >= 0; --i) {
      cur_precision = std::max(precision[i], cur_precision);
      if (std::fabs(cur_recall - recall[i]) > eps)
        ap += cur_precision * std::fabs(cur_recall - recall[i]);
      cur_recall = recall[i];
    }
    ap += cur_recall * cur_precision;
  } else {
    float previous = 0.f;
    for (int i = 0; i < num; ++i) {
      if (std::fabs(recall[i] - previous) > eps) ap += precision[i] * std::fabs(recall[i] - previous);
      previous = recall[i];
    }
  }
  return ap;
}

void DetectionEvaluation::Add(const std::vector<float>& rows) {
  DLC_REQUIRE(rows.size() % 5 == 0, "detection evaluation rows come 5 values each (DetectionEvaluate's "
                                    "top), got " << rows.size() << " values");
  for (size_t r = 0; r < rows.size(); r += 5) {
    const int item = static_cast<int>(rows[r]), label = static_cast<int>(rows[r + 1]);
    if (item == -1) {
      positives_[label] += static_cast<int>(rows[r + 2]);
      continue;
    }
    const int tp = static_cast<int>(rows[r + 3]), fp = static_cast<int>(rows[r + 4]);
    if (tp == 0 && fp == 0) continue;
    detections_[label].emplace_back(rows[r + 2], tp);
  }
}

std::map<int, float> DetectionEvaluation::ClassAps(const std::string& version) const {
  std::map<int, float> aps;
  for (const auto& [label, positives] : positives_) {
    const auto found = detections_.find(label);
    aps[label] = found == detections_.end() ? 0.f
                                            : AveragePrecision(found->second, positives, version);
  }
  return aps;
}

float DetectionEvaluation::MeanAp(const std::string& version) const {
  const std::map<int, float> aps = ClassAps(version);
  float sum = 0.f;
  for (const auto& [label, ap] : aps) sum += ap;
  return aps.empty() ? 0.f : sum / aps.size();
}

}  // namespace dlcaffe
