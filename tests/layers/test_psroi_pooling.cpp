// PSROIPooling against R-FCN's kernel written out here in float (the same
// operations in the same order), on odd shapes: regions with fractional
// corners, regions reaching outside the map, a region thinner than a cell,
// a second image; its gradient against numerical differences and against
// the reference's scatter; zero gradients for the regions; bad parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dlcaffe/error.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

constexpr int kN = 2, kDim = 3, kGroup = 3, kH = 7, kW = 9;
constexpr float kScale = 0.5f;

std::string Param(float scale = kScale) {
  return "name: 'psroi' type: 'PSROIPooling' psroi_pooling_param { spatial_scale: " +
         std::to_string(scale) + " output_dim: " + std::to_string(kDim) +
         " group_size: " + std::to_string(kGroup) + " }";
}

// Regions (batch, x1, y1, x2, y2) in image pixels (2 per cell at scale 0.5).
const std::vector<float> kRois = {0, 0, 0, 17, 13,          // the whole map
                                  1, 2.4f, 3.6f, 9.5f, 8.2f,  // fractional corners
                                  0, -6, -4, 5, 20,            // reaching outside
                                  1, 10, 4, 10, 4,             // a single pixel: 0.5 cells
                                  1, 11, 2, 30, 30};           // mostly outside

struct Bin {
  int hstart, hend, wstart, wend;
};

// R-FCN's PSROIPoolingForward for bin (ph, pw) of region r.
Bin ReferenceBin(const float* roi, int ph, int pw, float scale) {
  const float start_w = std::round(roi[1]) * scale, start_h = std::round(roi[2]) * scale;
  const float end_w = (std::round(roi[3]) + 1.f) * scale, end_h = (std::round(roi[4]) + 1.f) * scale;
  const float roi_w = std::max(end_w - start_w, 0.1f), roi_h = std::max(end_h - start_h, 0.1f);
  const float bin_h = roi_h / float(kGroup), bin_w = roi_w / float(kGroup);
  Bin b;
  b.hstart = std::min(std::max(int(std::floor(float(ph) * bin_h + start_h)), 0), kH);
  b.wstart = std::min(std::max(int(std::floor(float(pw) * bin_w + start_w)), 0), kW);
  b.hend = std::min(std::max(int(std::ceil(float(ph + 1) * bin_h + start_h)), 0), kH);
  b.wend = std::min(std::max(int(std::ceil(float(pw + 1) * bin_w + start_w)), 0), kW);
  return b;
}

std::vector<float> ReferenceForward(const std::vector<float>& map, const std::vector<float>& rois) {
  const int R = int(rois.size() / 5), C = kDim * kGroup * kGroup;
  std::vector<float> top;
  for (int r = 0; r < R; ++r)
    for (int k = 0; k < kDim; ++k)
      for (int ph = 0; ph < kGroup; ++ph)
        for (int pw = 0; pw < kGroup; ++pw) {
          const Bin b = ReferenceBin(&rois[5 * r], ph, pw, kScale);
          const int n = int(rois[5 * r]), c = (k * kGroup + ph) * kGroup + pw;
          float sum = 0.f;
          for (int h = b.hstart; h < b.hend; ++h)
            for (int w = b.wstart; w < b.wend; ++w) sum += map[((size_t(n) * C + c) * kH + h) * kW + w];
          const bool empty = b.hend <= b.hstart || b.wend <= b.wstart;
          top.push_back(empty ? 0.f : sum / float((b.hend - b.hstart) * (b.wend - b.wstart)));
        }
  return top;
}

struct PsRun {
  PsRun() : map(TestContext(), {kN, kDim * kGroup * kGroup, kH, kW}), rois(TestContext(), {5, 5}),
          top(TestContext()), layer(MakeLayer(Param())) {
    FillUniform(&map, -1.f, 1.f, 3);
    rois.WriteData(kRois);
    layer->SetUp({&map, &rois}, {&top});
    layer->Forward({&map, &rois}, {&top});
  }
  Blob map, rois, top;
  std::unique_ptr<Layer> layer;
};

}  // namespace

TEST(PSROIPooling, MatchesRfcnsKernel) {
  PsRun run;
  EXPECT_EQ(run.top.shape(), (std::vector<int>{5, kDim, kGroup, kGroup}));
  const std::vector<float> expected = ReferenceForward(run.map.ReadData(), kRois);
  const std::vector<float> got = run.top.ReadData();
  ASSERT_EQ(got.size(), expected.size());
  int empty = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], expected[i], 1e-6f) << "element " << i;
    empty += expected[i] == 0.f;
  }
  EXPECT_GT(empty, 0);  // the region mostly outside has empty bins
}

