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

}  // namespace test
}  // namespace dlcaffe
