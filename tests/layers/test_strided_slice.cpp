#include <gtest/gtest.h>

#include <climits>
#include <random>

#include "dlcaffe/error.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

struct AxisSlice {
  int axis, start, end, step;
};

std::string Proto(const std::vector<AxisSlice>& slices, bool with_axes = true,
                  bool with_steps = true) {
  std::string s = "type: 'StridedSlice' strided_slice_param {";
  for (const AxisSlice& a : slices) {
    if (with_axes) s += " axis: " + std::to_string(a.axis);
    s += " start: " + std::to_string(a.start) + " end: " + std::to_string(a.end);
    if (with_steps) s += " step: " + std::to_string(a.step);
  }
  return s + " }";
}

// The indices ONNX Slice keeps along an axis of `n` elements, following the
// spec's words: negative start/end count from the end, then clamping
// ([0, n] for a positive step; start to [0, n - 1], end to [-1, n - 1] for a
// negative one), then start, start + step, ... strictly before end.
std::vector<int> OnnxIndices(int n, long start, long end, long step) {
  if (start < 0) start += n;
  if (end < 0) end += n;
  if (step > 0) {
    start = std::min<long>(std::max<long>(start, 0), n);
    end = std::min<long>(std::max<long>(end, 0), n);
  } else {
    start = std::min<long>(std::max<long>(start, 0), n - 1);
    end = std::min<long>(std::max<long>(end, -1), n - 1);
  }
  std::vector<int> kept;
  for (long i = start; step > 0 ? i < end : i > end; i += step) kept.push_back(int(i));
  return kept;
}

// y = x at the Cartesian product of each axis's kept indices.
std::vector<float> ReferenceSlice(const std::vector<float>& x, const std::vector<int>& shape,
                                  const std::vector<std::vector<int>>& kept,
                                  std::vector<int>* y_shape) {
  const int rank = static_cast<int>(shape.size());
  y_shape->clear();
  size_t count = 1;
  for (const auto& k : kept) {
    y_shape->push_back(static_cast<int>(k.size()));
    count *= k.size();
  }
  std::vector<float> y;
  std::vector<int> c(rank, 0);
  for (size_t j = 0; j < count; ++j) {
    size_t at = 0;
    for (int d = 0; d < rank; ++d) at = at * shape[d] + kept[d][c[d]];
    y.push_back(x[at]);
    for (int d = rank - 1; d >= 0; --d) {
      if (++c[d] < (*y_shape)[d]) break;
      c[d] = 0;
    }
  }
  return y;
}

void ExpectSliceMatches(const std::vector<int>& shape, const std::vector<AxisSlice>& slices,
                        unsigned seed) {
  const std::string proto = Proto(slices);
  SCOPED_TRACE(::testing::PrintToString(shape) + " " + proto);
  const int rank = static_cast<int>(shape.size());
  std::vector<std::vector<int>> kept(rank);
  for (int d = 0; d < rank; ++d) kept[d] = OnnxIndices(shape[d], 0, shape[d], 1);
  for (const AxisSlice& a : slices) {
    const int d = a.axis < 0 ? a.axis + rank : a.axis;
    kept[d] = OnnxIndices(shape[d], a.start, a.end, a.step);
  }
  Blob x(TestContext(), shape), y(TestContext());
  FillUniform(&x, -1.f, 1.f, seed);
  auto layer = MakeLayer(proto);
  layer->SetUp({&x}, {&y});
  std::vector<int> y_shape;
  const std::vector<float> expected = ReferenceSlice(x.ReadData(), shape, kept, &y_shape);
  ASSERT_EQ(y.shape(), y_shape);
  layer->Forward({&x}, {&y});
  ASSERT_EQ(y.ReadData(), expected);
  // Backward: the top's diff lands where its elements came from, 0 elsewhere.
  std::vector<float> dy(y.count());
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = float(i) + 1.f;
  y.WriteDiff(dy);
  x.SetDiff(-3.f);
  layer->Backward({&y}, {true}, {&x});
  std::vector<float> index(x.count());
  for (size_t i = 0; i < index.size(); ++i) index[i] = float(i);
  const std::vector<float> source = ReferenceSlice(index, shape, kept, &y_shape);
  std::vector<float> dx(x.count(), 0.f);
  for (size_t i = 0; i < source.size(); ++i) dx[size_t(source[i])] = dy[i];
  ASSERT_EQ(x.ReadDiff(), dx);
}

}  // namespace

