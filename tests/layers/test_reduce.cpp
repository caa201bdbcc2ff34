#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <numeric>
#include <random>

#include "dlcaffe/error.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

const char* const kOps[] = {"SUM", "MEAN", "MAX", "MIN", "SUM_SQUARE", "L1", "L2"};

std::string Proto(const std::string& op, const std::vector<int>& axes, bool keepdims) {
  std::string s = "type: 'Reduce' reduce_param { operation: " + op;
  for (int a : axes) s += " axis: " + std::to_string(a);
  return s + (keepdims ? "" : " keepdims: false") + " }";
}

struct Reference {
  std::vector<int> shape;
  std::vector<double> y, dx, magnitude;  // magnitude: sum of |terms| per top element
};

// Plain loops in double: each bottom element's top element drops the
// reduced coordinates.
Reference ReferenceReduce(const std::vector<float>& x, const std::vector<float>& dy,
                          const std::vector<int>& shape, const std::vector<int>& axes,
                          bool keepdims, const std::string& op) {
  const int rank = static_cast<int>(shape.size());
  std::vector<bool> reduced(rank, axes.empty());
  for (int a : axes) reduced[a < 0 ? a + rank : a] = true;
  Reference r;
  std::vector<int> kept;
  long n = 1;
  for (int d = 0; d < rank; ++d) {
    if (!reduced[d]) {
      r.shape.push_back(shape[d]);
      kept.push_back(shape[d]);
    } else {
      n *= shape[d];
      if (keepdims) r.shape.push_back(1);
    }
  }
  size_t outputs = 1;
  for (int k : kept) outputs *= k;
  std::vector<size_t> top_of(x.size());
  std::vector<int> c(rank, 0);
  for (size_t i = 0; i < x.size(); ++i) {
    size_t o = 0;
    for (int d = 0; d < rank; ++d)
      if (!reduced[d]) o = o * shape[d] + c[d];
    top_of[i] = o;
    for (int d = rank - 1; d >= 0; --d) {
      if (++c[d] < shape[d]) break;
      c[d] = 0;
    }
  }
  const bool extremum = op == "MAX" || op == "MIN";
  r.y.assign(outputs, extremum ? (op == "MAX" ? -INFINITY : INFINITY) : 0.0);
  r.magnitude.assign(outputs, 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    double& y = r.y[top_of[i]];
    if (op == "MAX") {
      y = std::max(y, v);
    } else if (op == "MIN") {
      y = std::min(y, v);
    } else if (op == "SUM_SQUARE" || op == "L2") {
      y += v * v;
    } else if (op == "L1") {
      y += std::fabs(v);
    } else {
      y += v;
    }
    r.magnitude[top_of[i]] += std::fabs(v) * (op == "SUM_SQUARE" || op == "L2" ? std::fabs(v) : 1);
  }
  for (double& y : r.y) {
    if (op == "MEAN") y /= n;
    if (op == "L2") y = std::sqrt(y);
  }
  std::vector<double> ties(outputs, 0.0);
  for (size_t i = 0; i < x.size(); ++i) ties[top_of[i]] += x[i] == r.y[top_of[i]];
  r.dx.resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t o = top_of[i];
    const double v = x[i], g = dy[o];
    if (op == "SUM") r.dx[i] = g;
    if (op == "MEAN") r.dx[i] = g / n;
    if (extremum) r.dx[i] = v == r.y[o] ? g / ties[o] : 0.0;
    if (op == "SUM_SQUARE") r.dx[i] = 2 * v * g;
    if (op == "L1") r.dx[i] = (v > 0) - (v < 0) ? ((v > 0) - (v < 0)) * g : 0.0;
    if (op == "L2") r.dx[i] = r.y[o] > 0 ? v / r.y[o] * g : 0.0;
  }
  return r;
}

