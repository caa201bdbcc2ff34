#include <gtest/gtest.h>

#include <cmath>

#include "util/gradient_checker.hpp"
#include "util/in_place_check.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

struct PowerCase {
  float power, scale, shift;
  float lo, hi;  // inputs drawn from [lo, hi): shift + scale * x > 0 for fractional powers
};

static std::string PowerText(const PowerCase& c) {
  return "type: 'Power' power_param { power: " + std::to_string(c.power) +
         " scale: " + std::to_string(c.scale) + " shift: " + std::to_string(c.shift) + " }";
}

// Caffe's special cases: power 1 (affine), power 2, shift 0, power 0 and
// scale 0 (constant output), and the general fractional power.
static const PowerCase kCases[] = {
    {0.37f, 0.83f, -2.4f, 3.5f, 6.f},  // general: base in [0.5, 2.6]
    {-1.5f, 1.f, 0.5f, 0.5f, 2.f},     // negative fractional power
    {1.f, 0.83f, -2.4f, -3.f, 3.f},    // affine
    {2.f, 0.83f, -2.4f, -3.f, 3.f},    // square
    {3.f, 0.5f, 0.f, -3.f, 3.f},       // shift 0, odd power of negative bases
    {0.f, 0.83f, -2.4f, -3.f, 3.f},    // power 0: y = 1
    {3.f, 0.f, 1.5f, -3.f, 3.f},       // scale 0: y = shift^power
};

class PowerTest : public ::testing::TestWithParam<std::vector<int>> {};

TEST_P(PowerTest, ForwardMatchesReference) {
  for (const PowerCase& c : kCases) {
    Blob bottom(TestContext(), GetParam()), top(TestContext());
    FillUniform(&bottom, c.lo, c.hi, 7);
    auto layer = MakeLayer(PowerText(c));
    layer->SetUp({&bottom}, {&top});
    ASSERT_EQ(top.shape(), bottom.shape());
    layer->Forward({&bottom}, {&top});
    std::vector<float> x = bottom.ReadData(), y = top.ReadData();
    for (size_t i = 0; i < x.size(); ++i) {
      const double expected = std::pow(double(c.shift) + double(c.scale) * x[i], c.power);
      // pow() is accurate to 16 ulp in OpenCL, and shift + scale * x rounds
      // once in float: 1e-5 relative to max(1, |y|).
      ASSERT_NEAR(y[i], expected, 1e-5 * std::max(1.0, std::fabs(expected)))
          << PowerText(c) << ", element " << i << ", x " << x[i];
    }
  }
}

TEST_P(PowerTest, GradientMatchesNumeric) {
  for (const PowerCase& c : kCases) {
    SCOPED_TRACE(PowerText(c));
    Blob bottom(TestContext(), GetParam()), top(TestContext());
    FillUniform(&bottom, c.lo, c.hi, 11);
    auto layer = MakeLayer(PowerText(c));
    layer->SetUp({&bottom}, {&top});
    CheckGradient(*layer, {&bottom}, {&top});
  }
}

// Constant outputs have an exactly zero gradient, as in Caffe.
TEST(Power, ConstantOutputHasZeroGradient) {
  for (const PowerCase& c : {PowerCase{0.f, 2.f, 1.f, -1.f, 1.f},
                             PowerCase{2.f, 0.f, 3.f, -1.f, 1.f}}) {
    Blob x(TestContext(), {13}), y(TestContext());
    FillUniform(&x, c.lo, c.hi, 3);
    x.SetDiff(7.f);
    auto layer = MakeLayer(PowerText(c));
    layer->SetUp({&x}, {&y});
    layer->Forward({&x}, {&y});
    EXPECT_EQ(y.ReadData(), std::vector<float>(13, c.power == 0.f ? 1.f : 9.f));
    y.SetDiff(1.f);
    layer->Backward({&y}, {true}, {&x});
    EXPECT_EQ(x.ReadDiff(), std::vector<float>(13, 0.f));
  }
}

// Where shift + scale * x = 0, Caffe's y / (shift + scale * x) form is NaN;
// the gradient here is the true derivative power * scale * 0^(power - 1).
TEST(Power, GradientAtZeroBase) {
  Blob x(TestContext(), {2}), y(TestContext());
  x.WriteData({0.f, 1.f});
  auto layer = MakeLayer("type: 'Power' power_param { power: 3 scale: 2 }");
  layer->SetUp({&x}, {&y});
  layer->Forward({&x}, {&y});
  y.SetDiff(1.f);
  layer->Backward({&y}, {true}, {&x});
  std::vector<float> dx = x.ReadDiff();
  EXPECT_EQ(dx[0], 0.f);
  EXPECT_NEAR(dx[1], 3 * 2 * 4.f, 1e-4f);  // 3 * 2 * (2 * 1)^2
}

// The gradient needs x; in place, the layer keeps a copy of it.
TEST(Power, InPlaceMatchesOutOfPlace) {
  for (const PowerCase& c : kCases)
    ExpectInPlaceMatchesOutOfPlace(PowerText(c), {3, 13},
                                   [&c](Blob* x) { FillUniform(x, c.lo, c.hi, 5); });
}

INSTANTIATE_TEST_SUITE_P(OddShapes, PowerTest,
                         ::testing::Values(std::vector<int>{1}, std::vector<int>{3, 13},
                                           std::vector<int>{2, 3, 13, 1},
                                           std::vector<int>{127, 3}));

}  // namespace test
}  // namespace dlcaffe
