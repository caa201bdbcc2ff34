// Caffe SSD's detection testing (its Solver::TestDetection and ComputeAP):
// the rows of DetectionEvaluate's top from every test iteration, gathered
// per output blob, give each class's average precision and their mean (mAP).
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace dlcaffe {

// "11point" (VOC2007), "MaxIntegral" (VOC2012, ILSVRC) or "Integral".
bool IsApVersion(const std::string& version);

// The average precision of one class's detections, (score, true positive)
// with true positive 1 or 0, against num_positives ground-truth boxes.
// Detections are ranked by score, equal scores in the order given.
float AveragePrecision(std::vector<std::pair<float, int>> detections, int num_positives,
                       const std::string& version);

class DetectionEvaluation {
 public:
  // One test iteration's rows of an output (5 values each): (-1, label,
  // positives, -1, -1) counts a class's ground truth; (image, label, score,
  // tp, fp) is a detection; rows with neither tp nor fp (a difficult box's
  // match) are skipped.
  void Add(const std::vector<float>& rows);

  // Each class's average precision, for the classes with a count row.
  std::map<int, float> ClassAps(const std::string& version) const;
  // Their mean (0 without classes).
  float MeanAp(const std::string& version) const;

 private:
  std::map<int, int> positives_;
  std::map<int, std::vector<std::pair<float, int>>> detections_;
};

}  // namespace dlcaffe
