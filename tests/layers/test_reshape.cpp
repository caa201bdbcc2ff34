#include <gtest/gtest.h>

#include "dlcaffe/error.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

// "type: 'Reshape' reshape_param { shape { dim: ... } <extra> }"
static std::string ReshapeText(const std::vector<int>& dims, const std::string& extra = "") {
  std::string text = "type: 'Reshape' reshape_param { shape {";
  for (int d : dims) text += " dim: " + std::to_string(d);
  return text + " } " + extra + " }";
}

static std::string SetUpError(const std::string& text, Blob* bottom, Blob* top) {
  try {
    MakeLayer(text)->SetUp({bottom}, {top});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Reshape, ShapeInference) {
  struct Case {
    std::vector<int> dims;
    std::string extra;
    std::vector<int> expected;
  };
  // Bottom 2 x 3 x 6 x 5 (180 elements), as in Caffe's tests.
  const std::vector<Case> cases = {
      {{6, 30}, "", {6, 30}},
      {{0, -1}, "", {2, 90}},                             // copy, infer
      {{0, 3, 2, -1}, "", {2, 3, 2, 15}},
      {{0, 0, 0, 0}, "", {2, 3, 6, 5}},                   // copy every axis
      {{-1}, "", {180}},
      {{3, 3, -1}, "axis: 1", {2, 3, 3, 10}},             // replace axes 1..end
      {{-1}, "axis: 1 num_axes: 2", {2, 18, 5}},          // flatten the middle
      {{1, 1, 1}, "axis: 0 num_axes: 0", {1, 1, 1, 2, 3, 6, 5}},  // insert axes
      {{1, 1, 1}, "axis: 2 num_axes: 0", {2, 3, 1, 1, 1, 6, 5}},
      {{1, 1, 1}, "axis: -1 num_axes: 0", {2, 3, 6, 5, 1, 1, 1}},
      {{-1}, "axis: -3 num_axes: 2", {2, 3, 30}},         // -3: before the last 2 axes
      {{0, -1}, "axis: -3 num_axes: 2", {2, 3, 6, 5}},
      {{1, 0, -1}, "axis: 1 num_axes: 2", {2, 1, 6, 3, 5}},  // 0 copies bottom axis 2
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(ReshapeText(c.dims, c.extra));
    Blob bottom(TestContext(), {2, 3, 6, 5}), top(TestContext());
    FillGaussian(&bottom, 0.f, 1.f, 8);
    auto layer = MakeLayer(ReshapeText(c.dims, c.extra));
    layer->SetUp({&bottom}, {&top});
    EXPECT_EQ(top.shape(), c.expected);
    layer->Forward({&bottom}, {&top});
    EXPECT_EQ(top.ReadData(), bottom.ReadData());
  }
}

TEST(Reshape, TopSharesTheBottomBuffers) {
  Blob bottom(TestContext(), {3, 13}), top(TestContext());
  auto layer = MakeLayer(ReshapeText({-1, 1}));
  layer->SetUp({&bottom}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{39, 1}));
  EXPECT_EQ(top.data(), bottom.data());
  EXPECT_EQ(top.diff(), bottom.diff());
  // The inferred dimension follows a larger bottom, and the storage stays shared.
  bottom.Reshape({7, 13});
  layer->Reshape({&bottom}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{91, 1}));
  EXPECT_EQ(top.data(), bottom.data());
  EXPECT_EQ(top.diff(), bottom.diff());
  std::vector<float> dy(top.count());
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = float(i % 5) - 1.5f;
  top.WriteDiff(dy);
  layer->Backward({&top}, {true}, {&bottom});
  EXPECT_EQ(bottom.ReadDiff(), dy);
}

TEST(Reshape, GradientMatchesNumeric) {
  Blob bottom(TestContext(), {3, 1, 13}), top(TestContext());
  FillGaussian(&bottom, 0.f, 1.f, 9);
  auto layer = MakeLayer(ReshapeText({13, -1}));
  layer->SetUp({&bottom}, {&top});
  CheckGradient(*layer, {&bottom}, {&top});
}

TEST(Reshape, BadShapesAreErrors) {
  Blob bottom(TestContext(), {2, 3, 6, 5}), top(TestContext());
  struct Case {
    std::string text, message;
  };
  const std::vector<Case> cases = {
      {ReshapeText({-1, 3, -1}), "more than one -1"},
      {ReshapeText({7, -1}), "not divisible by the product 7"},
      {ReshapeText({0, 7, -1}), "not divisible by the product 14"},
      {ReshapeText({2, 3, 5}), "gives 30 elements"},
      {ReshapeText({-2, 90}), "dimension -2"},
      {ReshapeText({1, 1, 0}, "axis: 2 num_axes: 0"), "has a 0 at position 2"},
      {ReshapeText({-1}, "num_axes: -2"), "num_axes must be >= 0"},
      {ReshapeText({-1}, "axis: 5"), "axis 5 is out of range"},
      {ReshapeText({-1}, "axis: -6"), "axis -6 is out of range"},
      {ReshapeText({-1}, "axis: 2 num_axes: 3"), "out of range"},
  };
  for (const Case& c : cases) {
    const std::string error = SetUpError(c.text, &bottom, &top);
    EXPECT_NE(error.find("layer 'test_layer' (Reshape)"), std::string::npos) << c.text;
    EXPECT_NE(error.find(c.message), std::string::npos) << c.text << ": " << error;
  }
  EXPECT_NE(SetUpError(ReshapeText({-1}), &bottom, &bottom).find("in place"),
            std::string::npos);
}

}  // namespace test
}  // namespace dlcaffe
