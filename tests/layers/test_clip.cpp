#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "util/gradient_checker.hpp"
#include "util/in_place_check.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

constexpr float kMin = -0.5f, kMax = 0.7f;
const char kClipText[] = "type: 'Clip' clip_param { min: -0.5 max: 0.7 }";

class ClipTest : public ::testing::TestWithParam<std::vector<int>> {};

TEST_P(ClipTest, ForwardMatchesReference) {
  Blob bottom(TestContext(), GetParam()), top(TestContext());
  FillGaussian(&bottom, 0.f, 1.f, 7);
  auto layer = MakeLayer(kClipText);
  layer->SetUp({&bottom}, {&top});
  ASSERT_EQ(top.shape(), bottom.shape());
  layer->Forward({&bottom}, {&top});
  std::vector<float> x = bottom.ReadData(), y = top.ReadData();
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(y[i], std::min(std::max(x[i], kMin), kMax)) << "element " << i;
}

// The gradient jumps at both bounds; the checker skips one kink only, so the
// inputs are moved at least 0.02 (twice the step) away from both.
TEST_P(ClipTest, GradientMatchesNumeric) {
  Blob bottom(TestContext(), GetParam()), top(TestContext());
  FillGaussian(&bottom, 0.f, 1.f, 11);
  std::vector<float> x = bottom.ReadData();
  for (float& v : x)
    for (float bound : {kMin, kMax})
      if (std::fabs(v - bound) < 0.02f) v = bound + (v < bound ? -0.02f : 0.02f);
  bottom.WriteData(x);
  auto layer = MakeLayer(kClipText);
  layer->SetUp({&bottom}, {&top});
  CheckGradient(*layer, {&bottom}, {&top});
}

// As Caffe: the gradient passes on [min, max], bounds included, and is zero
// outside. In place, an input clipped to a bound and one exactly on it hold
// the same y; the layer keeps a copy of x to tell them apart.
TEST(Clip, GradientOnAndOutsideTheBounds) {
  const std::vector<float> x{-2.f, kMin, 0.1f, kMax, 3.f};
  const std::vector<float> expected_dx{0.f, 1.f, 1.f, 1.f, 0.f};
  for (bool in_place : {false, true}) {
    Blob bottom(TestContext(), {5}), separate_top(TestContext());
    Blob* top = in_place ? &bottom : &separate_top;
    bottom.WriteData(x);
    auto layer = MakeLayer(kClipText);
    layer->SetUp({&bottom}, {top});
    layer->Forward({&bottom}, {top});
    EXPECT_EQ(top->ReadData(), (std::vector<float>{kMin, kMin, 0.1f, kMax, kMax}));
    top->SetDiff(1.f);
    layer->Backward({top}, {true}, {&bottom});
    EXPECT_EQ(bottom.ReadDiff(), expected_dx) << (in_place ? "in place" : "out of place");
  }
}

TEST(Clip, InPlaceMatchesOutOfPlace) {
  ExpectInPlaceMatchesOutOfPlace(kClipText, {3, 13},
                                 [](Blob* x) { FillGaussian(x, 0.f, 1.f, 5); });
}

TEST(Clip, RejectsBadParameters) {
  Blob x(TestContext(), {3}), y(TestContext());
  EXPECT_THROW(MakeLayer("type: 'Clip' clip_param { min: 1 max: 0 }")->SetUp({&x}, {&y}),
               Error);
  EXPECT_THROW(MakeLayer("type: 'Clip'")->SetUp({&x}, {&y}), Error);
}

INSTANTIATE_TEST_SUITE_P(OddShapes, ClipTest,
                         ::testing::Values(std::vector<int>{1}, std::vector<int>{3, 13},
                                           std::vector<int>{2, 3, 13, 1},
                                           std::vector<int>{127, 3}));

}  // namespace test
}  // namespace dlcaffe