void ExpectReduceMatches(const std::vector<int>& shape, const std::vector<int>& axes,
                         bool keepdims, const std::string& op, unsigned seed) {
  const std::string proto = Proto(op, axes, keepdims);
  SCOPED_TRACE(::testing::PrintToString(shape) + " " + proto);
  Blob x(TestContext(), shape), y(TestContext());
  FillUniform(&x, -1.f, 1.f, seed);
  auto layer = MakeLayer(proto);
  layer->SetUp({&x}, {&y});
  std::vector<float> dy(y.count());
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.25f * float(i % 9) - 1.f;
  const Reference r = ReferenceReduce(x.ReadData(), dy, shape, axes, keepdims, op);
  ASSERT_EQ(y.shape(), r.shape);
  layer->Forward({&x}, {&y});
  const std::vector<float> got = y.ReadData();
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], r.y[i], 2e-6 * (1 + r.magnitude[i])) << "top " << i;
  y.WriteDiff(dy);
  x.SetDiff(100.f);
  layer->Backward({&y}, {true}, {&x});
  const std::vector<float> dx = x.ReadDiff();
  for (size_t i = 0; i < dx.size(); ++i)
    ASSERT_NEAR(dx[i], r.dx[i], 1e-5 * (1 + std::fabs(r.dx[i]))) << "bottom " << i;
}

// Every test runs in both shapes of the generated kernels.
class ReduceTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { SetTestOption("kernel_shape", GetParam()); }
  void TearDown() override { ResetTestOption("kernel_shape"); }
};

}  // namespace

// Every set of axes of small odd shapes of ranks 1 to 4 (leading, trailing,
// both ends, and the alternating sets that take reduce.cl), some of rank 5,
// every operation, with and without keepdims, axes spelled negative or not.
TEST_P(ReduceTest, ForwardAndBackwardMatchReference) {
  const std::vector<std::vector<int>> shapes = {{13}, {3, 5}, {2, 3, 5}, {2, 3, 1, 5}};
  unsigned seed = 1;
  for (const auto& shape : shapes) {
    const int rank = static_cast<int>(shape.size());
    for (int mask = 0; mask < (1 << rank); ++mask) {
      std::vector<int> axes;
      for (int d = 0; d < rank; ++d)
        if (mask & (1 << d)) axes.push_back((mask + d) % 2 ? d : d - rank);
      const bool keepdims = mask % 3 != 0;
      for (const char* op : kOps) ExpectReduceMatches(shape, axes, keepdims, op, seed++);
    }
  }
  const std::vector<int> five = {3, 2, 4, 1, 3};
  bool keepdims = false;
  for (const auto& axes : std::vector<std::vector<int>>{{1, 2}, {0, 4}, {1, 3}, {0, 2, 4}, {-1, 1}}) {
    keepdims = !keepdims;
    for (const char* op : kOps) ExpectReduceMatches(five, axes, keepdims, op, seed++);
  }
}

// MAX and MIN share the gradient evenly between tied extrema, in the
// per-channel form and in reduce.cl's (kept axes on both sides).
TEST_P(ReduceTest, TiesShareTheGradient) {
  {
    Blob x(TestContext(), {2, 4}), y(TestContext());
    x.WriteData({1, 3, 3, 2, 5, 5, 5, 0});
    auto max = MakeLayer(Proto("MAX", {1}, true));
    max->SetUp({&x}, {&y});
    max->Forward({&x}, {&y});
    EXPECT_EQ(y.ReadData(), (std::vector<float>{3, 5}));
    y.WriteDiff({1, 3});
    max->Backward({&y}, {true}, {&x});
    EXPECT_EQ(x.ReadDiff(), (std::vector<float>{0, 0.5f, 0.5f, 0, 1, 1, 1, 0}));
    auto min = MakeLayer(Proto("MIN", {-1}, false));
    min->SetUp({&x}, {&y});
    EXPECT_EQ(y.shape(), std::vector<int>{2});
    min->Forward({&x}, {&y});
    EXPECT_EQ(y.ReadData(), (std::vector<float>{1, 0}));
    y.WriteDiff({2, 3});
    min->Backward({&y}, {true}, {&x});
    EXPECT_EQ(x.ReadDiff(), (std::vector<float>{2, 0, 0, 0, 0, 0, 0, 3}));
  }
  {
    // 2 x 3 x 2 over axis 1: columns (0, j) = {4, 4, 1}, {0, 2, 2}; (1, j) =
    // {7, 7, 7}, {-1, -3, -1}.
    Blob x(TestContext(), {2, 3, 2}), y(TestContext());
    x.WriteData({4, 0, 4, 2, 1, 2, 7, -1, 7, -3, 7, -1});
    auto max = MakeLayer(Proto("MAX", {1}, true));
    max->SetUp({&x}, {&y});
    max->Forward({&x}, {&y});
    EXPECT_EQ(y.ReadData(), (std::vector<float>{4, 2, 7, -1}));
    y.WriteDiff({6, 6, 6, 6});
    max->Backward({&y}, {true}, {&x});
    EXPECT_EQ(x.ReadDiff(), (std::vector<float>{3, 0, 3, 3, 0, 3, 2, 3, 2, 0, 2, 3}));
  }
}

