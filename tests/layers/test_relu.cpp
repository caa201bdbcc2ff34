#include <gtest/gtest.h>

#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

class ReLUTest : public ::testing::TestWithParam<std::vector<int>> {};

static float ReferenceReLU(float x, float slope) { return x > 0 ? x : slope * x; }

TEST_P(ReLUTest, ForwardMatchesReference) {
  for (float slope : {0.f, 0.1f}) {
    Blob bottom(TestContext(), GetParam()), top(TestContext());
    FillGaussian(&bottom, 0.f, 1.f, 7);
    auto layer = MakeLayer("type: 'ReLU' relu_param { negative_slope: " +
                           std::to_string(slope) + " }");
    layer->SetUp({&bottom}, {&top});
    ASSERT_EQ(top.shape(), bottom.shape());
    layer->Forward({&bottom}, {&top});
    std::vector<float> x = bottom.ReadData(), y = top.ReadData();
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_FLOAT_EQ(y[i], ReferenceReLU(x[i], slope)) << "element " << i;
  }
}

TEST_P(ReLUTest, GradientMatchesNumeric) {
  for (float slope : {0.f, 0.3f}) {
    Blob bottom(TestContext(), GetParam()), top(TestContext());
    FillGaussian(&bottom, 0.f, 1.f, 11);
    auto layer = MakeLayer("type: 'ReLU' relu_param { negative_slope: " +
                           std::to_string(slope) + " }");
    layer->SetUp({&bottom}, {&top});
    GradientCheckOptions options;
    options.kink_range = 0.02f;  // ReLU has a kink at 0
    CheckGradient(*layer, {&bottom}, {&top}, {}, options);
  }
}

TEST(ReLU, InPlaceForwardAndBackward) {
  Blob blob(TestContext(), {3, 13}), reference(TestContext(), {3, 13});
  FillGaussian(&blob, 0.f, 1.f, 5);
  std::vector<float> x = blob.ReadData();
  auto layer = MakeLayer("type: 'ReLU' relu_param { negative_slope: 0.5 }");
  layer->SetUp({&blob}, {&blob});
  layer->Forward({&blob}, {&blob});
  std::vector<float> y = blob.ReadData();
  std::vector<float> dy(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_FLOAT_EQ(y[i], ReferenceReLU(x[i], 0.5f));
    dy[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
  }
  blob.WriteDiff(dy);
  layer->Backward({&blob}, {true}, {&blob});
  std::vector<float> dx = blob.ReadDiff();
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_FLOAT_EQ(dx[i], x[i] > 0 ? dy[i] : 0.5f * dy[i]) << "element " << i;
}

INSTANTIATE_TEST_SUITE_P(OddShapes, ReLUTest,
                         ::testing::Values(std::vector<int>{1},
                                           std::vector<int>{3, 13},
                                           std::vector<int>{2, 3, 13, 1},
                                           std::vector<int>{127, 3}));

}  // namespace test
}  // namespace dlcaffe
