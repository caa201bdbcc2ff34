// Gather (ONNX Gather, numpy's take) against a plain reference on odd
// shapes, every axis, indices of rank 0 to 2 with negative and repeated
// ones; backward against the reference sum and numerical gradients; an
// index out of range gives NaN and no gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

std::string Layer(int axis) {
  return "type: 'Gather' gather_param { axis: " + std::to_string(axis) + " }";
}

struct Case {
  std::vector<int> data, index;
  int axis;
};

}  // namespace

TEST(Gather, ForwardAndBackwardMatchTheReference) {
  const std::vector<Case> cases = {{{7}, {5}, 0},          {{5, 3}, {2, 4}, 0},
                                   {{3, 5, 4}, {6}, 1},    {{3, 5, 4}, {2, 3}, -1},
                                   {{2, 3, 1, 5}, {}, 3},  {{4, 2}, {9}, 0}};
  for (const Case& c : cases) {
    SCOPED_TRACE("axis " + std::to_string(c.axis) + " of rank " + std::to_string(c.data.size()));
    Blob data(TestContext(), c.data), index(TestContext(), c.index), top(TestContext());
    FillGaussian(&data, 0.f, 1.f, 3);
    const int rank = static_cast<int>(c.data.size());
    const int axis = c.axis < 0 ? c.axis + rank : c.axis;
    const int n = c.data[axis];
    std::vector<float> k(index.count());
    for (size_t j = 0; j < k.size(); ++j) k[j] = float(int((j * 5 + 2) % (2 * n)) - n);
    index.WriteData(k);
    auto layer = MakeLayer(Layer(c.axis));
    layer->SetUp({&data, &index}, {&top});
    std::vector<int> shape(c.data.begin(), c.data.begin() + axis);
    shape.insert(shape.end(), c.index.begin(), c.index.end());
    shape.insert(shape.end(), c.data.begin() + axis + 1, c.data.end());
    ASSERT_EQ(top.shape(), shape);
    layer->Forward({&data, &index}, {&top});
    int outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= c.data[d];
    for (int d = axis + 1; d < rank; ++d) inner *= c.data[d];
    const int picks = index.count();
    const std::vector<float> x = data.ReadData(), y = top.ReadData();
    std::vector<float> dy(top.count());
    for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.25f * float(i % 11) - 1.f;
    std::vector<double> dx(data.count(), 0.0);
    for (int o = 0; o < outer; ++o)
      for (int j = 0; j < picks; ++j)
        for (int in = 0; in < inner; ++in) {
          const int a = int(k[j]) + (k[j] < 0 ? n : 0);
          const int source = (o * n + a) * inner + in, at = (o * picks + j) * inner + in;
          ASSERT_EQ(y[at], x[source]) << at;
          dx[source] += dy[at];
        }
    top.WriteDiff(dy);
    data.SetDiff(7.f);  // overwritten, not accumulated
    layer->Backward({&top}, {true, false}, {&data, &index});
    const std::vector<float> got = data.ReadDiff();
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], dx[i], 1e-5) << i;
  }
}

TEST(Gather, GradientMatchesNumeric) {
  Blob data(TestContext(), {3, 4, 3}), index(TestContext(), {5}), top(TestContext());
  FillGaussian(&data, 0.f, 1.f, 5);
  index.WriteData({1, -1, 1, 0, 2});
  auto layer = MakeLayer(Layer(1));
  layer->SetUp({&data, &index}, {&top});
  CheckGradient(*layer, {&data, &index}, {&top}, {0});
}

TEST(Gather, IndexOutOfRangeGivesNaNAndNoGradient) {
  Blob data(TestContext(), {3, 2}), index(TestContext(), {3}), top(TestContext());
  data.WriteData({1, 2, 3, 4, 5, 6});
  index.WriteData({2, 3, -4});  // row 2, then two out of range
  auto layer = MakeLayer(Layer(0));
  layer->SetUp({&data, &index}, {&top});
  layer->Forward({&data, &index}, {&top});
  const std::vector<float> y = top.ReadData();
  EXPECT_EQ(y[0], 5.f);
  EXPECT_EQ(y[1], 6.f);
  for (int i = 2; i < 6; ++i) EXPECT_TRUE(std::isnan(y[i])) << i;
  top.WriteDiff({1, 10, 100, 1000, 1e4f, 1e5f});
  layer->Backward({&top}, {true, false}, {&data, &index});
  EXPECT_EQ(data.ReadDiff(), (std::vector<float>{0, 0, 0, 0, 1, 10}));
}

}  // namespace test
}  // namespace dlcaffe
