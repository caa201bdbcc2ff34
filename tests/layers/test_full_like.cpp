// FullLike: the bottom's shape filled with the value, following reshapes
// (empty included); no gradient reaches the bottom.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

TEST(FullLike, FillsTheBottomsShape) {
  Blob x(TestContext(), {3, 5}), top(TestContext());
  x.SetData(std::nanf(""));  // never read
  auto layer = MakeLayer("type: 'FullLike' full_like_param { value: -2.5 }");
  layer->SetUp({&x}, {&top});
  layer->Forward({&x}, {&top});
  EXPECT_EQ(top.ReadData(), std::vector<float>(15, -2.5f));
  x.Reshape({7});
  layer->Reshape({&x}, {&top});
  layer->Forward({&x}, {&top});
  EXPECT_EQ(top.ReadData(), std::vector<float>(7, -2.5f));
  top.SetDiff(3.f);
  x.SetDiff(9.f);
  layer->Backward({&top}, {true}, {&x});
  EXPECT_EQ(x.ReadDiff(), std::vector<float>(7, 0.f));
}

// With dims: fixed sizes and -1s taking the bottom's axes (Faster R-CNN's
// pooled regions: region count x C x 7 x 7).
TEST(FullLike, DimsTakeTheBottomsAxes) {
  Blob x(TestContext(), {5, 3}), top(TestContext());
  auto layer = MakeLayer(
      "type: 'FullLike' full_like_param { value: 1.5 dim: -1 dim: 4 dim: -1 bottom_axis: 0 "
      "bottom_axis: 1 }");
  layer->SetUp({&x}, {&top});
  layer->Forward({&x}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{5, 4, 3}));
  EXPECT_EQ(top.ReadData(), std::vector<float>(60, 1.5f));
  x.Reshape(std::vector<int>{0, 3});
  layer->Reshape({&x}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{0, 4, 3}));
}

}  // namespace test
}  // namespace dlcaffe
