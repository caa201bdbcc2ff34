#include <gtest/gtest.h>

#include <cmath>

#include "util/gradient_checker.hpp"
#include "util/in_place_check.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

struct LogCase {
  float base, scale, shift;
};

static std::string LogText(const LogCase& c) {
  return "type: 'Log' log_param { base: " + std::to_string(c.base) +
         " scale: " + std::to_string(c.scale) + " shift: " + std::to_string(c.shift) + " }";
}

// base -1 means e; a base below 1 gives a negative 1 / ln(base).
static const LogCase kCases[] = {
    {-1.f, 1.f, 0.f}, {2.f, 0.5f, 1.f}, {10.f, 2.f, 0.5f}, {0.5f, 1.f, 0.f},
};

class LogTest : public ::testing::TestWithParam<std::vector<int>> {};

// Inputs in [0.5, 3): shift + scale * x stays positive and away from 0.
TEST_P(LogTest, ForwardMatchesReference) {
  for (const LogCase& c : kCases) {
    Blob bottom(TestContext(), GetParam()), top(TestContext());
    FillUniform(&bottom, 0.5f, 3.f, 7);
    auto layer = MakeLayer(LogText(c));
    layer->SetUp({&bottom}, {&top});
    ASSERT_EQ(top.shape(), bottom.shape());
    layer->Forward({&bottom}, {&top});
    std::vector<float> x = bottom.ReadData(), y = top.ReadData();
    const double log_base = c.base == -1.f ? 1.0 : std::log(double(c.base));
    for (size_t i = 0; i < x.size(); ++i) {
      const double expected = std::log(double(c.shift) + double(c.scale) * x[i]) / log_base;
      // log() is accurate to 3 ulp; shift + scale * x and 1 / ln(base) round
      // once in float: 1e-6 relative to max(1, |y|).
      ASSERT_NEAR(y[i], expected, 1e-6 * std::max(1.0, std::fabs(expected)))
          << LogText(c) << ", element " << i << ", x " << x[i];
    }
  }
}

TEST_P(LogTest, GradientMatchesNumeric) {
  for (const LogCase& c : kCases) {
    SCOPED_TRACE(LogText(c));
    Blob bottom(TestContext(), GetParam()), top(TestContext());
    FillUniform(&bottom, 0.5f, 3.f, 11);
    auto layer = MakeLayer(LogText(c));
    layer->SetUp({&bottom}, {&top});
    CheckGradient(*layer, {&bottom}, {&top});
  }
}

TEST(Log, RejectsBadBase) {
  for (const char* base : {"0", "-2", "1"}) {
    Blob x(TestContext(), {3}), y(TestContext());
    auto layer = MakeLayer(std::string("type: 'Log' log_param { base: ") + base + " }");
    EXPECT_THROW(layer->SetUp({&x}, {&y}), Error) << "base " << base;
  }
}

// The gradient needs x; in place, the layer keeps a copy of it.
TEST(Log, InPlaceMatchesOutOfPlace) {
  const LogCase c{2.f, 0.5f, 1.f};
  ExpectInPlaceMatchesOutOfPlace(LogText(c), {3, 13},
                                 [](Blob* x) { FillUniform(x, 0.5f, 3.f, 5); });
}

INSTANTIATE_TEST_SUITE_P(OddShapes, LogTest,
                         ::testing::Values(std::vector<int>{1}, std::vector<int>{3, 13},
                                           std::vector<int>{2, 3, 13, 1},
                                           std::vector<int>{127, 3}));

}  // namespace test
}  // namespace dlcaffe
