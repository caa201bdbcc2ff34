#include <gtest/gtest.h>

#include <cmath>

#include "util/gradient_checker.hpp"
#include "util/in_place_check.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

class SigmoidTest : public ::testing::TestWithParam<std::vector<int>> {};

static double ReferenceSigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

TEST_P(SigmoidTest, ForwardMatchesReference) {
  Blob bottom(TestContext(), GetParam()), top(TestContext());
  FillGaussian(&bottom, 0.f, 4.f, 7);  // reaches the saturated tails
  auto layer = MakeLayer("type: 'Sigmoid'");
  layer->SetUp({&bottom}, {&top});
  ASSERT_EQ(top.shape(), bottom.shape());
  layer->Forward({&bottom}, {&top});
  std::vector<float> x = bottom.ReadData(), y = top.ReadData();
  // OpenCL's tanh is accurate to a few ulp: 1e-6 absolute on values in (0, 1).
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_NEAR(y[i], ReferenceSigmoid(x[i]), 1e-6) << "element " << i << ", x " << x[i];
}

TEST_P(SigmoidTest, GradientMatchesNumeric) {
  Blob bottom(TestContext(), GetParam()), top(TestContext());
  FillGaussian(&bottom, 0.f, 2.f, 11);
  auto layer = MakeLayer("type: 'Sigmoid'");
  layer->SetUp({&bottom}, {&top});
  CheckGradient(*layer, {&bottom}, {&top});
}

TEST(Sigmoid, InPlaceMatchesOutOfPlace) {
  ExpectInPlaceMatchesOutOfPlace("type: 'Sigmoid'", {3, 13},
                                 [](Blob* x) { FillGaussian(x, 0.f, 2.f, 5); });
}

INSTANTIATE_TEST_SUITE_P(OddShapes, SigmoidTest,
                         ::testing::Values(std::vector<int>{1}, std::vector<int>{3, 13},
                                           std::vector<int>{2, 3, 13, 1},
                                           std::vector<int>{127, 3}));

}  // namespace test
}  // namespace dlcaffe
