#include <gtest/gtest.h>

#include <cmath>

#include "util/gradient_checker.hpp"
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
  const std::vector<int> shape{3, 13};
  Blob x(TestContext(), shape), y(TestContext());
  FillGaussian(&x, 0.f, 2.f, 5);
  std::vector<float> dy(x.count());
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
  auto layer = MakeLayer("type: 'BNLL'");
  layer->SetUp({&x}, {&y});
  layer->Forward({&x}, {&y});
  y.WriteDiff(dy);
  layer->Backward({&y}, {true}, {&x});

  Blob blob(TestContext(), shape);
  blob.WriteData(x.ReadData());
  auto in_place = MakeLayer("type: 'BNLL'");
  in_place->SetUp({&blob}, {&blob});
  in_place->Forward({&blob}, {&blob});
  EXPECT_EQ(blob.ReadData(), y.ReadData());
  blob.WriteDiff(dy);
  in_place->Backward({&blob}, {true}, {&blob});
  EXPECT_EQ(blob.ReadDiff(), x.ReadDiff());
}

INSTANTIATE_TEST_SUITE_P(OddShapes, BNLLTest,
                         ::testing::Values(std::vector<int>{1}, std::vector<int>{3, 13},
                                           std::vector<int>{2, 3, 13, 1},
                                           std::vector<int>{127, 3}));

}  // namespace test
}  // namespace dlcaffe
