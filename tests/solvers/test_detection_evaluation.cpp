// Average precision (Caffe SSD's ComputeAP in its three versions) against
// values worked out by hand, and the gathering of DetectionEvaluate's rows.
#include <gtest/gtest.h>

#include "dlcaffe/error.hpp"
#include "dlcaffe/detection_evaluation.hpp"

namespace dlcaffe {
namespace test {

// Three boxes; ranked detections: hit, miss, hit, miss. Precision 1, 1/2,
// 2/3, 1/2 at recall 1/3, 1/3, 2/3, 2/3.
const std::vector<std::pair<float, int>> kRanked = {{0.6f, 0}, {0.9f, 1}, {0.7f, 1}, {0.8f, 0}};

TEST(DetectionEvaluation, AveragePrecisionInEachVersion) {
  // Integral: 1 * 1/3 + 2/3 * 1/3.
  EXPECT_NEAR(AveragePrecision(kRanked, 3, "Integral"), 5.f / 9, 1e-6);
  // MaxIntegral: the precision envelope (1 to recall 1/3, 2/3 to 2/3).
  EXPECT_NEAR(AveragePrecision(kRanked, 3, "MaxIntegral"), 5.f / 9, 1e-6);
  // 11point: best precision 1 at recall 0, .1, .2, .3; 2/3 at .4, .5, .6;
  // 0 above.
  EXPECT_NEAR(AveragePrecision(kRanked, 3, "11point"), (4 + 3 * 2.f / 3) / 11, 1e-6);
  // Where they differ: hit, miss, miss, hit, of two boxes.
  const std::vector<std::pair<float, int>> late = {{4, 1}, {3, 0}, {2, 0}, {1, 1}};
  EXPECT_NEAR(AveragePrecision(late, 2, "Integral"), 0.5f + 0.5f * 0.5f, 1e-6);
  EXPECT_NEAR(AveragePrecision(late, 2, "MaxIntegral"), 0.5f + 0.5f * 0.5f, 1e-6);
  EXPECT_NEAR(AveragePrecision(late, 2, "11point"), (6 + 5 * 0.5f) / 11, 1e-6);
  EXPECT_EQ(AveragePrecision({}, 3, "Integral"), 0.f);
  EXPECT_EQ(AveragePrecision(kRanked, 0, "Integral"), 0.f);
  EXPECT_THROW(AveragePrecision(kRanked, 3, "VOC"), Error);
}

TEST(DetectionEvaluation, GathersRowsOverIterations) {
  DetectionEvaluation e;
  // Iteration 1: class 1 has 2 boxes, class 2 has 1; two detections of class
  // 1 (a hit and a miss), a difficult box's match (neither), class 2 none.
  e.Add({-1, 1, 2, -1, -1, -1, 2, 1, -1, -1, 0, 1, 0.9f, 1, 0, 0, 1, 0.8f, 0, 1, 1, 1, 0.7f, 0, 0});
  // Iteration 2: class 1 one more box, hit at a low score.
  e.Add({-1, 1, 1, -1, -1, -1, 2, 0, -1, -1, 0, 1, 0.5f, 1, 0});
  const std::map<int, float> aps = e.ClassAps("Integral");
  ASSERT_EQ(aps.size(), 2u);
  // Class 1: hit, miss, hit of 3: 1/3 + 2/3 * 1/3.
  EXPECT_NEAR(aps.at(1), 5.f / 9, 1e-6);
  EXPECT_EQ(aps.at(2), 0.f);  // a box never found
  EXPECT_NEAR(e.MeanAp("Integral"), 5.f / 18, 1e-6);
  EXPECT_THROW(e.Add({1, 2, 3}), Error);
}

}  // namespace test
}  // namespace dlcaffe
