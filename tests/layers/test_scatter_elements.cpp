// ScatterElements against a plain reference on odd shapes and every axis
// (updates narrower than the data off the axis, negative indices); the
// gradients against their reference and numerical gradients; an index out
// of range writes nothing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/row_major.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

std::string Layer(int axis) {
  return "type: 'ScatterElements' gather_elements_param { axis: " + std::to_string(axis) + " }";
}

// Distinct indices along the axis for each line of updates (a permutation
// prefix), negative every other time.
std::vector<float> DistinctIndices(const std::vector<int>& updates, const std::vector<int>& data,
                                   int axis) {
  int count = 1;
  for (int d : updates) count *= d;
  std::vector<float> k(count);
  for (int i = 0; i < count; ++i) {
    const std::vector<int> c = Coords(i, updates);
    const int n = data[axis];
    const int a = (c[axis] * 3 + 1) % n;  // distinct for c[axis] < n when gcd(3, n) = 1
    k[i] = static_cast<float>(i % 2 ? a - n : a);
  }
  return k;
}

}  // namespace

TEST(ScatterElements, ForwardAndBackwardMatchTheReference) {
  struct Case {
    std::vector<int> data, updates;
    int axis;
  };
  const std::vector<Case> cases = {{{7, 3}, {4, 3}, 0}, {{2, 5, 4}, {2, 3, 2}, 1}, {{4, 7}, {3, 7}, -1}};
  for (const Case& c : cases) {
    SCOPED_TRACE("axis " + std::to_string(c.axis));
    Blob data(TestContext(), c.data), index(TestContext(), c.updates),
        updates(TestContext(), c.updates), top(TestContext());
    FillGaussian(&data, 0.f, 1.f, 1);
    FillGaussian(&updates, 5.f, 1.f, 2);
    const int axis = c.axis < 0 ? c.axis + static_cast<int>(c.data.size()) : c.axis;
    const std::vector<float> k = DistinctIndices(c.updates, c.data, axis);
    index.WriteData(k);
    auto layer = MakeLayer(Layer(c.axis));
    layer->SetUp({&data, &index, &updates}, {&top});
    layer->Forward({&data, &index, &updates}, {&top});
    std::vector<float> want = data.ReadData();
    const std::vector<float> u = updates.ReadData();
    std::vector<int> target(u.size());
    for (size_t i = 0; i < u.size(); ++i) {
      std::vector<int> coords = Coords(static_cast<int>(i), c.updates);
      coords[axis] = static_cast<int>(k[i]) + (k[i] < 0 ? c.data[axis] : 0);
      target[i] = Offset(coords, c.data);
      want[target[i]] = u[i];
    }
    EXPECT_EQ(top.ReadData(), want);
    std::vector<float> dy(top.count());
    for (size_t i = 0; i < dy.size(); ++i) dy[i] = float(i) - 3.f;
    top.WriteDiff(dy);
    data.SetDiff(9.f);
    updates.SetDiff(9.f);
    layer->Backward({&top}, {true, false, true}, {&data, &index, &updates});
    std::vector<float> d_data = dy, d_updates(u.size());
    for (size_t i = 0; i < u.size(); ++i) {
      d_data[target[i]] = 0.f;
      d_updates[i] = dy[target[i]];
    }
    EXPECT_EQ(data.ReadDiff(), d_data);
    EXPECT_EQ(updates.ReadDiff(), d_updates);
  }
}

TEST(ScatterElements, GradientMatchesNumeric) {
  Blob data(TestContext(), {5, 3}), index(TestContext(), {3, 2}), updates(TestContext(), {3, 2}),
      top(TestContext());
  FillGaussian(&data, 0.f, 1.f, 3);
  FillGaussian(&updates, 0.f, 1.f, 4);
  index.WriteData({4, 0, -5, 2, 1, -1});
  auto layer = MakeLayer(Layer(0));
  layer->SetUp({&data, &index, &updates}, {&top});
  CheckGradient(*layer, {&data, &index, &updates}, {&top}, {0, 2});
}

TEST(ScatterElements, IndexOutOfRangeWritesNothing) {
  Blob data(TestContext(), {3}), index(TestContext(), {2}), updates(TestContext(), {2}),
      top(TestContext());
  data.WriteData({1, 2, 3});
  index.WriteData({3, -4});
  updates.WriteData({7, 8});
  auto layer = MakeLayer(Layer(0));
  layer->SetUp({&data, &index, &updates}, {&top});
  layer->Forward({&data, &index, &updates}, {&top});
  EXPECT_EQ(top.ReadData(), (std::vector<float>{1, 2, 3}));
}

}  // namespace test
}  // namespace dlcaffe
