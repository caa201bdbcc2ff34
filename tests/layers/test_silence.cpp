#include <gtest/gtest.h>

#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

TEST(Silence, ForwardLeavesTheBottomsAlone) {
  Blob a(TestContext(), {3, 13}), b(TestContext(), {1});
  FillGaussian(&a, 0.f, 1.f, 2);
  FillGaussian(&b, 0.f, 1.f, 3);
  const std::vector<float> xa = a.ReadData(), xb = b.ReadData();
  auto layer = MakeLayer("type: 'Silence'");
  layer->SetUp({&a, &b}, {});
  layer->Forward({&a, &b}, {});
  EXPECT_EQ(a.ReadData(), xa);
  EXPECT_EQ(b.ReadData(), xb);
}

TEST(Silence, BackwardZeroesTheDiffsThatPropagate) {
  Blob a(TestContext(), {3, 13}), b(TestContext(), {2, 1, 7});
  auto layer = MakeLayer("type: 'Silence'");
  layer->SetUp({&a, &b}, {});
  a.SetDiff(3.f);
  b.SetDiff(4.f);
  layer->Backward({}, {true, false}, {&a, &b});
  EXPECT_EQ(a.ReadDiff(), std::vector<float>(39, 0.f));
  EXPECT_EQ(b.ReadDiff(), std::vector<float>(14, 4.f));
}

TEST(Silence, GradientMatchesNumeric) {
  Blob a(TestContext(), {3, 13});
  FillGaussian(&a, 0.f, 1.f, 4);
  auto layer = MakeLayer("type: 'Silence'");
  layer->SetUp({&a}, {});
  CheckGradient(*layer, {&a}, {});
}

}  // namespace test
}  // namespace dlcaffe
