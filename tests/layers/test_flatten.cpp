#include <gtest/gtest.h>

#include "dlcaffe/error.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

static std::string FlattenText(int axis, int end_axis) {
  return "type: 'Flatten' flatten_param { axis: " + std::to_string(axis) +
         " end_axis: " + std::to_string(end_axis) + " }";
}

// SetUp's error message, or "" when it succeeds.
static std::string SetUpError(const std::string& text, Blob* bottom, Blob* top) {
  try {
    MakeLayer(text)->SetUp({bottom}, {top});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Flatten, ShapesFollowAxisAndEndAxis) {
  struct Case {
    int axis, end_axis;
    std::vector<int> expected;
  };
  const std::vector<Case> cases = {
      {1, -1, {3, 105}},      // the defaults
      {0, -1, {315}},
      {2, -1, {3, 5, 21}},
      {0, 1, {15, 7, 3}},
      {1, 2, {3, 35, 3}},
      {-3, -2, {3, 35, 3}},   // negative axes count from the end
      {2, 2, {3, 5, 7, 3}},   // a single axis: shape unchanged
      {-1, -1, {3, 5, 7, 3}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(FlattenText(c.axis, c.end_axis));
    Blob bottom(TestContext(), {3, 5, 7, 3}), top(TestContext());
    FillGaussian(&bottom, 0.f, 1.f, 2);
    auto layer = MakeLayer(FlattenText(c.axis, c.end_axis));
    layer->SetUp({&bottom}, {&top});
    EXPECT_EQ(top.shape(), c.expected);
    layer->Forward({&bottom}, {&top});
    EXPECT_EQ(top.ReadData(), bottom.ReadData());  // row-major order is kept
  }
  Blob bottom(TestContext(), {4, 1}), top(TestContext());
  MakeLayer("type: 'Flatten'")->SetUp({&bottom}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{4, 1}));
}

TEST(Flatten, TopSharesTheBottomBuffers) {
  Blob bottom(TestContext(), {2, 3, 13}), top(TestContext());
  auto layer = MakeLayer("type: 'Flatten'");
  layer->SetUp({&bottom}, {&top});
  EXPECT_EQ(top.data(), bottom.data());
  EXPECT_EQ(top.diff(), bottom.diff());
  // Still shared after the bottom grows into new storage.
  bottom.Reshape({5, 3, 13});
  layer->Reshape({&bottom}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{5, 39}));
  EXPECT_EQ(top.data(), bottom.data());
  EXPECT_EQ(top.diff(), bottom.diff());
  // Backward leaves the shared diff as the next layer wrote it.
  FillGaussian(&bottom, 0.f, 1.f, 4);
  layer->Forward({&bottom}, {&top});
  std::vector<float> dy(top.count());
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.5f * float(i % 9) - 2.f;
  top.WriteDiff(dy);
  layer->Backward({&top}, {true}, {&bottom});
  EXPECT_EQ(bottom.ReadDiff(), dy);
}

TEST(Flatten, GradientMatchesNumeric) {
  Blob bottom(TestContext(), {3, 5, 1, 7}), top(TestContext());
  FillGaussian(&bottom, 0.f, 1.f, 6);
  auto layer = MakeLayer(FlattenText(1, 2));
  layer->SetUp({&bottom}, {&top});
  CheckGradient(*layer, {&bottom}, {&top});
}

TEST(Flatten, BadParametersAreErrors) {
  Blob bottom(TestContext(), {2, 3, 5}), top(TestContext());
  std::string error = SetUpError(FlattenText(3, -1), &bottom, &top);
  EXPECT_NE(error.find("layer 'test_layer' (Flatten)"), std::string::npos) << error;
  EXPECT_NE(error.find("axis 3 is out of range"), std::string::npos) << error;
  error = SetUpError(FlattenText(0, -4), &bottom, &top);
  EXPECT_NE(error.find("end_axis -4 is out of range"), std::string::npos) << error;
  error = SetUpError(FlattenText(2, 1), &bottom, &top);
  EXPECT_NE(error.find("comes after end_axis"), std::string::npos) << error;
  error = SetUpError("type: 'Flatten'", &bottom, &bottom);
  EXPECT_NE(error.find("in place"), std::string::npos) << error;
}

}  // namespace test
}  // namespace dlcaffe
