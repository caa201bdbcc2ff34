// GatherElements (torch.gather) against a plain reference on odd shapes,
// every axis, indices narrower than the data off the axis, negative and
// repeated indices; backward against the reference sum and numerical
// gradients; an index out of range gives NaN and no gradient; bad shapes
// are one clear error.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "dlcaffe/error.hpp"
#include "util/error_of.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/row_major.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

// Indices in [-size, size) of the data's axis, repeats certain.
std::vector<float> Indices(int count, int size, unsigned seed) {
  std::vector<float> v;
  for (int i = 0; i < count; ++i)
    v.push_back(static_cast<float>(static_cast<int>((seed * 7 + i * 5) % (2 * size)) - size));
  return v;
}

std::string Layer(int axis) {
  return "type: 'GatherElements' gather_elements_param { axis: " + std::to_string(axis) + " }";
}

struct Case {
  std::vector<int> data, index;
  int axis;
};

const std::vector<Case> kCases = {
    {{3, 5, 4}, {3, 7, 2}, 1},  // narrower off the axis, longer along it
    {{3, 5, 4}, {2, 5, 4}, 0},
    {{3, 5, 4}, {3, 4, 9}, -1},
    {{7}, {11}, 0},
    {{2, 3, 1, 5}, {2, 2, 1, 6}, 3},
};

}  // namespace

TEST(GatherElements, ForwardAndBackwardMatchTheReference) {
  for (const Case& c : kCases) {
    SCOPED_TRACE("axis " + std::to_string(c.axis) + " of " + std::to_string(c.data.size()));
    Blob data(TestContext(), c.data), index(TestContext(), c.index), top(TestContext());
    FillGaussian(&data, 0.f, 1.f, 3);
    const int axis = c.axis < 0 ? c.axis + static_cast<int>(c.data.size()) : c.axis;
    const std::vector<float> k = Indices(index.count(), c.data[axis], 5);
    index.WriteData(k);
    auto layer = MakeLayer(Layer(c.axis));
    layer->SetUp({&data, &index}, {&top});
    ASSERT_EQ(top.shape(), c.index);
    layer->Forward({&data, &index}, {&top});
    const std::vector<float> x = data.ReadData(), y = top.ReadData();
    std::vector<float> dy(top.count());
    for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.25f * float(i % 11) - 1.f;
    std::vector<double> dx(data.count(), 0.0);
    for (int i = 0; i < top.count(); ++i) {
      std::vector<int> coords = Coords(i, c.index);
      coords[axis] = static_cast<int>(k[i]) + (k[i] < 0 ? c.data[axis] : 0);
      const int source = Offset(coords, c.data);
      ASSERT_EQ(y[i], x[source]) << i;
      dx[source] += dy[i];
    }
    top.WriteDiff(dy);
    data.SetDiff(7.f);  // overwritten, not accumulated
    layer->Backward({&top}, {true, false}, {&data, &index});
    const std::vector<float> got = data.ReadDiff();
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], dx[i], 1e-5) << i;
  }
}

TEST(GatherElements, GradientMatchesNumeric) {
  Blob data(TestContext(), {3, 4, 3}), index(TestContext(), {3, 5, 2}), top(TestContext());
  FillGaussian(&data, 0.f, 1.f, 5);
  index.WriteData(Indices(index.count(), 4, 2));
  auto layer = MakeLayer(Layer(1));
  layer->SetUp({&data, &index}, {&top});
  CheckGradient(*layer, {&data, &index}, {&top}, {0});
}

TEST(GatherElements, IndexOutOfRangeGivesNaNAndNoGradient) {
  Blob data(TestContext(), {2, 3}), index(TestContext(), {2, 2}), top(TestContext());
  data.WriteData({1, 2, 3, 4, 5, 6});
  index.WriteData({2, 3, -4, -1});  // rows: [3, NaN], [NaN, 6]
  auto layer = MakeLayer(Layer(1));
  layer->SetUp({&data, &index}, {&top});
  layer->Forward({&data, &index}, {&top});
  const std::vector<float> y = top.ReadData();
  EXPECT_EQ(y[0], 3.f);
  EXPECT_TRUE(std::isnan(y[1]));
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_EQ(y[3], 6.f);
  top.WriteDiff({1, 10, 100, 1000});
  layer->Backward({&top}, {true, false}, {&data, &index});
  EXPECT_EQ(data.ReadDiff(), (std::vector<float>{0, 0, 1, 0, 0, 1000}));
}

TEST(GatherElements, BadShapesAreOneClearError) {
  Blob data(TestContext(), {3, 4}), top(TestContext());
  Blob wider(TestContext(), {4, 2}), flat(TestContext(), {5});
  const std::string wide = ErrorOf([&] { MakeLayer(Layer(1))->SetUp({&data, &wider}, {&top}); });
  EXPECT_TRUE(Contains(wide, "the indices' axis 0 (4) exceeds the data's (3")) << wide;
  const std::string rank = ErrorOf([&] { MakeLayer(Layer(0))->SetUp({&data, &flat}, {&top}); });
  EXPECT_TRUE(Contains(rank, "must have as many axes as the data")) << rank;
  Blob index(TestContext(), {3, 4});
  const std::string axis = ErrorOf([&] { MakeLayer(Layer(2))->SetUp({&data, &index}, {&top}); });
  EXPECT_TRUE(Contains(axis, "axis 2 is out of range")) << axis;
}

}  // namespace test
}  // namespace dlcaffe
