#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "util/error_of.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

std::string LayerText(int pooled_h, int pooled_w, float scale) {
  return "type: 'ROIPooling' roi_pooling_param { pooled_h: " + std::to_string(pooled_h) +
         " pooled_w: " + std::to_string(pooled_w) + " spatial_scale: " + std::to_string(scale) + " }";
}

// Fast R-CNN's region pooling, written from its definition: the region's
// corners scaled and rounded (half away from zero), at least one cell each
// way (S rows), bin ph's rows floor(ph * S / PH) .. ceil((ph + 1) * S / PH)
// exactly, offset by the region's start and clipped; an empty bin gives 0.
std::vector<float> Reference(const std::vector<float>& map, const std::vector<float>& rois, int N,
                             int C, int H, int W, int PH, int PW, float scale) {
  const int R = static_cast<int>(rois.size() / 5);
  std::vector<float> top;
  for (int r = 0; r < R; ++r) {
    const float* roi = &rois[5 * r];
    const int n = static_cast<int>(roi[0]);
    const int x1 = static_cast<int>(std::round(roi[1] * scale)), y1 = static_cast<int>(std::round(roi[2] * scale));
    const int x2 = static_cast<int>(std::round(roi[3] * scale)), y2 = static_cast<int>(std::round(roi[4] * scale));
    const int S_h = std::max(y2 - y1 + 1, 1), S_w = std::max(x2 - x1 + 1, 1);
    for (int c = 0; c < C; ++c)
      for (int ph = 0; ph < PH; ++ph)
        for (int pw = 0; pw < PW; ++pw) {
          const auto clip = [](int v, int hi) { return std::min(std::max(v, 0), hi); };
          const auto floor_div = [](int a, int b) { return int(std::floor(double(a) / b)); };
          const auto ceil_div = [](int a, int b) { return int(std::ceil(double(a) / b)); };
          const int hs = clip(floor_div(ph * S_h, PH) + y1, H), he = clip(ceil_div((ph + 1) * S_h, PH) + y1, H);
          const int ws = clip(floor_div(pw * S_w, PW) + x1, W), we = clip(ceil_div((pw + 1) * S_w, PW) + x1, W);
          if (n < 0 || n >= N) {
            top.push_back(std::numeric_limits<float>::quiet_NaN());
            continue;
          }
          float best = he > hs && we > ws ? -std::numeric_limits<float>::infinity() : 0.f;
          for (int h = hs; h < he; ++h)
            for (int w = ws; w < we; ++w) best = std::max(best, map[((size_t(n) * C + c) * H + h) * W + w]);
          top.push_back(best);
        }
  }
  return top;
}

// Regions: a plain one, one in the second image, a corner at .5 after
// scaling, one reaching outside the map, one cell, one wholly outside
// (empty bins), and one smaller than the grid (overlapping bins).
const std::vector<float> kRegions = {0, 2, 3, 17, 14,   1, 0, 0, 25, 21,  0, 3, 5, 9, 7,
                                     1, -6, 10, 40, 30, 0, 8, 8, 8, 8,    1, 60, 50, 70, 60,
                                     0, 4, 4, 6, 7};

}  // namespace

TEST(ROIPooling, ForwardMatchesFastRcnnsDefinition) {
  for (const auto& [PH, PW, scale] : std::vector<std::tuple<int, int, float>>{{3, 4, 0.5f}, {2, 2, 1.f}, {7, 5, 0.25f}}) {
    SCOPED_TRACE(LayerText(PH, PW, scale));
    Blob map(TestContext(), {2, 3, 11, 13}), rois(TestContext(), {7, 5}), top(TestContext());
    FillGaussian(&map, 0.f, 1.f, 3);
    rois.WriteData(kRegions);
    auto layer = MakeLayer(LayerText(PH, PW, scale));
    layer->SetUp({&map, &rois}, {&top});
    ASSERT_EQ(top.shape(), (std::vector<int>{7, 3, PH, PW}));
    layer->Forward({&map, &rois}, {&top});
    const std::vector<float> expected = Reference(map.ReadData(), kRegions, 2, 3, 11, 13, PH, PW, scale);
    const std::vector<float> got = top.ReadData();
    int empty = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], expected[i]) << "element " << i;  // a max: exact
      empty += got[i] == 0.f;
    }
    EXPECT_GT(empty, 0);  // the region outside the map
  }
}

// Values at least 0.05 apart (a shuffled ramp): the check's step of 0.01
// never changes which element of a bin is its max (near-ties of random
// values would put a kink inside the step).
TEST(ROIPooling, GradientMatchesNumeric) {
  Blob map(TestContext(), {2, 3, 11, 13}), rois(TestContext(), {7, 5, 1, 1}), top(TestContext());
  std::vector<float> ramp(map.count());
  std::iota(ramp.begin(), ramp.end(), 0.f);
  std::shuffle(ramp.begin(), ramp.end(), std::mt19937(5));
  for (float& x : ramp) x = 0.05f * x - 0.025f * map.count();
  map.WriteData(ramp);
  rois.WriteData(kRegions);
  auto layer = MakeLayer(LayerText(3, 4, 0.5f));
  layer->SetUp({&map, &rois}, {&top});
  CheckGradient(*layer, {&map, &rois}, {&top}, {0});
}

// The regions take no gradient in caffe-fast-rcnn: asked for one (a
// differentiable layer above them), they get zeros.
TEST(ROIPooling, RegionsGetAZeroGradient) {
  Blob map(TestContext(), {2, 3, 11, 13}), rois(TestContext(), {7, 5}), top(TestContext());
  FillGaussian(&map, 0.f, 1.f, 3);
  rois.WriteData(kRegions);
  auto layer = MakeLayer(LayerText(3, 4, 0.5f));
  layer->SetUp({&map, &rois}, {&top});
  layer->Forward({&map, &rois}, {&top});
  top.SetDiff(1.f);
  rois.SetDiff(NAN);
  layer->Backward({&top}, {true, true}, {&map, &rois});
  for (float v : rois.ReadDiff()) ASSERT_EQ(v, 0.f);
}

// A batch index outside the input cannot be checked on the host without a
// stall: its region's values are NaN, not another image's.
TEST(ROIPooling, ABatchIndexOutsideTheInputGivesNaN) {
  Blob map(TestContext(), {2, 1, 4, 4}), rois(TestContext(), {1, 5}), top(TestContext());
  FillGaussian(&map, 0.f, 1.f, 7);
  rois.WriteData({2, 0, 0, 3, 3});
  auto layer = MakeLayer(LayerText(2, 2, 1.f));
  layer->SetUp({&map, &rois}, {&top});
  layer->Forward({&map, &rois}, {&top});
  for (float v : top.ReadData()) EXPECT_TRUE(std::isnan(v));
}

TEST(ROIPooling, BadParametersAndShapesAreNamed) {
  Blob map(TestContext(), {1, 3, 4, 4}), rois(TestContext(), {2, 4}), top(TestContext());
  EXPECT_NE(ErrorOf([&] { MakeLayer(LayerText(0, 2, 1.f))->SetUp({&map, &rois}, {&top}); }).find("must be positive"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { MakeLayer(LayerText(2, 2, 1.f))->SetUp({&map, &rois}, {&top}); }).find("R x 5 regions"),
            std::string::npos);
}

}  // namespace test
}  // namespace dlcaffe