// A bottom of no axes left by reducing everything without keepdims.
TEST_P(ReduceTest, AllAxesWithoutKeepdimsGiveAScalar) {
  Blob x(TestContext(), {3, 5}), y(TestContext());
  FillUniform(&x, -1.f, 1.f, 3);
  auto layer = MakeLayer(Proto("MEAN", {}, false));
  layer->SetUp({&x}, {&y});
  EXPECT_TRUE(y.shape().empty());
  EXPECT_EQ(y.count(), 1);
  layer->Forward({&x}, {&y});
  const std::vector<float> v = x.ReadData();
  EXPECT_NEAR(y.ReadData()[0], std::accumulate(v.begin(), v.end(), 0.0) / 15, 1e-6);
}

// Inputs large enough for the generated reductions to split a channel into
// parts (both shapes), and reduce.cl over long reduced runs.
TEST_P(ReduceTest, LargeInputs) {
  const std::vector<int> shape = {3, 7, 41, 47};
  unsigned seed = 200;
  for (const auto& axes : std::vector<std::vector<int>>{{}, {2, 3}, {0, 2, 3}, {0}, {1, 3}})
    for (const char* op : {"SUM", "MEAN", "MAX", "MIN", "L2"})
      ExpectReduceMatches(shape, axes, true, op, seed++);
}

TEST_P(ReduceTest, GradientMatchesNumeric) {
  for (const auto& axes : std::vector<std::vector<int>>{{1}, {0, 2}, {}}) {
    for (const char* op : kOps) {
      const std::string proto = Proto(op, axes, false);
      SCOPED_TRACE(proto);
      Blob x(TestContext(), {3, 4, 5}), y(TestContext());
      // Distinct values 0.05 apart, away from 0 (L1's kink): a step of 0.01
      // changes no maximum and no sign.
      std::vector<float> v(x.count());
      std::iota(v.begin(), v.end(), 0.f);
      std::shuffle(v.begin(), v.end(), std::mt19937(5));
      for (float& e : v) e = 0.05f * (e - 29.5f);
      x.WriteData(v);
      auto layer = MakeLayer(proto);
      layer->SetUp({&x}, {&y});
      CheckGradient(*layer, {&x}, {&y});
    }
  }
}

INSTANTIATE_TEST_SUITE_P(KernelShapes, ReduceTest, ::testing::Values("cpu", "gpu"));

TEST(Reduce, BadParametersAreErrors) {
  Blob x(TestContext(), {2, 3, 4}), y(TestContext());
  struct Case {
    std::string proto;
    std::string message;
  };
  const std::vector<Case> cases = {
      {Proto("SUM", {3}, true), "axis 3 is out of range for the bottom 2 3 4 (24)"},
      {Proto("SUM", {-4}, true), "axis -4 is out of range"},
      {Proto("MAX", {1, -2}, true), "axis 1 is listed twice"},
  };
  for (const Case& c : cases) {
    try {
      MakeLayer(c.proto)->SetUp({&x}, {&y});
      ADD_FAILURE() << c.proto << " accepted";
    } catch (const Error& e) {
      const std::string error = e.what();
      EXPECT_NE(error.find("layer 'test_layer' (Reduce)"), std::string::npos) << error;
      EXPECT_NE(error.find(c.message), std::string::npos) << c.proto << ": " << error;
    }
  }
  // Nine alternating groups of kept and reduced axes.
  Blob nine(TestContext(), std::vector<int>(9, 2));
  try {
    MakeLayer(Proto("SUM", {1, 3, 5, 7}, true))->SetUp({&nine}, {&y});
    ADD_FAILURE() << "nine groups accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("alternates between kept and reduced axes 9 times"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(MakeLayer(Proto("SUM", {0}, true))->SetUp({&x}, {&x}), Error);
}

}  // namespace test
}  // namespace dlcaffe
