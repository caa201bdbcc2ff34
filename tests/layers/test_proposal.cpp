#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "util/error_of.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

struct Settings {
  int stride = 16, base = 16, min_size = 16, pre = 6000, post = 300;
  float nms = 0.7f;
  std::vector<float> ratios = {0.5f, 1.f, 2.f}, scales = {8.f, 16.f, 32.f};
  bool defaults = false;  // leave ratio/scale out of the text

  std::string Text() const {
    std::string t = "type: 'Proposal' proposal_param { feat_stride: " + std::to_string(stride) +
                    " base_size: " + std::to_string(base) + " min_size: " + std::to_string(min_size) +
                    " pre_nms_topn: " + std::to_string(pre) + " post_nms_topn: " + std::to_string(post) +
                    " nms_thresh: " + std::to_string(nms);
    if (!defaults) {
      for (float r : ratios) t += " ratio: " + std::to_string(r);
      for (float s : scales) t += " scale: " + std::to_string(s);
    }
    return t + " }";
  }
};

// py-faster-rcnn's proposal layer (rpn/proposal_layer.py with
// generate_anchors.py, bbox_transform_inv, clip_boxes, _filter_boxes and
// its GPU nms), written from its definition: float32 arithmetic after the
// anchors (float64 in numpy, exact here).
std::vector<std::vector<float>> Reference(const Settings& s, int N, int A, int H, int W,
                                          const std::vector<float>& scores, const std::vector<float>& deltas,
                                          const std::vector<float>& info, bool info_per_image) {
  std::vector<float> anchors;
  const double center = 0.5 * (s.base - 1);
  for (float r : s.ratios) {
    const double ws = std::nearbyint(std::sqrt(double(s.base) * s.base / r)), hs = std::nearbyint(ws * r);
    for (float sc : s.scales) {
      const double w = ws * sc, h = hs * sc;
      for (double v : {center - 0.5 * (w - 1), center - 0.5 * (h - 1), center + 0.5 * (w - 1), center + 0.5 * (h - 1)})
        anchors.push_back(float(v));
    }
  }
  std::vector<std::vector<float>> rows;
  for (int n = 0; n < N; ++n) {
    const float* im = &info[info_per_image ? 3 * n : 0];
    std::vector<std::vector<float>> boxes;
    std::vector<std::pair<float, int>> order;
    for (int h = 0; h < H; ++h)
      for (int w = 0; w < W; ++w)
        for (int a = 0; a < A; ++a) {
          const float x1 = anchors[4 * a] + w * s.stride, y1 = anchors[4 * a + 1] + h * s.stride;
          const float x2 = anchors[4 * a + 2] + w * s.stride, y2 = anchors[4 * a + 3] + h * s.stride;
          const auto delta = [&](int k) { return deltas[((size_t(n) * 4 * A + 4 * a + k) * H + h) * W + w]; };
          const float aw = x2 - x1 + 1.f, ah = y2 - y1 + 1.f;
          const float cx = x1 + 0.5f * aw, cy = y1 + 0.5f * ah;
          const float pcx = delta(0) * aw + cx, pcy = delta(1) * ah + cy;
          const float pw = std::exp(delta(2)) * aw, ph = std::exp(delta(3)) * ah;
          const auto clip = [](float v, float hi) { return std::max(std::min(v, hi), 0.f); };
          std::vector<float> b = {clip(pcx - 0.5f * pw, im[1] - 1.f), clip(pcy - 0.5f * ph, im[0] - 1.f),
                                  clip(pcx + 0.5f * pw, im[1] - 1.f), clip(pcy + 0.5f * ph, im[0] - 1.f)};
          // The corners are differences of numbers this large: one rounding
          // of them (a device's exp, a fused multiply-add) moves a corner by
          // up to an ulp of this, whatever the corner's own size.
          b.push_back(std::max(std::fabs(pcx) + 0.5f * pw, std::fabs(pcy) + 0.5f * ph));
          const float least = s.min_size * im[2];
          if (b[2] - b[0] + 1.f >= least && b[3] - b[1] + 1.f >= least) {
            order.emplace_back(scores[((size_t(n) * 2 * A + A + a) * H + h) * W + w], int(boxes.size()));
          }
          boxes.push_back(b);
        }
    std::stable_sort(order.begin(), order.end(), [](auto& x, auto& y) { return x.first > y.first; });
    if (s.pre > 0 && int(order.size()) > s.pre) order.resize(s.pre);
    // GPU nms: a region goes when it overlaps a kept one by more than the
    // threshold; the first post_nms_topN kept stay.
    std::vector<int> kept;
    for (int k = 0; k < int(order.size()); ++k) {
      const std::vector<float>& b = boxes[order[k].second];
      bool keep = true;
      for (int j : kept) {
        const std::vector<float>& o = boxes[order[j].second];
        const float iw = std::max(std::min(b[2], o[2]) - std::max(b[0], o[0]) + 1.f, 0.f);
        const float ih = std::max(std::min(b[3], o[3]) - std::max(b[1], o[1]) + 1.f, 0.f);
        const float inter = iw * ih;
        const float area_b = (b[2] - b[0] + 1.f) * (b[3] - b[1] + 1.f), area_o = (o[2] - o[0] + 1.f) * (o[3] - o[1] + 1.f);
        keep = keep && !(inter / (area_b + area_o - inter) > s.nms);
      }
      if (keep) kept.push_back(k);
      if (s.post > 0 && int(kept.size()) == s.post) break;
    }
    for (int k : kept) {
      const std::vector<float>& b = boxes[order[k].second];
      rows.push_back({float(n), b[0], b[1], b[2], b[3], order[k].first, b[4]});
    }
  }
  return rows;
}

