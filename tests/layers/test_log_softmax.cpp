#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "util/gradient_checker.hpp"
#include "util/in_place_check.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

struct Case {
  std::vector<int> shape;
  int axis;
};

std::string LogSoftmaxText(int axis) {
  return "type: 'LogSoftmax' softmax_param { axis: " + std::to_string(axis) + " }";
}

// gtest names a failing case by this.
void PrintTo(const Case& c, std::ostream* os) {
  *os << "shape";
  for (int d : c.shape) *os << " " << d;
  *os << ", axis " << c.axis;
}

// log(exp(x) / sum exp(x)) along `axis`, in double precision.
std::vector<double> ReferenceLogSoftmax(const std::vector<float>& x, const std::vector<int>& shape,
                                        int axis) {
  if (axis < 0) axis += static_cast<int>(shape.size());
  int outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= shape[i];
  for (size_t i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
  const int channels = shape[axis];
  std::vector<double> y(x.size());
  for (int o = 0; o < outer; ++o)
    for (int p = 0; p < inner; ++p) {
      const auto at = [&](int c) { return (size_t(o) * channels + c) * inner + p; };
      double maxval = -INFINITY, sum = 0;
      for (int c = 0; c < channels; ++c) maxval = std::max(maxval, double(x[at(c)]));
      for (int c = 0; c < channels; ++c) sum += std::exp(x[at(c)] - maxval);
      for (int c = 0; c < channels; ++c) y[at(c)] = x[at(c)] - maxval - std::log(sum);
    }
  return y;
}

}  // namespace

class LogSoftmaxTest : public ::testing::TestWithParam<Case> {};

TEST_P(LogSoftmaxTest, ForwardMatchesReference) {
  const Case& c = GetParam();
  Blob bottom(TestContext(), c.shape), top(TestContext());
  FillGaussian(&bottom, 0.f, 3.f, 7);
  auto layer = MakeLayer(LogSoftmaxText(c.axis));
  layer->SetUp({&bottom}, {&top});
  ASSERT_EQ(top.shape(), bottom.shape());
  layer->Forward({&bottom}, {&top});
  const std::vector<double> expected = ReferenceLogSoftmax(bottom.ReadData(), c.shape, c.axis);
  const std::vector<float> y = top.ReadData();
  // A float subtraction of the shift (an ulp of max(|y|, |x|)) and the
  // shift's exp/log sum (a few ulp of 1): 1e-6 relative to max(1, |y|).
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(y[i], expected[i], 1e-6 * std::max(1.0, std::fabs(expected[i])))
        << LogSoftmaxText(c.axis) << ", element " << i;
}

TEST_P(LogSoftmaxTest, GradientMatchesNumeric) {
  const Case& c = GetParam();
  SCOPED_TRACE(LogSoftmaxText(c.axis));
  Blob bottom(TestContext(), c.shape), top(TestContext());
  FillGaussian(&bottom, 0.f, 1.f, 11);
  auto layer = MakeLayer(LogSoftmaxText(c.axis));
  layer->SetUp({&bottom}, {&top});
  CheckGradient(*layer, {&bottom}, {&top});
}

INSTANTIATE_TEST_SUITE_P(OddShapes, LogSoftmaxTest,
                         ::testing::Values(Case{{2, 3, 13}, 1}, Case{{3, 13}, -1},
                                           Case{{127, 3}, 0}, Case{{2, 3, 5, 1}, 2},
                                           Case{{1}, 0}, Case{{3, 1, 13}, 1}));

// Inputs whose exp over- and underflows float: max-subtraction keeps every
// value finite and exact (log(softmax) computed naively gives -inf and NaN).
TEST(LogSoftmax, LargeInputsStayFinite) {
  Blob bottom(TestContext(), {1, 3}), top(TestContext());
  bottom.WriteData(std::vector<float>{1000.f, 0.f, -1000.f});
  auto layer = MakeLayer(LogSoftmaxText(1));
  layer->SetUp({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  const std::vector<float> y = top.ReadData();
  EXPECT_NEAR(y[0], 0.f, 1e-6);
  EXPECT_NEAR(y[1], -1000.f, 1e-4);
  EXPECT_NEAR(y[2], -2000.f, 2e-4);
  // The gradient: dx = dy - softmax * sum(dy); softmax is (1, 0, 0) here.
  top.WriteDiff(std::vector<float>{1.f, 2.f, 3.f});
  layer->Backward({&top}, {true}, {&bottom});
  const std::vector<float> dx = bottom.ReadDiff();
  EXPECT_NEAR(dx[0], -5.f, 1e-5);
  EXPECT_NEAR(dx[1], 2.f, 1e-5);
  EXPECT_NEAR(dx[2], 3.f, 1e-5);
}

TEST(LogSoftmax, InPlaceMatchesOutOfPlace) {
  ExpectInPlaceMatchesOutOfPlace(LogSoftmaxText(1), {3, 13},
                                 [](Blob* x) { FillGaussian(x, 0.f, 2.f, 5); });
}

TEST(LogSoftmax, AxisOutOfRangeIsAnError) {
  Blob x(TestContext(), {2, 3}), y(TestContext());
  for (int axis : {2, -3}) {
    try {
      MakeLayer(LogSoftmaxText(axis))->SetUp({&x}, {&y});
      ADD_FAILURE() << "axis " << axis << " accepted";
    } catch (const Error& e) {
      const std::string error = e.what();
      EXPECT_NE(error.find("layer 'test_layer' (LogSoftmax)"), std::string::npos) << error;
      EXPECT_NE(error.find("axis " + std::to_string(axis) + " is out of range"),
                std::string::npos)
          << error;
    }
  }
}

}  // namespace test
}  // namespace dlcaffe
