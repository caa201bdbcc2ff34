#include <gtest/gtest.h>

#include <cmath>

#include "util/gradient_checker.hpp"
#include "util/in_place_check.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

class SwishTest : public ::testing::TestWithParam<std::vector<int>> {};

static double ReferenceSwish(double x, double beta) { return x / (1.0 + std::exp(-beta * x)); }

static std::string SwishText(float beta) {
  return "type: 'Swish' swish_param { beta: " + std::to_string(beta) + " }";
}

TEST_P(SwishTest, ForwardMatchesReference) {
  for (float beta : {1.f, 0.5f, 2.f}) {
    Blob bottom(TestContext(), GetParam()), top(TestContext());
    FillGaussian(&bottom, 0.f, 3.f, 7);
    auto layer = MakeLayer(SwishText(beta));
    layer->SetUp({&bottom}, {&top});
    ASSERT_EQ(top.shape(), bottom.shape());
    layer->Forward({&bottom}, {&top});
    std::vector<float> x = bottom.ReadData(), y = top.ReadData();
    // tanh is accurate to a few ulp: 1e-6 relative to max(1, |y|).
    for (size_t i = 0; i < x.size(); ++i) {
      const double expected = ReferenceSwish(x[i], beta);
      ASSERT_NEAR(y[i], expected, 1e-6 * std::max(1.0, std::fabs(expected)))
          << "beta " << beta << ", element " << i << ", x " << x[i];
    }
  }
}

TEST_P(SwishTest, GradientMatchesNumeric) {
  for (float beta : {1.f, 0.5f, 2.f}) {
    SCOPED_TRACE(SwishText(beta));
    Blob bottom(TestContext(), GetParam()), top(TestContext());
    FillGaussian(&bottom, 0.f, 2.f, 11);
    auto layer = MakeLayer(SwishText(beta));
    layer->SetUp({&bottom}, {&top});
    CheckGradient(*layer, {&bottom}, {&top});
  }
}

// The gradient needs only y and the kept sigmoid, so in place works as in Caffe.
TEST(Swish, InPlaceMatchesOutOfPlace) {
  ExpectInPlaceMatchesOutOfPlace(SwishText(1.5f), {3, 13},
                                 [](Blob* x) { FillGaussian(x, 0.f, 2.f, 5); });
}

INSTANTIATE_TEST_SUITE_P(OddShapes, SwishTest,
                         ::testing::Values(std::vector<int>{1}, std::vector<int>{3, 13},
                                           std::vector<int>{2, 3, 13, 1},
                                           std::vector<int>{127, 3}));

}  // namespace test
}  // namespace dlcaffe
