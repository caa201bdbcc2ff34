#include <gtest/gtest.h>

#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

class ThresholdTest : public ::testing::TestWithParam<std::vector<int>> {};

TEST_P(ThresholdTest, ForwardMatchesReference) {
  for (float threshold : {0.f, 0.3f}) {
    Blob bottom(TestContext(), GetParam()), top(TestContext());
    FillGaussian(&bottom, 0.f, 1.f, 7);
    std::vector<float> x = bottom.ReadData();
    x[0] = threshold;  // exactly on the threshold: not above it, so 0
    bottom.WriteData(x);
    auto layer = MakeLayer("type: 'Threshold' threshold_param { threshold: " +
                           std::to_string(threshold) + " }");
    layer->SetUp({&bottom}, {&top});
    ASSERT_EQ(top.shape(), bottom.shape());
    layer->Forward({&bottom}, {&top});
    std::vector<float> y = top.ReadData();
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_EQ(y[i], x[i] > threshold ? 1.f : 0.f)
          << "threshold " << threshold << ", element " << i << ", x " << x[i];
  }
}

TEST(Threshold, InPlaceForward) {
  Blob blob(TestContext(), {3, 13});
  FillGaussian(&blob, 0.f, 1.f, 5);
  std::vector<float> x = blob.ReadData();
  auto layer = MakeLayer("type: 'Threshold' threshold_param { threshold: 0.2 }");
  layer->SetUp({&blob}, {&blob});
  layer->Forward({&blob}, {&blob});
  std::vector<float> y = blob.ReadData();
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], x[i] > 0.2f ? 1.f : 0.f);
}

// Caffe implements no Threshold backward: propagating through it is an error,
// and not propagating is fine.
TEST(Threshold, BackwardIsAnErrorOnlyWhenPropagating) {
  Blob x(TestContext(), {3, 13}), y(TestContext());
  FillGaussian(&x, 0.f, 1.f, 9);
  auto layer = MakeLayer("type: 'Threshold'");
  layer->SetUp({&x}, {&y});
  layer->Forward({&x}, {&y});
  y.SetDiff(1.f);
  EXPECT_THROW(layer->Backward({&y}, {true}, {&x}), Error);
  EXPECT_NO_THROW(layer->Backward({&y}, {false}, {&x}));
}

INSTANTIATE_TEST_SUITE_P(OddShapes, ThresholdTest,
                         ::testing::Values(std::vector<int>{1}, std::vector<int>{3, 13},
                                           std::vector<int>{2, 3, 13, 1},
                                           std::vector<int>{127, 3}));

}  // namespace test
}  // namespace dlcaffe