struct Inputs {
  int N, A, H, W;
  std::vector<float> scores, deltas, info;
  bool per_image;
};

Inputs MakeInputs(int N, int A, int H, int W, std::vector<float> info, unsigned seed) {
  Inputs in{N, A, H, W, {}, {}, info, info.size() > 3};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  std::normal_distribution<float> delta(0.f, 0.3f);
  for (int i = 0; i < N * 2 * A * H * W; ++i) in.scores.push_back(unit(rng));
  for (int i = 0; i < N * 4 * A * H * W; ++i) in.deltas.push_back(delta(rng));
  return in;
}

// Runs the layer built from `text`; rows of (image, x1, y1, x2, y2, score).
std::vector<std::vector<float>> RunLayer(const std::string& text, const Inputs& in) {
  Blob scores(TestContext(), {in.N, 2 * in.A, in.H, in.W}), deltas(TestContext(), {in.N, 4 * in.A, in.H, in.W}),
      info(TestContext(), {int(in.info.size() / 3), 3}), rois(TestContext()), roi_scores(TestContext());
  scores.WriteData(in.scores);
  deltas.WriteData(in.deltas);
  info.WriteData(in.info);
  auto layer = MakeLayer(text);
  layer->SetUp({&scores, &deltas, &info}, {&rois, &roi_scores});
  layer->Reshape({&scores, &deltas, &info}, {&rois, &roi_scores});
  layer->Forward({&scores, &deltas, &info}, {&rois, &roi_scores});
  EXPECT_EQ(rois.num_axes(), 2);
  EXPECT_EQ(roi_scores.shape(), (std::vector<int>{rois.shape(0), 1}));
  const std::vector<float> r = rois.ReadData(), s = roi_scores.ReadData();
  std::vector<std::vector<float>> rows;
  for (size_t i = 0; i < s.size(); ++i) rows.push_back({r[5 * i], r[5 * i + 1], r[5 * i + 2], r[5 * i + 3], r[5 * i + 4], s[i]});
  return rows;
}

void ExpectRows(const std::vector<std::vector<float>>& got, const std::vector<std::vector<float>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t r = 0; r < got.size(); ++r) {
    SCOPED_TRACE("region " + std::to_string(r));
    EXPECT_EQ(got[r][0], want[r][0]);
    // Two ulps of the terms the corner is the difference of (Reference).
    const float bound = 2 * std::numeric_limits<float>::epsilon() * std::max(want[r][6], 1.f);
    for (int k = 1; k < 5; ++k) EXPECT_NEAR(got[r][k], want[r][k], bound);
    EXPECT_EQ(got[r][5], want[r][5]);
  }
}

}  // namespace

TEST(Proposal, MatchesPyFasterRcnn) {
  std::vector<std::pair<Settings, Inputs>> cases;
  Settings small;  // py-faster-rcnn's anchors on a small odd map, fewer kept
  small.pre = 150, small.post = 25;
  cases.push_back({small, MakeInputs(1, 9, 7, 9, {120, 150, 1.f}, 1)});
  Settings two;  // two images with their own im_info (one scaled), other anchors, no post limit
  two.defaults = true, two.post = 0, two.pre = 0, two.nms = 0.5f, two.stride = 8;
  cases.push_back({two, MakeInputs(2, 9, 5, 6, {50, 44, 1.f, 40, 48, 1.6f}, 2)});
  Settings odd;  // one ratio, two scales, a large min_size, base 10
  odd.ratios = {0.7f}, odd.scales = {3.f, 6.f}, odd.base = 10, odd.min_size = 30, odd.stride = 12, odd.post = 40;
  cases.push_back({odd, MakeInputs(1, 2, 6, 5, {70, 64, 1.f}, 3)});
  Settings tiny;  // boxes of a few pixels: the end pixels counted in sizes and overlaps matter
  tiny.base = 4, tiny.ratios = {1.f}, tiny.scales = {1.f, 2.f}, tiny.stride = 2, tiny.min_size = 1, tiny.nms = 0.6f;
  cases.push_back({tiny, MakeInputs(1, 2, 6, 7, {12, 14, 1.f}, 4)});
  for (const auto& [s, in] : cases) {
    SCOPED_TRACE(s.Text());
    const auto want = Reference(s, in.N, in.A, in.H, in.W, in.scores, in.deltas, in.info, in.per_image);
    ASSERT_GT(want.size(), 5u);
    ExpectRows(RunLayer(s.Text(), in), want);
  }
}

