#include <gtest/gtest.h>

#include <cmath>

#include <string>
#include <vector>

#include "dlcaffe/error.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

// The crop on the host: top shape and per-axis offsets, walking every top
// element's multi-index.
std::vector<float> ReferenceCrop(const std::vector<float>& x, const std::vector<int>& in_shape,
                                 const std::vector<int>& out_shape,
                                 const std::vector<int>& offsets) {
  const int axes = static_cast<int>(in_shape.size());
  int count = 1;
  for (int d : out_shape) count *= d;
  std::vector<float> y(count);
  std::vector<int> index(axes, 0);
  for (int i = 0; i < count; ++i) {
    int src = 0;
    for (int d = 0; d < axes; ++d) src = src * in_shape[d] + index[d] + offsets[d];
    y[i] = x[src];
    for (int d = axes - 1; d >= 0; --d) {
      if (++index[d] < out_shape[d]) break;
      index[d] = 0;
    }
  }
  return y;
}

void CheckCrop(const std::string& crop_param, const std::vector<int>& in_shape,
               const std::vector<int>& like_shape, const std::vector<int>& out_shape,
               const std::vector<int>& offsets) {
  SCOPED_TRACE(crop_param);
  Blob in(TestContext(), in_shape), like(TestContext(), like_shape), top(TestContext());
  FillUniform(&in, -1.f, 1.f, 3);
  FillUniform(&like, -1.f, 1.f, 4);
  auto layer = MakeLayer("name: 'crop' type: 'Crop' crop_param { " + crop_param + " }");
  layer->SetUp({&in, &like}, {&top});
  ASSERT_EQ(top.shape(), out_shape);
  layer->Forward({&in, &like}, {&top});
  EXPECT_EQ(top.ReadData(), ReferenceCrop(in.ReadData(), in_shape, out_shape, offsets));

  // Backward: the top diff inside the window, zeros elsewhere (the stale
  // bottom diff is overwritten).
  FillUniform(&top, -1.f, 1.f, 5);
  top.WriteDiff(top.ReadData());
  in.SetDiff(7.f);
  layer->Backward({&top}, {true, false}, {&in, &like});
  std::vector<float> marks(in.count());
  for (int i = 0; i < in.count(); ++i) marks[i] = float(i + 1);
  const std::vector<float> window = ReferenceCrop(marks, in_shape, out_shape, offsets);
  std::vector<float> expected(in.count(), 0.f);
  const std::vector<float> dy = top.ReadDiff();
  for (size_t i = 0; i < window.size(); ++i) expected[int(window[i]) - 1] = dy[i];
  EXPECT_EQ(in.ReadDiff(), expected);

  GradientCheckOptions options;
  options.max_checks_per_blob = 100;
  CheckGradient(*layer, {&in, &like}, {&top}, {0}, options);
}

TEST(Crop, DefaultAxisTwoNoOffset) {
  CheckCrop("", {2, 3, 13, 11}, {1, 1, 7, 5}, {2, 3, 7, 5}, {0, 0, 0, 0});
}

TEST(Crop, OneOffsetForAllAxes) {
  CheckCrop("axis: 2 offset: 3", {2, 3, 13, 11}, {5, 1, 7, 5}, {2, 3, 7, 5}, {0, 0, 3, 3});
}

TEST(Crop, OffsetPerAxisFromAxisOne) {
  CheckCrop("axis: 1 offset: 1 offset: 0 offset: 4", {3, 4, 6, 9}, {1, 3, 6, 5},
            {3, 3, 6, 5}, {0, 1, 0, 4});
}

TEST(Crop, NegativeAxisAndOddRanks) {
  CheckCrop("axis: -1 offset: 2", {3, 5, 13}, {1, 1, 1}, {3, 5, 1}, {0, 0, 2});
  CheckCrop("axis: 0 offset: 1 offset: 2", {4, 127}, {3, 125}, {3, 125}, {1, 2});
  CheckCrop("axis: 1", {2, 3, 2, 3, 3}, {9, 1, 2, 1, 2}, {2, 1, 2, 1, 2}, {0, 0, 0, 0, 0});
}

// A second Reshape with new shapes takes the new window (the layout on the
// device is rewritten when it changes).
TEST(Crop, ReshapeToOtherShapes) {
  Blob in(TestContext(), {2, 3, 13, 11}), like(TestContext(), {1, 1, 7, 5}), top(TestContext());
  auto layer = MakeLayer("type: 'Crop' crop_param { offset: 1 offset: 2 }");
  layer->SetUp({&in, &like}, {&top});
  layer->Forward({&in, &like}, {&top});
  in.Reshape({1, 2, 6, 9});
  like.Reshape({1, 1, 3, 4});
  FillUniform(&in, -1.f, 1.f, 8);
  layer->Reshape({&in, &like}, {&top});
  ASSERT_EQ(top.shape(), (std::vector<int>{1, 2, 3, 4}));
  layer->Forward({&in, &like}, {&top});
  EXPECT_EQ(top.ReadData(), ReferenceCrop(in.ReadData(), {1, 2, 6, 9}, {1, 2, 3, 4}, {0, 0, 1, 2}));
}

// The reference bottom gives a shape: its gradient is zero, written (a
// Split above it sums it with its other readers' gradients: FCN's skip
// crops read the upsampled scores that the sum reads too).
TEST(Crop, WritesAZeroGradientToItsReference) {
  Blob x(TestContext(), {2, 3, 6, 7}), reference(TestContext(), {2, 3, 4, 4}), top(TestContext());
  auto layer = MakeLayer("type: 'Crop' crop_param { axis: 2 offset: 1 }");
  layer->SetUp({&x, &reference}, {&top});
  layer->Forward({&x, &reference}, {&top});
  top.SetDiff(1.f);
  reference.SetDiff(std::nanf(""));
  layer->Backward({&top}, {true, true}, {&x, &reference});
  for (float g : reference.ReadDiff()) ASSERT_EQ(g, 0.f);
}

TEST(Crop, ClearErrors) {
  auto expect_error = [](const std::string& param, const std::vector<int>& a,
                         const std::vector<int>& b, const std::string& fragment) {
    Blob in(TestContext(), a), like(TestContext(), b), top(TestContext());
    try {
      auto layer = MakeLayer("name: 'crop7' type: 'Crop' crop_param { " + param + " }");
      layer->SetUp({&in, &like}, {&top});
      ADD_FAILURE() << "no error for " << param;
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("crop7"), std::string::npos) << message;
      EXPECT_NE(message.find(fragment), std::string::npos) << message;
    }
  };
  expect_error("offset: 3", {1, 2, 5, 5}, {1, 2, 3, 3}, "offset 3 plus size 3");
  expect_error("offset: 1 offset: 1 offset: 1", {1, 2, 5, 5}, {1, 2, 3, 3}, "3 offsets");
  expect_error("", {1, 2, 5, 5}, {1, 2, 3}, "same number of axes");
  expect_error("axis: 4", {1, 2, 5, 5}, {1, 2, 3, 3}, "axis 4");
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
