#include <gtest/gtest.h>

#include <cmath>

#include "util/gradient_checker.hpp"
#include "util/in_place_check.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

struct ExpCase {
  float base, scale, shift;
};

static std::string ExpText(const ExpCase& c) {
  return "type: 'Exp' exp_param { base: " + std::to_string(c.base) +
         " scale: " + std::to_string(c.scale) + " shift: " + std::to_string(c.shift) + " }";
}

// base -1 means e; base 1 gives a constant 1.
static const ExpCase kCases[] = {
    {-1.f, 1.f, 0.f}, {-1.f, 0.5f, -1.f}, {2.f, 1.f, 0.f},
    {2.f, 0.7f, 1.2f}, {0.5f, -1.f, 0.3f}, {1.f, 1.f, 2.f},
};

class ExpTest : public ::testing::TestWithParam<std::vector<int>> {};

TEST_P(ExpTest, ForwardMatchesReference) {
  for (const ExpCase& c : kCases) {
    Blob bottom(TestContext(), GetParam()), top(TestContext());
    FillGaussian(&bottom, 0.f, 1.f, 7);
    auto layer = MakeLayer(ExpText(c));
    layer->SetUp({&bottom}, {&top});
    ASSERT_EQ(top.shape(), bottom.shape());
    layer->Forward({&bottom}, {&top});
    std::vector<float> x = bottom.ReadData(), y = top.ReadData();
    const double base = c.base == -1.f ? std::exp(1.0) : c.base;
    for (size_t i = 0; i < x.size(); ++i) {
      const double expected = std::pow(base, double(c.shift) + double(c.scale) * x[i]);
      // exp() is accurate to 3 ulp, and its argument ln(base) * scale * x
      // rounds in float (|argument| < 5 here): 2e-6 relative.
      ASSERT_NEAR(y[i], expected, 2e-6 * std::fabs(expected))
          << ExpText(c) << ", element " << i << ", x " << x[i];
    }
  }
}

TEST_P(ExpTest, GradientMatchesNumeric) {
  for (const ExpCase& c : kCases) {
    SCOPED_TRACE(ExpText(c));
    Blob bottom(TestContext(), GetParam()), top(TestContext());
    FillGaussian(&bottom, 0.f, 1.f, 11);
    auto layer = MakeLayer(ExpText(c));
    layer->SetUp({&bottom}, {&top});
    CheckGradient(*layer, {&bottom}, {&top});
  }
}

TEST(Exp, RejectsNonPositiveBase) {
  for (const char* base : {"0", "-2"}) {
    Blob x(TestContext(), {3}), y(TestContext());
    auto layer = MakeLayer(std::string("type: 'Exp' exp_param { base: ") + base + " }");
    EXPECT_THROW(layer->SetUp({&x}, {&y}), Error) << "base " << base;
  }
}

// dy/dx = ln(base) * scale * y needs only y, so in place works as in Caffe.
TEST(Exp, InPlaceMatchesOutOfPlace) {
  const ExpCase c{2.f, 0.7f, 1.2f};
  ExpectInPlaceMatchesOutOfPlace(ExpText(c), {3, 13},
                                 [](Blob* x) { FillGaussian(x, 0.f, 1.f, 5); });
}

INSTANTIATE_TEST_SUITE_P(OddShapes, ExpTest,
                         ::testing::Values(std::vector<int>{1}, std::vector<int>{3, 13},
                                           std::vector<int>{2, 3, 13, 1},
                                           std::vector<int>{127, 3}));

}  // namespace test
}  // namespace dlcaffe