// One axis of 7 elements (values 0 .. 6), the expected indices worked out by
// hand from the ONNX spec.
TEST(StridedSlice, OnnxClampingByHand) {
  struct Case {
    int start, end, step;
    std::vector<float> expected;
  };
  const std::vector<Case> cases = {
      {0, 7, 1, {0, 1, 2, 3, 4, 5, 6}},
      {2, 5, 1, {2, 3, 4}},
      {-3, -1, 1, {4, 5}},
      {0, -1, 1, {0, 1, 2, 3, 4, 5}},
      {1, 100, 2, {1, 3, 5}},
      {INT_MIN, INT_MAX, 3, {0, 3, 6}},
      {-100, 3, 1, {0, 1, 2}},
      {-8, 2, 1, {0, 1}},
      {5, 2, 1, {}},
      {-1, -1, 1, {}},
      {INT_MAX, INT_MIN, -1, {6, 5, 4, 3, 2, 1, 0}},
      {-1, INT_MIN, -2, {6, 4, 2, 0}},
      {5, 1, -2, {5, 3}},
      {100, 3, -1, {6, 5, 4}},
      {7, 0, -1, {6, 5, 4, 3, 2, 1}},
      {2, -100, -1, {2, 1, 0}},
      {6, -8, -1, {6, 5, 4, 3, 2, 1, 0}},  // end -8 + 7 = -1, clamped to -1: past 0
      {6, -1, -1, {}},                     // end -1 is element 6
      {3, 3, -1, {}},
      {3, 4, -1, {}},
  };
  Blob x(TestContext(), {7}), y(TestContext());
  x.WriteData({0, 1, 2, 3, 4, 5, 6});
  for (const Case& c : cases) {
    const std::string proto = Proto({{0, c.start, c.end, c.step}});
    SCOPED_TRACE(proto);
    auto layer = MakeLayer(proto);
    layer->SetUp({&x}, {&y});
    ASSERT_EQ(y.shape(), std::vector<int>{int(c.expected.size())});
    layer->Forward({&x}, {&y});
    EXPECT_EQ(y.ReadData(), c.expected);
    // The reference agrees with the hand-derived table.
    std::vector<float> ref;
    for (int i : OnnxIndices(7, c.start, c.end, c.step)) ref.push_back(float(i));
    EXPECT_EQ(ref, c.expected);
  }
}

// Ends from a second bottom, read at each Reshape (ONNX Slice to sizes that
// follow the data): the same clamping; a new value sizes the top anew.
TEST(StridedSlice, RunTimeEndsFromBottom1) {
  Blob x(TestContext(), {7, 2}), ends(TestContext(), {1}), y(TestContext());
  std::vector<float> v(14);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i);
  x.WriteData(v);
  auto layer = MakeLayer("type: 'StridedSlice' strided_slice_param { axis: 0 start: 1 end: 0 }");
  ends.WriteData({4});
  layer->SetUp({&x, &ends}, {&y});
  for (float end : {4.f, 100.f, -2.f, 9.2e18f, 0.f}) {
    SCOPED_TRACE(end);
    ends.WriteData({end});
    layer->Reshape({&x, &ends}, {&y});
    layer->Forward({&x, &ends}, {&y});
    std::vector<float> want;
    for (int i : OnnxIndices(7, 1, end > 1e9f ? INT_MAX : int(end), 1))
      want.insert(want.end(), {v[2 * i], v[2 * i + 1]});
    ASSERT_EQ(y.count(), static_cast<int>(want.size()));
    if (!want.empty()) EXPECT_EQ(y.ReadData(), want);
  }
}

TEST(StridedSlice, ForwardAndBackwardMatchReference) {
  struct Case {
    std::vector<int> shape;
    std::vector<AxisSlice> slices;
  };
  const std::vector<Case> cases = {
      {{13}, {{0, 1, 12, 3}}},
      {{13}, {{-1, -2, INT_MIN, -4}}},
      {{3, 13}, {{1, 2, -2, 1}}},
      {{3, 13}, {{0, 2, 0, -1}, {1, 12, 0, -5}}},
      {{2, 3, 5}, {{2, 1, 4, 1}, {0, 1, 2, 1}}},
      {{2, 3, 5}, {{-1, INT_MAX, INT_MIN, -1}}},  // reverse the last axis
      {{2, 3, 1, 7}, {{3, -6, 100, 2}, {1, 0, INT_MAX, 2}, {0, -1, -3, -1}}},
      {{3, 2, 1, 5, 4}, {{4, 1, 3, 1}, {3, 4, 0, -2}, {0, 1, 3, 1}}},
      {{3, 2, 1, 5, 4}, {{2, 0, 1, 1}}},  // a size-1 axis kept whole
      {{3, 4, 5}, {{1, 3, 1, 1}}},        // an empty slice
  };
  unsigned seed = 1;
  for (const Case& c : cases) ExpectSliceMatches(c.shape, c.slices, seed++);
}

