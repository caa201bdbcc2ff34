#include <gtest/gtest.h>

#include <cmath>

#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

// Softmax of x along `axis`, in double precision.
std::vector<float> ReferenceSoftmax(const std::vector<float>& x, const std::vector<int>& shape,
                                    int axis) {
  int outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= shape[i];
  for (size_t i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
  const int channels = shape[axis];
  std::vector<float> y(x.size());
  for (int o = 0; o < outer; ++o)
    for (int s = 0; s < inner; ++s) {
      auto at = [&](int c) { return (o * channels + c) * inner + s; };
      double maxval = -INFINITY, sum = 0;
      for (int c = 0; c < channels; ++c) maxval = std::max<double>(maxval, x[at(c)]);
      for (int c = 0; c < channels; ++c) sum += std::exp(x[at(c)] - maxval);
      for (int c = 0; c < channels; ++c) y[at(c)] = float(std::exp(x[at(c)] - maxval) / sum);
    }
  return y;
}

std::string SoftmaxProto(int axis) {
  return "type: 'Softmax' softmax_param { axis: " + std::to_string(axis) + " }";
}

struct SoftmaxCase {
  std::vector<int> shape;
  int axis;
  int canonical_axis;
};

const SoftmaxCase kCases[] = {
    {{2, 10, 2, 3}, 1, 1},  // Caffe's test shape
    {{3, 2, 7, 5}, 0, 0},   {{3, 2, 7, 5}, 2, 2},   {{3, 2, 7, 5}, -1, 3},
    {{127, 10}, 1, 1},      {{1, 3, 13, 13}, 1, 1}, {{5, 1}, 1, 1},  // one class
    // Rows of many channels: a work-group per row (more channels than it
    // has work-items, and not a multiple of them).
    {{3, 2, 700}, 2, 2},    {{2, 259}, -1, 1},
};

}  // namespace

TEST(Softmax, ForwardMatchesReference) {
  for (const SoftmaxCase& c : kCases) {
    SCOPED_TRACE("axis " + std::to_string(c.axis));
    Blob bottom(TestContext(), c.shape), top(TestContext());
    FillGaussian(&bottom, 0.f, 3.f, 3);
    auto layer = MakeLayer(SoftmaxProto(c.axis));
    layer->SetUp({&bottom}, {&top});
    ASSERT_EQ(top.shape(), bottom.shape());
    layer->Forward({&bottom}, {&top});
    std::vector<float> expected = ReferenceSoftmax(bottom.ReadData(), c.shape, c.canonical_axis);
    std::vector<float> y = top.ReadData();
    for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], expected[i], 1e-6f) << i;
  }
}

// exp(1000) overflows a float: only max subtraction gives the right answer.
TEST(Softmax, LargeInputsStayFinite) {
  Blob bottom(TestContext(), {3, 4}), top(TestContext());
  const std::vector<float> x = {1000, 999, 998, -1000, -1000, -1001, -1002, -1003,
                                88, 89, 90, 91};
  bottom.WriteData(x);
  auto layer = MakeLayer(SoftmaxProto(1));
  layer->SetUp({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  std::vector<float> expected = ReferenceSoftmax(x, {3, 4}, 1);
  std::vector<float> y = top.ReadData();
  for (size_t i = 0; i < y.size(); ++i) {
    ASSERT_TRUE(std::isfinite(y[i])) << i;
    EXPECT_NEAR(y[i], expected[i], 1e-6f) << i;
  }
}

TEST(Softmax, GradientMatchesNumeric) {
  for (const SoftmaxCase& c : kCases) {
    SCOPED_TRACE("axis " + std::to_string(c.axis));
    Blob bottom(TestContext(), c.shape), top(TestContext());
    FillGaussian(&bottom, 0.f, 1.f, 5);
    auto layer = MakeLayer(SoftmaxProto(c.axis));
    layer->SetUp({&bottom}, {&top});
    GradientCheckOptions options;
    options.max_checks_per_blob = 150;
    CheckGradient(*layer, {&bottom}, {&top}, {}, options);
  }
}

TEST(Softmax, InPlaceMatchesOutOfPlace) {
  const std::vector<int> shape{3, 2, 7, 5};
  Blob x(TestContext(), shape), y(TestContext()), inplace(TestContext(), shape);
  FillGaussian(&x, 0.f, 1.f, 7);
  inplace.WriteData(x.ReadData());
  auto layer = MakeLayer(SoftmaxProto(2));
  auto layer_inplace = MakeLayer(SoftmaxProto(2));
  layer->SetUp({&x}, {&y});
  layer_inplace->SetUp({&inplace}, {&inplace});
  layer->Forward({&x}, {&y});
  layer_inplace->Forward({&inplace}, {&inplace});
  FillGaussian(&x, 0.f, 1.f, 8);  // reuse x's data as the top diff
  std::vector<float> dy = x.ReadData();
  y.WriteDiff(dy);
  inplace.WriteDiff(dy);
  layer->Backward({&y}, {true}, {&x});
  layer_inplace->Backward({&inplace}, {true}, {&inplace});
  std::vector<float> a = y.ReadData(), b = inplace.ReadData();
  std::vector<float> da = x.ReadDiff(), db = inplace.ReadDiff();
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i], b[i]) << i;
    EXPECT_EQ(da[i], db[i]) << i;
  }
}

TEST(Softmax, AxisOutOfRangeIsAUserError) {
  Blob bottom(TestContext(), {3, 4}), top(TestContext());
  auto layer = MakeLayer(SoftmaxProto(2));
  EXPECT_THROW(layer->SetUp({&bottom}, {&top}), Error);
}

}  // namespace test
}  // namespace dlcaffe
