// DetectionEvaluate's rows for detections whose fate is known by
// construction: a hit, a second detection of a taken box, a miss below the
// overlap threshold, a match of a difficult box, a class without boxes, an
// image without boxes, DetectionOutput's "nothing found" row.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dlcaffe/error.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

std::vector<float> Evaluate(const std::string& param, const std::vector<float>& det,
                            const std::vector<float>& gt, std::vector<int>* shape) {
  Blob d(TestContext(), {1, 1, int(det.size() / 7), 7}), g(TestContext(), {1, 1, int(gt.size() / 8), 8}),
      top(TestContext());
  d.WriteData(det);
  g.WriteData(gt);
  auto layer = MakeLayer("name: 'eval' type: 'DetectionEvaluate' detection_evaluate_param { " + param + " }");
  layer->SetUp({&d, &g}, {&top});
  layer->Forward({&d, &g}, {&top});
  *shape = top.shape();
  return top.ReadData();
}

// Image 0: a box of label 1 at [0.1, 0.5]^2, a difficult box of label 2.
// Image 1: a box of label 1. Image 3: no box.
const std::vector<float> kTruth = {0, 1, 0, 0.1f, 0.1f, 0.5f, 0.5f, 0,
                                   0, 2, 0, 0.6f, 0.6f, 0.9f, 0.9f, 1,
                                   1, 1, 0, 0.0f, 0.0f, 0.2f, 0.2f, 0};
// Rows as DetectionOutput gives them (image, label, score, box); within
// image 0 label 1 the lower score comes first, to check the ranking.
const std::vector<float> kDetections = {
    0, 1, 0.6f, 0.1f, 0.1f, 0.5f, 0.45f,   // overlaps the box 0.875: but ranked second
    0, 1, 0.8f, 0.1f, 0.1f, 0.5f, 0.5f,    // exact: the hit
    0, 1, 0.3f, 0.3f, 0.3f, 0.7f, 0.7f,    // overlap 1/7: a miss
    0, 2, 0.9f, 0.6f, 0.6f, 0.9f, 0.88f,   // the difficult box
    0, 3, 0.5f, 0.1f, 0.1f, 0.5f, 0.5f,    // no box of label 3
    1, 1, 0.7f, 0.0f, 0.0f, 0.2f, 0.2f,    // image 1's hit
    3, 2, 0.4f, 0.6f, 0.6f, 0.9f, 0.9f,    // an image without boxes
    2, -1, -1, -1, -1, -1, -1};            // image 2 found nothing (DetectionOutput's row)

}  // namespace

TEST(DetectionEvaluate, MarksEachDetectionAsCaffeSsd) {
  std::vector<int> shape;
  const std::vector<float> rows =
      Evaluate("num_classes: 4 background_label_id: 0 overlap_threshold: 0.5 evaluate_difficult_gt: false",
               kDetections, kTruth, &shape);
  ASSERT_EQ(shape, (std::vector<int>{1, 1, 3 + 8, 5}));
  const std::vector<float> expected = {
      -1, 1, 2, -1, -1,  // label 1: two boxes
      -1, 2, 0, -1, -1,  // label 2: its one box is difficult
      -1, 3, 0, -1, -1,
      0, 1, 0.8f, 1, 0,  // best first: the hit
      0, 1, 0.6f, 0, 1,  // the taken box again
      0, 1, 0.3f, 0, 1,
      0, 2, 0.9f, 0, 0,  // a difficult box's match counts neither way
      0, 3, 0.5f, 0, 1,
      1, 1, 0.7f, 1, 0,
      3, 2, 0.4f, 0, 1,
      0, 0, 0, 0, 0};    // the "nothing found" row leaves a row of zeros, as Caffe SSD's
  ASSERT_EQ(rows.size(), expected.size());
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i], expected[i]) << "row " << i / 5 << " column " << i % 5;
}

TEST(DetectionEvaluate, DifficultBoxesCountWhenEvaluated) {
  std::vector<int> shape;
  const std::vector<float> rows =
      Evaluate("num_classes: 4 evaluate_difficult_gt: true", kDetections, kTruth, &shape);
  EXPECT_EQ(rows[5 + 2], 1.f);                        // label 2 has one box
  EXPECT_EQ(std::vector<float>(rows.begin() + 30, rows.begin() + 35),
            (std::vector<float>{0, 2, 0.9f, 1, 0}));  // and it is found
}

TEST(DetectionEvaluate, BackgroundLabelIsAnError) {
  std::vector<int> shape;
  std::vector<float> det = kDetections;
  det[1] = 0;  // row 0 labelled as the background
  EXPECT_THROW(Evaluate("num_classes: 4", det, kTruth, &shape), Error);
}

}  // namespace test
}  // namespace dlcaffe
