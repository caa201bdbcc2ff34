#include <gtest/gtest.h>

#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

TEST(Split, TopsShareTheBottomData) {
  for (int tops : {1, 2, 3}) {
    Blob bottom(TestContext(), {3, 2, 7, 5});
    std::vector<Blob> storage;
    for (int i = 0; i < tops; ++i) storage.emplace_back(TestContext());
    std::vector<Blob*> top;
    for (Blob& b : storage) top.push_back(&b);
    FillGaussian(&bottom, 0.f, 1.f, 3);
    auto layer = MakeLayer("type: 'Split'");
    layer->SetUp({&bottom}, top);
    layer->Forward({&bottom}, top);
    for (Blob* t : top) {
      EXPECT_EQ(t->shape(), bottom.shape());
      EXPECT_TRUE(t->SharesDataWith(bottom));
      EXPECT_EQ(t->ReadData(), bottom.ReadData());
    }
  }
}

TEST(Split, BackwardSumsTheTopDiffs) {
  for (int tops : {1, 2, 3, 4}) {
    SCOPED_TRACE(std::to_string(tops) + " tops");
    Blob bottom(TestContext(), {127, 3});
    std::vector<Blob> storage;
    for (int i = 0; i < tops; ++i) storage.emplace_back(TestContext());
    std::vector<Blob*> top;
    for (Blob& b : storage) top.push_back(&b);
    auto layer = MakeLayer("type: 'Split'");
    layer->SetUp({&bottom}, top);
    layer->Forward({&bottom}, top);
    std::vector<float> expected(bottom.count(), 0.f);
    for (int t = 0; t < tops; ++t) {
      std::vector<float> d(bottom.count());
      for (size_t i = 0; i < d.size(); ++i) d[i] = float((i * (t + 3)) % 11) - 5.f + 0.25f * t;
      top[t]->WriteDiff(d);
      for (size_t i = 0; i < d.size(); ++i) expected[i] += d[i];
    }
    bottom.SetDiff(100.f);  // overwritten, not accumulated
    layer->Backward(top, {true}, {&bottom});
    std::vector<float> got = bottom.ReadDiff();
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], expected[i]) << i;
  }
}

TEST(Split, GradientMatchesNumeric) {
  Blob bottom(TestContext(), {3, 2, 7, 5}), a(TestContext()), b(TestContext()),
      c(TestContext());
  FillGaussian(&bottom, 0.f, 1.f, 5);
  auto layer = MakeLayer("type: 'Split'");
  layer->SetUp({&bottom}, {&a, &b, &c});
  CheckGradient(*layer, {&bottom}, {&a, &b, &c});
}

TEST(Split, FollowsABottomThatGrows) {
  Blob bottom(TestContext(), {2, 3}), a(TestContext()), b(TestContext());
  auto layer = MakeLayer("type: 'Split'");
  layer->SetUp({&bottom}, {&a, &b});
  bottom.Reshape({1, 3, 13, 13});
  FillGaussian(&bottom, 0.f, 1.f, 7);
  layer->Reshape({&bottom}, {&a, &b});
  layer->Forward({&bottom}, {&a, &b});
  EXPECT_EQ(a.shape(), bottom.shape());
  EXPECT_EQ(b.ReadData(), bottom.ReadData());
}

TEST(Split, InPlaceIsAUserError) {
  Blob bottom(TestContext(), {2, 3}), a(TestContext());
  auto layer = MakeLayer("type: 'Split'");
  EXPECT_THROW(layer->SetUp({&bottom}, {&a, &bottom}), Error);
}

}  // namespace test
}  // namespace dlcaffe
