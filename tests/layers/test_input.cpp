#include <gtest/gtest.h>

#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

TEST(Input, OneShapeForEveryTop) {
  Blob a(TestContext()), b(TestContext());
  auto layer = MakeLayer(
      "type: 'Input' input_param { shape { dim: 3 dim: 2 dim: 7 dim: 5 } }");
  layer->SetUp({}, {&a, &b});
  EXPECT_EQ(a.shape(), (std::vector<int>{3, 2, 7, 5}));
  EXPECT_EQ(b.shape(), (std::vector<int>{3, 2, 7, 5}));
  EXPECT_TRUE(layer->blobs().empty());
}

TEST(Input, OneShapePerTop) {
  Blob data(TestContext()), label(TestContext()), scalar(TestContext());
  auto layer = MakeLayer(
      "type: 'Input' input_param { shape { dim: 1 dim: 3 dim: 13 dim: 13 } "
      "shape { dim: 127 } shape { } }");
  layer->SetUp({}, {&data, &label, &scalar});
  EXPECT_EQ(data.shape(), (std::vector<int>{1, 3, 13, 13}));
  EXPECT_EQ(label.shape(), std::vector<int>{127});
  EXPECT_EQ(scalar.num_axes(), 0);
}

// Forward leaves the data the application wrote; Reshape keeps the shapes.
TEST(Input, ForwardAndBackwardDoNothing) {
  Blob top(TestContext());
  auto layer = MakeLayer("type: 'Input' input_param { shape { dim: 2 dim: 3 } }");
  layer->SetUp({}, {&top});
  const std::vector<float> values = {1, 2, 3, 4, 5, 6};
  top.WriteData(values);
  top.SetDiff(9.f);
  layer->Reshape({}, {&top});
  layer->Forward({}, {&top});
  layer->Backward({&top}, {}, {});
  EXPECT_EQ(top.shape(), (std::vector<int>{2, 3}));
  EXPECT_EQ(top.ReadData(), values);
  for (float d : top.ReadDiff()) EXPECT_EQ(d, 9.f);
}

TEST(Input, NoShapeLeavesTheTopsAlone) {
  Blob top(TestContext(), {4, 5});
  auto layer = MakeLayer("type: 'Input'");
  layer->SetUp({}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{4, 5}));
}

TEST(Input, ShapeCountMismatchIsAUserError) {
  Blob a(TestContext()), b(TestContext()), c(TestContext());
  auto layer = MakeLayer(
      "type: 'Input' input_param { shape { dim: 1 } shape { dim: 2 } }");
  EXPECT_THROW(layer->SetUp({}, {&a, &b, &c}), Error);
  Blob bottom(TestContext(), {1});
  auto with_bottom = MakeLayer("type: 'Input' input_param { shape { dim: 1 } }");
  EXPECT_THROW(with_bottom->SetUp({&bottom}, {&a}), Error);
  auto negative = MakeLayer("type: 'Input' input_param { shape { dim: -2 } }");
  EXPECT_THROW(negative->SetUp({}, {&a}), Error);
}

}  // namespace test
}  // namespace dlcaffe
