#include <gtest/gtest.h>

#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

class EuclideanLossTest : public ::testing::TestWithParam<std::vector<int>> {};

TEST_P(EuclideanLossTest, ForwardMatchesReference) {
  Blob a(TestContext(), GetParam()), b(TestContext(), GetParam()), loss(TestContext());
  FillGaussian(&a, 0.f, 1.f, 3);
  FillGaussian(&b, 0.5f, 2.f, 4);
  auto layer = MakeLayer("type: 'EuclideanLoss'");
  layer->SetUp({&a, &b}, {&loss});
  ASSERT_EQ(loss.count(), 1);
  layer->Forward({&a, &b}, {&loss});
  std::vector<float> x = a.ReadData(), y = b.ReadData();
  double expected = 0;
  for (size_t i = 0; i < x.size(); ++i) expected += double(x[i] - y[i]) * (x[i] - y[i]);
  expected /= 2.0 * GetParam()[0];
  EXPECT_NEAR(loss.ReadData()[0], expected, 1e-5 * std::max(1.0, expected));
}

TEST_P(EuclideanLossTest, GradientMatchesNumericForBothInputs) {
  Blob a(TestContext(), GetParam()), b(TestContext(), GetParam()), loss(TestContext());
  FillGaussian(&a, 0.f, 1.f, 5);
  FillGaussian(&b, 0.f, 1.f, 6);
  auto layer = MakeLayer("type: 'EuclideanLoss'");
  layer->SetUp({&a, &b}, {&loss});
  CheckGradient(*layer, {&a, &b}, {&loss});
}

TEST(EuclideanLoss, LossWeightScalesTheGradient) {
  Blob a(TestContext(), {3, 5}), b(TestContext(), {3, 5}), loss(TestContext());
  FillGaussian(&a, 0.f, 1.f, 7);
  FillGaussian(&b, 0.f, 1.f, 8);
  auto layer = MakeLayer("type: 'EuclideanLoss' loss_weight: 2.5");
  layer->SetUp({&a, &b}, {&loss});
  EXPECT_FLOAT_EQ(layer->loss(0), 2.5f);
  EXPECT_FLOAT_EQ(loss.ReadDiff()[0], 2.5f);  // the top diff holds the weight
  layer->Forward({&a, &b}, {&loss});
  layer->Backward({&loss}, {true, false}, {&a, &b});
  std::vector<float> x = a.ReadData(), y = b.ReadData(), dx = a.ReadDiff();
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(dx[i], 2.5f * (x[i] - y[i]) / 3.f, 1e-6) << "element " << i;
}

TEST(EuclideanLoss, MismatchedInputsAreAClearError) {
  Blob a(TestContext(), {3, 5}), b(TestContext(), {3, 4}), loss(TestContext());
  auto layer = MakeLayer("name: 'l2' type: 'EuclideanLoss'");
  try {
    layer->SetUp({&a, &b}, {&loss});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'l2'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("3 4"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(OddShapes, EuclideanLossTest,
                         ::testing::Values(std::vector<int>{1, 1}, std::vector<int>{3, 13},
                                           std::vector<int>{13, 3, 2},
                                           std::vector<int>{127, 1}));

}  // namespace test
}  // namespace dlcaffe
