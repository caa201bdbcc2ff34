// TopK against a plain reference (a stable sort of each slice) on odd
// shapes and axes, largest and smallest, with ties (lower index first, as
// ONNX asks), k fixed or read from bottom 1 at run time (0 and the whole
// axis included); the values' gradient against the reference scatter and
// numerical gradients; a k out of range is one clear error.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "util/error_of.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

std::string Layer(int axis, int k, bool largest) {
  return "type: 'TopK' top_k_param { axis: " + std::to_string(axis) + " k: " + std::to_string(k) +
         " largest: " + (largest ? "true" : "false") + " }";
}

// The reference: values and indices of the k best of each slice.
void Reference(const std::vector<float>& x, const std::vector<int>& shape, int axis, int k,
               bool largest, std::vector<float>* values, std::vector<float>* indices) {
  int outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  const int n = shape[axis];
  values->assign(size_t(outer) * k * inner, 0.f);
  indices->assign(values->size(), 0.f);
  for (int o = 0; o < outer; ++o)
    for (int in = 0; in < inner; ++in) {
      std::vector<int> order(n);
      std::iota(order.begin(), order.end(), 0);
      auto at = [&](int j) { return x[(size_t(o) * n + j) * inner + in]; };
      std::stable_sort(order.begin(), order.end(),
                       [&](int a, int b) { return largest ? at(a) > at(b) : at(a) < at(b); });
      for (int j = 0; j < k; ++j) {
        (*values)[(size_t(o) * k + j) * inner + in] = at(order[j]);
        (*indices)[(size_t(o) * k + j) * inner + in] = static_cast<float>(order[j]);
      }
    }
}

// Values with ties: a few levels, so that equal values are common.
std::vector<float> WithTies(int count, unsigned seed) {
  std::vector<float> v(count);
  for (int i = 0; i < count; ++i) v[i] = 0.5f * float(int((i * 37 + seed * 11) % 9) - 4);
  return v;
}

struct Case {
  std::vector<int> shape;
  int axis, k;
};

}  // namespace

TEST(TopK, MatchesTheReferenceWithTies) {
  const std::vector<Case> cases = {{{7}, 0, 3},         {{3, 5, 4}, 1, 2},   {{3, 5, 4}, -1, 4},
                                   {{2, 300, 3}, 1, 17}, {{4, 6}, 0, 4},     {{5, 3}, 1, 3}};
  for (const Case& c : cases)
    for (bool largest : {true, false}) {
      SCOPED_TRACE("axis " + std::to_string(c.axis) + " k " + std::to_string(c.k) +
                   (largest ? " largest" : " smallest"));
      Blob x(TestContext(), c.shape), values(TestContext()), indices(TestContext());
      const std::vector<float> v = WithTies(x.count(), 3);
      x.WriteData(v);
      auto layer = MakeLayer(Layer(c.axis, c.k, largest));
      layer->SetUp({&x}, {&values, &indices});
      layer->Forward({&x}, {&values, &indices});
      const int axis = c.axis < 0 ? c.axis + static_cast<int>(c.shape.size()) : c.axis;
      std::vector<float> want_values, want_indices;
      Reference(v, c.shape, axis, c.k, largest, &want_values, &want_indices);
      std::vector<int> shape = c.shape;
      shape[axis] = c.k;
      ASSERT_EQ(values.shape(), shape);
      EXPECT_EQ(values.ReadData(), want_values);
      EXPECT_EQ(indices.ReadData(), want_indices);
    }
}

// Long slices: a small k takes the chunk rounds (RetinaNet's), a k of more
// than half a chunk the global-memory sort; ties over 140000 values, two
// slices along the middle axis, largest and smallest.
TEST(TopK, LongSlicesMatchTheReference) {
  const std::vector<int> shape = {2, 140000, 1};
  for (int k : {7, 300, 3000})
    for (bool largest : {true, false}) {
      SCOPED_TRACE("k " + std::to_string(k) + (largest ? " largest" : " smallest"));
      Blob x(TestContext(), shape), values(TestContext()), indices(TestContext());
      const std::vector<float> v = WithTies(x.count(), 5);
      x.WriteData(v);
      auto layer = MakeLayer(Layer(1, k, largest));
      layer->SetUp({&x}, {&values, &indices});
      layer->Forward({&x}, {&values, &indices});
      std::vector<float> want_values, want_indices;
      Reference(v, shape, 1, k, largest, &want_values, &want_indices);
      EXPECT_EQ(values.ReadData(), want_values);
      EXPECT_EQ(indices.ReadData(), want_indices);
    }
}

TEST(TopK, RunTimeKSizesTheTops) {
  Blob x(TestContext(), {3, 10}), k(TestContext(), {1}), values(TestContext()),
      indices(TestContext());
  FillGaussian(&x, 0.f, 1.f, 4);
  const std::vector<float> v = x.ReadData();
  auto layer = MakeLayer("type: 'TopK' top_k_param { axis: 1 }");
  layer->SetUp({&x, &k}, {&values, &indices});
  for (int kk : {4, 0, 10, 1}) {
    k.WriteData({float(kk)});
    layer->Reshape({&x, &k}, {&values, &indices});
    layer->Forward({&x, &k}, {&values, &indices});
    ASSERT_EQ(values.shape(), (std::vector<int>{3, kk}));
    std::vector<float> want_values, want_indices;
    Reference(v, {3, 10}, 1, kk, true, &want_values, &want_indices);
    if (kk > 0) {
      EXPECT_EQ(values.ReadData(), want_values);
      EXPECT_EQ(indices.ReadData(), want_indices);
    }
  }
  for (float bad : {11.f, -1.f, 2.5f}) {
    k.WriteData({bad});
    layer->Reshape({&x, &k}, {&values, &indices});
    const std::string e = ErrorOf([&] { layer->Forward({&x, &k}, {&values, &indices}); });
    EXPECT_TRUE(Contains(e, "must be a whole number from 0 to 10")) << e;
  }
}

TEST(TopK, GradientReachesThePickedElements) {
  Blob x(TestContext(), {3, 7, 2}), values(TestContext()), indices(TestContext());
  // Values 0.1 apart: the numeric step (0.01) never changes the picks.
  std::vector<float> v(x.count());
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.1f * float((i * 17) % v.size()) - 2.f;
  x.WriteData(v);
  auto layer = MakeLayer(Layer(1, 3, false));
  layer->SetUp({&x}, {&values, &indices});
  layer->Forward({&x}, {&values, &indices});
  std::vector<float> dy(values.count());
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = float(i) - 4.f;
  values.WriteDiff(dy);
  x.SetDiff(5.f);  // overwritten
  layer->Backward({&values, &indices}, {true}, {&x});
  const std::vector<float> idx = indices.ReadData(), got = x.ReadDiff();
  std::vector<float> want(x.count(), 0.f);
  for (int i = 0; i < values.count(); ++i) {
    const int in = i % 2, outer = i / 2 / 3;
    want[(outer * 7 + int(idx[i])) * 2 + in] = dy[i];
  }
  EXPECT_EQ(got, want);
  CheckGradient(*layer, {&x}, {&values, &indices}, {0});
}

TEST(TopK, KBeyondTheAxisIsOneClearError) {
  Blob x(TestContext(), {3, 4}), values(TestContext()), indices(TestContext());
  const std::string e =
      ErrorOf([&] { MakeLayer(Layer(1, 5, true))->SetUp({&x}, {&values, &indices}); });
  EXPECT_TRUE(Contains(e, "k 5 exceeds axis 1")) << e;
}

}  // namespace test
}  // namespace dlcaffe