// Suppression must matter: with nms_thresh 1 nothing is dropped.
TEST(Proposal, SuppressionDropsOverlappingRegions) {
  Settings s;
  s.post = 0;
  const Inputs in = MakeInputs(1, 9, 4, 5, {80, 96, 1.f}, 9);
  const size_t kept = RunLayer(s.Text(), in).size();
  s.nms = 1.f;
  const auto all = RunLayer(s.Text(), in);
  EXPECT_GT(all.size(), kept + 20);
  ExpectRows(all, Reference(s, in.N, in.A, in.H, in.W, in.scores, in.deltas, in.info, false));
}

// py-faster-rcnn's test.prototxt runs its proposal layer in Python: where
// Python layers are not registered, dlcaffe's Proposal stands in for it,
// reading param_str.
TEST(Proposal, StandsInForPyFasterRcnnsPythonLayer) {
  const Inputs in = MakeInputs(1, 12, 5, 7, {90, 110, 1.f}, 5);
  Settings s;
  s.stride = 8, s.scales = {4, 8, 16, 32};
  const std::string python =
      "name: 'proposal' type: 'Python' python_param { module: 'rpn.proposal_layer' layer: 'ProposalLayer' "
      "param_str: \"'feat_stride': 8\\n'scales': !!python/tuple [4, 8, 16, 32]\" }";
  ExpectRows(RunLayer(python, in), Reference(s, in.N, in.A, in.H, in.W, in.scores, in.deltas, in.info, false));
  EXPECT_NE(ErrorOf([] {
              MakeLayer("name: 'p' type: 'Python' python_param { module: 'rpn.proposal_layer' "
                        "layer: 'ProposalLayer' param_str: \"'feat_stride': 16, 'anchors': 5\" }");
            }).find("layer 'p': py-faster-rcnn's proposal layer runs natively (Proposal), which does not take "
                    "param_str's 'anchors'"),
            std::string::npos);
}

// Regions chosen by sorting: the bottoms' gradients are zero, written where
// asked for (py-faster-rcnn's layer has no backward either).
TEST(Proposal, WritesZeroGradientsToItsBottoms) {
  const Inputs in = MakeInputs(1, 9, 3, 4, {60, 70, 1.f}, 6);
  Blob scores(TestContext(), {1, 18, 3, 4}), deltas(TestContext(), {1, 36, 3, 4}), info(TestContext(), {1, 3}),
      rois(TestContext());
  scores.WriteData(in.scores);
  deltas.WriteData(in.deltas);
  info.WriteData(in.info);
  auto layer = MakeLayer("type: 'Proposal'");
  layer->SetUp({&scores, &deltas, &info}, {&rois});
  layer->Forward({&scores, &deltas, &info}, {&rois});
  for (Blob* b : {&scores, &deltas}) b->SetDiff(std::nanf(""));
  layer->Backward({&rois}, {true, true, false}, {&scores, &deltas, &info});
  for (const Blob* b : {&scores, &deltas})
    for (float g : b->ReadDiff()) ASSERT_EQ(g, 0.f);
}

TEST(Proposal, BadParametersAndShapesAreNamed) {
  Blob scores(TestContext(), {1, 18, 3, 4}), deltas(TestContext(), {1, 36, 3, 4}), info(TestContext(), {1, 3}),
      rois(TestContext());
  const auto error = [&](const std::string& text, Blob* s, Blob* d, Blob* i) {
    return ErrorOf([&] { MakeLayer(text)->SetUp({s, d, i}, {&rois}); });
  };
  EXPECT_EQ(error("type: 'Proposal'", &scores, &deltas, &info), "(no error)");
  EXPECT_NE(error("type: 'Proposal' proposal_param { ratio: 1 }", &scores, &deltas, &info)
                .find("bottom 0 (the scores) must be N x 6 x H x W"),
            std::string::npos);
  Blob bad_deltas(TestContext(), {1, 36, 3, 5}), bad_info(TestContext(), {1, 2});
  EXPECT_NE(error("type: 'Proposal'", &scores, &bad_deltas, &info).find("bottom 1 (the box deltas) must be 1 x 36 x 3 x 4"),
            std::string::npos);
  EXPECT_NE(error("type: 'Proposal'", &scores, &deltas, &bad_info).find("bottom 2 (im_info"), std::string::npos);
  EXPECT_NE(error("type: 'Proposal' proposal_param { scale: -2 }", &scores, &deltas, &info).find("scale must be positive"),
            std::string::npos);
}

}  // namespace test
}  // namespace dlcaffe
