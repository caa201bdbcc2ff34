#include <gtest/gtest.h>

#include <cmath>

#include "util/gradient_checker.hpp"
#include "util/in_place_check.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

class BNLLTest : public ::testing::TestWithParam<std::vector<int>> {};

// log(1 + exp(x)) in double; exp(x) does not overflow for the inputs used.
static double ReferenceBNLL(double x) { return std::log1p(std::exp(x)); }

TEST_P(BNLLTest, ForwardMatchesReference) {
  Blob bottom(TestContext(), GetParam()), top(TestContext());
  FillGaussian(&bottom, 0.f, 10.f, 7);  // both branches, far into each tail
  auto layer = MakeLayer("type: 'BNLL'");
  layer->SetUp({&bottom}, {&top});
  ASSERT_EQ(top.shape(), bottom.shape());
  layer->Forward({&bottom}, {&top});
  std::vector<float> x = bottom.ReadData(), y = top.ReadData();
  // exp and log1p are accurate to a few ulp: 1e-6 relative to max(1, y).
  for (size_t i = 0; i < x.size(); ++i) {
    const double expected = ReferenceBNLL(x[i]);
    ASSERT_NEAR(y[i], expected, 1e-6 * std::max(1.0, expected))
        << "element " << i << ", x " << x[i];
  }
}

TEST_P(BNLLTest, GradientMatchesNumeric) {
  Blob bottom(TestContext(), GetParam()), top(TestContext());
  FillGaussian(&bottom, 0.f, 2.f, 11);
  auto layer = MakeLayer("type: 'BNLL'");
  layer->SetUp({&bottom}, {&top});
  CheckGradient(*layer, {&bottom}, {&top});
}

// The gradient needs x; in place, the layer keeps a copy of it.
TEST(BNLL, InPlaceMatchesOutOfPlace) {
  ExpectInPlaceMatchesOutOfPlace("type: 'BNLL'", {3, 13},
                                 [](Blob* x) { FillGaussian(x, 0.f, 2.f, 5); });
}

INSTANTIATE_TEST_SUITE_P(OddShapes, BNLLTest,
                         ::testing::Values(std::vector<int>{1}, std::vector<int>{3, 13},
                                           std::vector<int>{2, 3, 13, 1},
                                           std::vector<int>{127, 3}));

}  // namespace test
}  // namespace dlcaffe