// Every cell of a one-hot top diff's bin gets diff / area, as R-FCN's
// backward scatters it.
TEST(PSROIPooling, BackwardSpreadsEachBinOverItsCells) {
  PsRun run;
  const int R = 5, C = kDim * kGroup * kGroup;
  std::vector<float> top_diff(run.top.count());
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (float& d : top_diff) d = u(rng);
  run.top.WriteDiff(top_diff);
  run.rois.SetDiff(NAN);
  run.layer->Backward({&run.top}, {true, true}, {&run.map, &run.rois});
  std::vector<float> expected(run.map.count(), 0.f);
  for (int r = 0; r < R; ++r)
    for (int k = 0; k < kDim; ++k)
      for (int ph = 0; ph < kGroup; ++ph)
        for (int pw = 0; pw < kGroup; ++pw) {
          const Bin b = ReferenceBin(&kRois[5 * r], ph, pw, kScale);
          if (b.hend <= b.hstart || b.wend <= b.wstart) continue;
          const int n = int(kRois[5 * r]), c = (k * kGroup + ph) * kGroup + pw;
          const float d = top_diff[((r * kDim + k) * kGroup + ph) * kGroup + pw] /
                          float((b.hend - b.hstart) * (b.wend - b.wstart));
          for (int h = b.hstart; h < b.hend; ++h)
            for (int w = b.wstart; w < b.wend; ++w) expected[((size_t(n) * C + c) * kH + h) * kW + w] += d;
        }
  const std::vector<float> got = run.map.ReadDiff();
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], 1e-5f) << "element " << i;
  for (float v : run.rois.ReadDiff()) ASSERT_EQ(v, 0.f);
}

TEST(PSROIPooling, GradientMatchesNumeric) {
  PsRun run;
  CheckGradient(*run.layer, {&run.map, &run.rois}, {&run.top}, {0});
}

// Corners on whole cells at 1/16 (Faster R-CNN's stride): bin edges land on
// whole numbers, where a fused or inexact product would move them; and a
// region thinner than the 0.1 cells R-FCN widens it to.
TEST(PSROIPooling, EdgesOnWholeNumbersFollowTheFloatArithmetic) {
  Blob map(TestContext(), {1, kDim * kGroup * kGroup, kH, kW}), rois(TestContext(), {4, 5}),
      top(TestContext());
  FillUniform(&map, -1.f, 1.f, 7);
  // The last region is one pixel: 1/16 of a cell, widened to 0.1.
  const std::vector<float> r = {0, 16, 16, 111, 95, 0, 0, 0, 47, 47, 0, 31, 15, 142, 110, 0, 40, 40, 40, 40};
  rois.WriteData(r);
  auto layer = MakeLayer(Param(0.0625f));
  layer->SetUp({&map, &rois}, {&top});
  layer->Forward({&map, &rois}, {&top});
  std::vector<float> expected;
  const std::vector<float> data = map.ReadData();
  for (int i = 0; i < 4; ++i) {
    // ReferenceForward at scale 1/16 for one region.
    for (int k = 0; k < kDim; ++k)
      for (int ph = 0; ph < kGroup; ++ph)
        for (int pw = 0; pw < kGroup; ++pw) {
          const Bin b = ReferenceBin(&r[5 * i], ph, pw, 0.0625f);
          const int c = (k * kGroup + ph) * kGroup + pw;
          float sum = 0.f;
          for (int h = b.hstart; h < b.hend; ++h)
            for (int w = b.wstart; w < b.wend; ++w) sum += data[(size_t(c) * kH + h) * kW + w];
          const bool empty = b.hend <= b.hstart || b.wend <= b.wstart;
          expected.push_back(empty ? 0.f : sum / float((b.hend - b.hstart) * (b.wend - b.wstart)));
        }
  }
  const std::vector<float> got = top.ReadData();
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], 1e-6f) << "element " << i;
}

TEST(PSROIPooling, RejectsBadParametersAndShapes) {
  Blob map(TestContext(), {1, 4, 5, 5}), rois(TestContext(), {1, 5}), top(TestContext());
  for (const std::string& p : {std::string("psroi_pooling_param { spatial_scale: 1 group_size: 2 }"),
                               std::string("psroi_pooling_param { output_dim: 1 group_size: 2 }"),
                               std::string("psroi_pooling_param { spatial_scale: 1 output_dim: 2 group_size: 2 }")}) {
    SCOPED_TRACE(p);
    auto layer = MakeLayer("name: 'psroi' type: 'PSROIPooling' " + p);
    EXPECT_THROW(layer->SetUp({&map, &rois}, {&top}), Error);
  }
}

}  // namespace test
}  // namespace dlcaffe
