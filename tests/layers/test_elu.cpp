#include <gtest/gtest.h>

#include <cmath>

#include "util/gradient_checker.hpp"
#include "util/in_place_check.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

class ELUTest : public ::testing::TestWithParam<std::vector<int>> {};

static double ReferenceELU(double x, double alpha) {
  return x > 0 ? x : alpha * (std::exp(x) - 1.0);
}

static std::string ELUText(float alpha) {
  return "type: 'ELU' elu_param { alpha: " + std::to_string(alpha) + " }";
}

TEST_P(ELUTest, ForwardMatchesReference) {
  for (float alpha : {1.f, 0.5f, -0.3f}) {
    Blob bottom(TestContext(), GetParam()), top(TestContext());
    FillGaussian(&bottom, 0.f, 2.f, 7);
    auto layer = MakeLayer(ELUText(alpha));
    layer->SetUp({&bottom}, {&top});
    ASSERT_EQ(top.shape(), bottom.shape());
    layer->Forward({&bottom}, {&top});
    std::vector<float> x = bottom.ReadData(), y = top.ReadData();
    // expm1 is accurate to a few ulp: 1e-6 relative to max(1, |y|).
    for (size_t i = 0; i < x.size(); ++i) {
      const double expected = ReferenceELU(x[i], alpha);
      ASSERT_NEAR(y[i], expected, 1e-6 * std::max(1.0, std::fabs(expected)))
          << "alpha " << alpha << ", element " << i << ", x " << x[i];
    }
  }
}

TEST_P(ELUTest, GradientMatchesNumeric) {
  for (float alpha : {1.f, 0.5f, -0.3f}) {
    Blob bottom(TestContext(), GetParam()), top(TestContext());
    FillGaussian(&bottom, 0.f, 1.f, 11);
    auto layer = MakeLayer(ELUText(alpha));
    layer->SetUp({&bottom}, {&top});
    GradientCheckOptions options;
    options.kink_range = 0.02f;  // the slope jumps from alpha to 1 at 0 (step 0.01)
    CheckGradient(*layer, {&bottom}, {&top}, {}, options);
  }
}

// In place, y stands in for x in backward: y > 0 exactly where x > 0 for
// alpha >= 0; a negative alpha makes the layer keep a copy of x.
TEST(ELU, InPlaceMatchesOutOfPlace) {
  for (float alpha : {1.f, 0.f, -0.3f})
    ExpectInPlaceMatchesOutOfPlace(ELUText(alpha), {3, 13},
                                   [](Blob* x) { FillGaussian(x, 0.f, 1.f, 5); });
}

INSTANTIATE_TEST_SUITE_P(OddShapes, ELUTest,
                         ::testing::Values(std::vector<int>{1}, std::vector<int>{3, 13},
                                           std::vector<int>{2, 3, 13, 1},
                                           std::vector<int>{127, 3}));

}  // namespace test
}  // namespace dlcaffe
