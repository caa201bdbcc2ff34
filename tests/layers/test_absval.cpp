#include <gtest/gtest.h>

#include <cmath>

#include "util/gradient_checker.hpp"
#include "util/in_place_check.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

class AbsValTest : public ::testing::TestWithParam<std::vector<int>> {};

TEST_P(AbsValTest, ForwardMatchesReference) {
  Blob bottom(TestContext(), GetParam()), top(TestContext());
  FillGaussian(&bottom, 0.f, 1.f, 7);
  auto layer = MakeLayer("type: 'AbsVal'");
  layer->SetUp({&bottom}, {&top});
  ASSERT_EQ(top.shape(), bottom.shape());
  layer->Forward({&bottom}, {&top});
  std::vector<float> x = bottom.ReadData(), y = top.ReadData();
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], std::fabs(x[i])) << "element " << i;
}

TEST_P(AbsValTest, GradientMatchesNumeric) {
  Blob bottom(TestContext(), GetParam()), top(TestContext());
  FillGaussian(&bottom, 0.f, 1.f, 11);
  auto layer = MakeLayer("type: 'AbsVal'");
  layer->SetUp({&bottom}, {&top});
  GradientCheckOptions options;
  options.kink_range = 0.02f;  // |x| has a kink at 0; the step is 0.01
  CheckGradient(*layer, {&bottom}, {&top}, {}, options);
}

// sign(0) = 0, as Caffe: the gradient at the kink itself is zero.
TEST(AbsVal, GradientAtZeroIsZero) {
  Blob x(TestContext(), {3}), y(TestContext());
  x.WriteData({-2.f, 0.f, 3.f});
  auto layer = MakeLayer("type: 'AbsVal'");
  layer->SetUp({&x}, {&y});
  layer->Forward({&x}, {&y});
  y.WriteDiff({0.5f, 0.5f, 0.5f});
  layer->Backward({&y}, {true}, {&x});
  EXPECT_EQ(x.ReadDiff(), (std::vector<float>{-0.5f, 0.f, 0.5f}));
}

// Caffe refuses AbsVal in place; here it keeps a copy of x for the gradient.
TEST(AbsVal, InPlaceMatchesOutOfPlace) {
  ExpectInPlaceMatchesOutOfPlace("type: 'AbsVal'", {3, 13},
                                 [](Blob* x) { FillGaussian(x, 0.f, 1.f, 5); });
}

INSTANTIATE_TEST_SUITE_P(OddShapes, AbsValTest,
                         ::testing::Values(std::vector<int>{1}, std::vector<int>{3, 13},
                                           std::vector<int>{2, 3, 13, 1},
                                           std::vector<int>{127, 3}));

}  // namespace test
}  // namespace dlcaffe