// Random slices of every axis of random shapes (ranks 1 to 5).
TEST(StridedSlice, RandomSlicesMatchReference) {
  std::mt19937 rng(17);
  for (int trial = 0; trial < 40; ++trial) {
    const int rank = 1 + trial % 5;
    std::vector<int> shape;
    for (int d = 0; d < rank; ++d) shape.push_back(1 + int(rng() % 6));
    std::vector<AxisSlice> slices;
    for (int d = 0; d < rank; ++d) {
      if (rng() % 3 == 0) continue;
      const int n = shape[d];
      int step = int(rng() % 7) - 3;
      if (step == 0) step = 1;
      slices.push_back({rng() % 2 ? d : d - rank, int(rng() % (2 * n + 5)) - n - 2,
                        int(rng() % (2 * n + 5)) - n - 2, step});
    }
    if (slices.empty()) slices.push_back({0, 0, INT_MAX, 1});
    ExpectSliceMatches(shape, slices, 100 + trial);
  }
}

// Without `axis` the starts apply to the first axes; without `step`, step 1.
TEST(StridedSlice, DefaultAxesAndSteps) {
  Blob x(TestContext(), {4, 5, 3}), y(TestContext());
  FillUniform(&x, -1.f, 1.f, 5);
  auto defaults = MakeLayer(Proto({{0, 1, 3, 1}, {1, -4, -1, 1}}, false, false));
  defaults->SetUp({&x}, {&y});
  EXPECT_EQ(y.shape(), (std::vector<int>{2, 3, 3}));
  defaults->Forward({&x}, {&y});
  const std::vector<float> got = y.ReadData();
  Blob y2(TestContext());
  auto spelled = MakeLayer(Proto({{0, 1, 3, 1}, {1, -4, -1, 1}}));
  spelled->SetUp({&x}, {&y2});
  spelled->Forward({&x}, {&y2});
  EXPECT_EQ(got, y2.ReadData());
}

TEST(StridedSlice, GradientMatchesNumeric) {
  Blob x(TestContext(), {3, 5, 4}), y(TestContext());
  FillUniform(&x, -1.f, 1.f, 7);
  auto layer = MakeLayer(Proto({{1, -1, 0, -2}, {2, 1, 4, 2}}));
  layer->SetUp({&x}, {&y});
  EXPECT_EQ(y.shape(), (std::vector<int>{3, 2, 2}));
  CheckGradient(*layer, {&x}, {&y});
}

TEST(StridedSlice, BadParametersAreErrors) {
  Blob x(TestContext(), {2, 3, 4}), y(TestContext());
  struct Case {
    std::string param;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"start: 0 end: 1 step: 0", "step 0 is 0"},
      {"start: 0 start: 1 end: 1", "one end per start: 2 start(s), 1 end(s)"},
      {"start: 0 end: 1 axis: 0 axis: 1", "one axis per start (or none): 1 start(s), 2 axis/axes"},
      {"start: 0 end: 1 step: 1 step: 1", "one step per start (or none): 1 start(s), 2 step(s)"},
      {"axis: 3 start: 0 end: 1", "axis 3 is out of range for the bottom 2 3 4 (24)"},
      {"axis: -4 start: 0 end: 1", "axis -4 is out of range"},
      {"axis: 1 axis: -2 start: 0 start: 0 end: 1 end: 1", "axis 1 is listed twice"},
  };
  for (const Case& c : cases) {
    try {
      MakeLayer("type: 'StridedSlice' strided_slice_param { " + c.param + " }")
          ->SetUp({&x}, {&y});
      ADD_FAILURE() << c.param << " accepted";
    } catch (const Error& e) {
      const std::string error = e.what();
      EXPECT_NE(error.find("layer 'test_layer' (StridedSlice)"), std::string::npos) << error;
      EXPECT_NE(error.find(c.message), std::string::npos) << c.param << ": " << error;
    }
  }
}

}  // namespace test
}  // namespace dlcaffe
