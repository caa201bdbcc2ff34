// Switch: the top is the bottom the run-time condition picks, shape and
// values (an empty one included); the gradient goes to that bottom, zero to
// the other; numerical gradients for both choices.
#include <gtest/gtest.h>

#include <vector>

#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

TEST(Switch, PicksTheBottomTheConditionNames) {
  Blob condition(TestContext(), std::vector<int>{}), a(TestContext(), {2, 3}),
      b(TestContext(), {4}), empty(TestContext(), {0}), top(TestContext());
  FillGaussian(&a, 0.f, 1.f, 1);
  FillGaussian(&b, 0.f, 1.f, 2);
  auto layer = MakeLayer("type: 'Switch'");
  layer->SetUp({&condition, &a, &b}, {&top});
  for (float c : {1.f, 0.f, -3.f}) {
    condition.WriteData({c});
    layer->Reshape({&condition, &a, &b}, {&top});
    layer->Forward({&condition, &a, &b}, {&top});
    const Blob& want = c != 0.f ? a : b;
    EXPECT_EQ(top.shape(), want.shape());
    EXPECT_EQ(top.ReadData(), want.ReadData());
    std::vector<float> dy(top.count());
    for (size_t i = 0; i < dy.size(); ++i) dy[i] = float(i) + 1.f;
    top.WriteDiff(dy);
    a.SetDiff(9.f);
    b.SetDiff(9.f);
    layer->Backward({&top}, {false, true, true}, {&condition, &a, &b});
    EXPECT_EQ((c != 0.f ? a : b).ReadDiff(), dy);
    EXPECT_EQ((c != 0.f ? b : a).ReadDiff(), std::vector<float>((c != 0.f ? b : a).count(), 0.f));
  }
  // An empty branch (torchvision's "no boxes") is taken as it is.
  condition.WriteData({1.f});
  layer->Reshape({&condition, &empty, &b}, {&top});
  layer->Forward({&condition, &empty, &b}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{0}));
}

TEST(Switch, GradientMatchesNumeric) {
  for (float c : {1.f, 0.f}) {
    Blob condition(TestContext(), {1}), a(TestContext(), {2, 3}), b(TestContext(), {2, 3}),
        top(TestContext());
    FillGaussian(&a, 0.f, 1.f, 3);
    FillGaussian(&b, 0.f, 1.f, 4);
    condition.WriteData({c});
    auto layer = MakeLayer("type: 'Switch'");
    layer->SetUp({&condition, &a, &b}, {&top});
    CheckGradient(*layer, {&condition, &a, &b}, {&top}, {1, 2});
  }
}

}  // namespace test
}  // namespace dlcaffe
