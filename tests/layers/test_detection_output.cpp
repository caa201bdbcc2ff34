#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "dlcaffe/net.hpp"
#include "util/error_of.hpp"
#include "util/layer_test_util.hpp"
#include "util/ssd_boxes.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

struct Settings {
  int classes = 5;
  bool share_location = true;
  int background = 0;
  float nms_threshold = 0.45f;
  int top_k = -1;  // -1: unset
  float eta = 1.f;
  int keep_top_k = -1;
  bool has_threshold = true;
  float threshold = 0.01f;
  int code_type = 2;  // CENTER_SIZE
  bool variance_in_target = false;

  std::string Text() const {
    const char* codes[] = {"", "CORNER", "CENTER_SIZE", "CORNER_SIZE"};
    std::string t = "type: 'DetectionOutput' detection_output_param { num_classes: " +
                    std::to_string(classes) + " share_location: " + (share_location ? "true" : "false") +
                    " background_label_id: " + std::to_string(background) +
                    " nms_param { nms_threshold: " + std::to_string(nms_threshold) +
                    " eta: " + std::to_string(eta);
    if (top_k >= 0) t += " top_k: " + std::to_string(top_k);
    t += " } code_type: " + std::string(codes[code_type]) +
         " variance_encoded_in_target: " + (variance_in_target ? "true" : "false") +
         " keep_top_k: " + std::to_string(keep_top_k);
    if (has_threshold) t += " confidence_threshold: " + std::to_string(threshold);
    return t + " }";
  }
};

// Caffe SSD's ApplyNMSFast and DetectionOutputLayer::Forward_cpu's loops
// (the box arithmetic: util/ssd_boxes.hpp), written from their definitions
// in float, in the same order of operations.
std::vector<int> Nms(const std::vector<Box>& boxes, const std::vector<float>& scores, float threshold,
                     float nms_threshold, float eta, int top_k) {
  std::vector<std::pair<float, int>> order;
  for (size_t i = 0; i < scores.size(); ++i)
    if (scores[i] > threshold) order.emplace_back(scores[i], static_cast<int>(i));
  std::stable_sort(order.begin(), order.end(), [](auto& a, auto& b) { return a.first > b.first; });
  if (top_k > -1 && top_k < static_cast<int>(order.size())) order.resize(top_k);
  std::vector<int> kept;
  float adaptive = nms_threshold;
  for (const auto& [score, idx] : order) {
    bool keep = true;
    for (int k : kept) keep = keep && Overlap(boxes[idx], boxes[k]) <= adaptive;
    if (!keep) continue;
    kept.push_back(idx);
    if (eta < 1.f && adaptive > 0.5f) adaptive *= eta;
  }
  return kept;
}

std::vector<std::vector<float>> Reference(const Settings& s, int N, int P, const std::vector<float>& loc,
                                          const std::vector<float>& conf, const std::vector<float>& prior) {
  const int L = s.share_location ? 1 : s.classes;
  std::vector<std::vector<float>> rows;
  for (int n = 0; n < N; ++n) {
    std::vector<std::vector<Box>> decoded(L, std::vector<Box>(P));
    for (int l = 0; l < L; ++l)
      for (int p = 0; p < P; ++p) {
        const Box pb{prior[4 * p], prior[4 * p + 1], prior[4 * p + 2], prior[4 * p + 3]};
        decoded[l][p] = Decode(pb, &prior[4 * (P + p)], &loc[((size_t(n) * P + p) * L + l) * 4],
                               s.code_type, s.variance_in_target);
      }
    std::map<int, std::vector<int>> kept;
    int detections = 0;
    for (int c = 0; c < s.classes; ++c) {
      if (c == s.background) continue;
      std::vector<float> scores(P);
      for (int p = 0; p < P; ++p) scores[p] = conf[(size_t(n) * P + p) * s.classes + c];
      kept[c] = Nms(decoded[s.share_location ? 0 : c], scores,
                    s.has_threshold ? s.threshold : -std::numeric_limits<float>::max(), s.nms_threshold,
                    s.eta, s.top_k);
      detections += static_cast<int>(kept[c].size());
    }
    if (s.keep_top_k > -1 && detections > s.keep_top_k) {
      // Ties cannot happen with these scores: Caffe's unstable sort is safe.
      std::vector<std::pair<float, std::pair<int, int>>> all;
      for (auto& [c, ids] : kept)
        for (int p : ids) all.push_back({conf[(size_t(n) * P + p) * s.classes + c], {c, p}});
      std::sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.first > b.first; });
      all.resize(s.keep_top_k);
      std::map<int, std::vector<int>> chosen;
      for (auto& [score, cp] : all) chosen[cp.first].push_back(cp.second);
      kept = chosen;
    }
    for (auto& [c, ids] : kept)
      for (int p : ids) {
        const Box& b = decoded[s.share_location ? 0 : c][p];
        rows.push_back({float(n), float(c), conf[(size_t(n) * P + p) * s.classes + c], b.xmin, b.ymin, b.xmax, b.ymax});
      }
  }
  return rows;
}

// A small SSD head's inputs: priors on a few grids of overlapping sizes,
// small location offsets, confidences that sum to one per prior.
struct Inputs {
  int N, P;
  std::vector<float> loc, conf, prior;
};

Inputs MakeInputs(const Settings& s, int N, unsigned seed) {
  Inputs in;
  in.N = N;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  std::vector<float> boxes, variances;
  for (int grid : {5, 3, 1})
    for (int y = 0; y < grid; ++y)
      for (int x = 0; x < grid; ++x)
        for (float size : {0.9f / grid, 1.3f / grid, 0.6f / grid}) {
          const float cx = (x + 0.5f) / grid, cy = (y + 0.5f) / grid;
          boxes.insert(boxes.end(), {cx - size / 2, cy - size / 2, cx + size / 2, cy + size / 3});
          variances.insert(variances.end(), {0.1f, 0.1f, 0.2f, 0.2f});
        }
  in.P = static_cast<int>(boxes.size() / 4);
  in.prior = boxes;
  in.prior.insert(in.prior.end(), variances.begin(), variances.end());
  const int L = s.share_location ? 1 : s.classes;
  std::normal_distribution<float> offset(0.f, s.variance_in_target ? 0.05f : 0.5f);
  for (int i = 0; i < N * in.P * L * 4; ++i) in.loc.push_back(offset(rng));
  for (int i = 0; i < N * in.P; ++i) {
    std::vector<float> e(s.classes);
    float sum = 0.f;
    for (float& v : e) sum += v = std::exp(4.f * unit(rng));
    for (float v : e) in.conf.push_back(v / sum);
  }
  return in;
}

// The layer set up and run on `in`, with its bottoms and top.
struct LayerRun {
  LayerRun(const Settings& s, const Inputs& in)
      : loc(TestContext(), {in.N, in.P * (s.share_location ? 1 : s.classes) * 4}),
        conf(TestContext(), {in.N, in.P * s.classes}),
        prior(TestContext(), {1, 2, in.P * 4}),
        top(TestContext()),
        layer(MakeLayer(s.Text())) {
    loc.WriteData(in.loc);
    conf.WriteData(in.conf);
    prior.WriteData(in.prior);
    layer->SetUp(bottoms(), {&top});
    EXPECT_EQ(top.shape(), (std::vector<int>{1, 1, 1, 7}));
    layer->Reshape(bottoms(), {&top});
    layer->Forward(bottoms(), {&top});
    EXPECT_EQ(top.num_axes(), 4);
  }
  std::vector<Blob*> bottoms() { return {&loc, &conf, &prior}; }
  std::vector<std::vector<float>> Rows() const {
    const std::vector<float> data = top.ReadData();
    std::vector<std::vector<float>> rows;
    for (size_t r = 0; r < data.size() / 7; ++r) rows.emplace_back(data.begin() + 7 * r, data.begin() + 7 * r + 7);
    return rows;
  }
  Blob loc, conf, prior, top;
  std::unique_ptr<Layer> layer;
};

std::vector<std::vector<float>> RunLayer(const Settings& s, const Inputs& in) {
  return LayerRun(s, in).Rows();
}

void ExpectRows(const std::vector<std::vector<float>>& got, const std::vector<std::vector<float>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t r = 0; r < got.size(); ++r) {
    SCOPED_TRACE("row " + std::to_string(r));
    EXPECT_EQ(got[r][0], want[r][0]);  // image
    EXPECT_EQ(got[r][1], want[r][1]);  // label
    EXPECT_EQ(got[r][2], want[r][2]);  // score: copied
    for (int k = 3; k < 7; ++k) EXPECT_NEAR(got[r][k], want[r][k], 2e-6f * (1.f + std::fabs(want[r][k])));
  }
}

}  // namespace

TEST(DetectionOutput, MatchesCaffeSsdsAlgorithm) {
  std::vector<std::pair<std::string, Settings>> cases;
  Settings ssd;  // SSD's deploy settings, smaller: top_k 20, keep_top_k 30
  ssd.top_k = 20, ssd.keep_top_k = 30;
  cases.push_back({"ssd", ssd});
  Settings per_class;  // a location per class, corners, no background, no threshold
  per_class.share_location = false, per_class.code_type = 1, per_class.background = -1;
  per_class.has_threshold = false, per_class.variance_in_target = true, per_class.nms_threshold = 0.3f;
  cases.push_back({"per class", per_class});
  Settings adaptive;  // CORNER_SIZE, adaptive NMS, background 2, keep_top_k above the kept
  adaptive.code_type = 3, adaptive.eta = 0.9f, adaptive.nms_threshold = 0.7f, adaptive.background = 2;
  adaptive.keep_top_k = 1000, adaptive.threshold = 0.1f, adaptive.classes = 4;
  cases.push_back({"adaptive", adaptive});
  Settings tight;  // keep_top_k cuts across classes; one class
  tight.classes = 2, tight.keep_top_k = 3, tight.top_k = 7;
  cases.push_back({"tight", tight});
  unsigned seed = 1;
  for (const auto& [name, s] : cases) {
    SCOPED_TRACE(name + ": " + s.Text());
    const Inputs in = MakeInputs(s, 3, seed++);
    const auto want = Reference(s, in.N, in.P, in.loc, in.conf, in.prior);
    ASSERT_GT(want.size(), 3u);
    ExpectRows(RunLayer(s, in), want);
  }
}

// NMS must matter in these cases (overlapping priors): without it the same
// inputs give more rows.
TEST(DetectionOutput, SuppressionDropsOverlappingBoxes) {
  Settings s;
  const Inputs in = MakeInputs(s, 2, 11);
  const size_t with_nms = RunLayer(s, in).size();
  s.nms_threshold = 1.f;
  const auto all = RunLayer(s, in);
  EXPECT_GT(all.size(), with_nms + 10);
  ExpectRows(all, Reference(s, in.N, in.P, in.loc, in.conf, in.prior));
}

// Equal scores go in prior order, as the fork's stable sort leaves them
// (keep_top_k unset: its own sort of equal scores is unspecified).
TEST(DetectionOutput, EqualScoresKeepPriorOrder) {
  Settings s;
  s.top_k = 12;
  Inputs in = MakeInputs(s, 2, 17);
  for (float& c : in.conf) c = std::floor(c * 8.f) / 8.f;  // few values, many ties
  const auto want = Reference(s, in.N, in.P, in.loc, in.conf, in.prior);
  ASSERT_GT(want.size(), 10u);
  ExpectRows(RunLayer(s, in), want);
}

TEST(DetectionOutput, NothingFoundGivesOneRowPerImage) {
  Settings s;
  s.threshold = 1.5f;
  const auto rows = RunLayer(s, MakeInputs(s, 3, 4));
  ASSERT_EQ(rows.size(), 3u);
  for (int n = 0; n < 3; ++n)
    EXPECT_EQ(rows[n], (std::vector<float>{float(n), -1, -1, -1, -1, -1, -1}));
}

// A second pass with other data reshapes the top to its rows.
TEST(DetectionOutput, RowsFollowTheData) {
  Settings s;
  s.keep_top_k = 10;
  const Inputs a = MakeInputs(s, 2, 21), b = MakeInputs(s, 2, 22);
  const int L = 1;
  Blob loc(TestContext(), {2, a.P * L * 4}), conf(TestContext(), {2, a.P * s.classes}),
      prior(TestContext(), {1, 2, a.P * 4}), top(TestContext());
  auto layer = MakeLayer(s.Text());
  prior.WriteData(a.prior);
  layer->SetUp({&loc, &conf, &prior}, {&top});
  for (const Inputs* in : {&a, &b}) {
    loc.WriteData(in->loc);
    conf.WriteData(in->conf);
    layer->Reshape({&loc, &conf, &prior}, {&top});
    layer->Forward({&loc, &conf, &prior}, {&top});
    const auto want = Reference(s, in->N, in->P, in->loc, in->conf, in->prior);
    ASSERT_EQ(top.shape(), (std::vector<int>{1, 1, static_cast<int>(want.size()), 7}));
  }
}

// In a net (TEST phase, with its memory plan) behind PriorBox: the top takes
// each pass's rows.
TEST(DetectionOutput, RunsInANetBehindPriorBox) {
  Net net(NetFromText(R"(
    layer { name: 'loc' type: 'Input' top: 'loc' input_param { shape { dim: 2 dim: 400 } } }
    layer { name: 'conf' type: 'Input' top: 'conf' input_param { shape { dim: 2 dim: 300 } } }
    layer { name: 'map' type: 'Input' top: 'map' input_param { shape { dim: 1 dim: 1 dim: 5 dim: 5 } } }
    layer { name: 'image' type: 'Input' top: 'image' input_param { shape { dim: 1 dim: 3 dim: 50 dim: 50 } } }
    layer { name: 'priors' type: 'PriorBox' bottom: 'map' bottom: 'image' top: 'priors'
            prior_box_param { min_size: 12 max_size: 30 aspect_ratio: 2 flip: true variance: 0.1
                              variance: 0.1 variance: 0.2 variance: 0.2 } }
    layer { name: 'detection' type: 'DetectionOutput' bottom: 'loc' bottom: 'conf' bottom: 'priors'
            top: 'detections'
            detection_output_param { num_classes: 3 nms_param { nms_threshold: 0.45 top_k: 40 }
                                     code_type: CENTER_SIZE keep_top_k: 25 confidence_threshold: 0.05 } })",
                      caffe::TEST),
          TestContext());
  Settings s;
  s.classes = 3, s.top_k = 40, s.keep_top_k = 25, s.threshold = 0.05f;
  for (unsigned seed : {31u, 32u}) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> offset(0.f, 0.5f);
    std::uniform_real_distribution<float> unit(0.f, 1.f);
    std::vector<float> loc(800), conf;
    for (float& v : loc) v = offset(rng);
    for (int i = 0; i < 200; ++i) {
      const float a = unit(rng), b = unit(rng), c = unit(rng);
      conf.insert(conf.end(), {a / (a + b + c), b / (a + b + c), c / (a + b + c)});
    }
    net.blob_by_name("loc")->WriteData(loc);
    net.blob_by_name("conf")->WriteData(conf);
    net.Forward();
    const auto want = Reference(s, 2, 100, loc, conf, net.blob_by_name("priors")->ReadData());
    ASSERT_GT(want.size(), 10u);
    const Blob& top = *net.blob_by_name("detections");
    ASSERT_EQ(top.shape(), (std::vector<int>{1, 1, static_cast<int>(want.size()), 7}));
    const std::vector<float> data = top.ReadData();
    std::vector<std::vector<float>> rows;
    for (size_t r = 0; r < want.size(); ++r) rows.emplace_back(data.begin() + 7 * r, data.begin() + 7 * r + 7);
    ExpectRows(rows, want);
  }
}

// The detections are chosen by sorting: the bottoms' gradients are zero,
// written where asked for.
TEST(DetectionOutput, WritesZeroGradientsToItsBottoms) {
  Settings s;
  LayerRun run(s, MakeInputs(s, 1, 3));
  for (Blob* b : run.bottoms()) b->SetDiff(std::nanf(""));
  run.layer->Backward({&run.top}, {true, true, false}, run.bottoms());
  for (const Blob* b : {&run.loc, &run.conf})
    for (float g : b->ReadDiff()) ASSERT_EQ(g, 0.f);
  for (float g : run.prior.ReadDiff()) ASSERT_TRUE(std::isnan(g));  // not asked for: untouched
}

TEST(DetectionOutput, BadParametersAndShapesAreNamed) {
  Blob loc(TestContext(), {1, 8}), conf(TestContext(), {1, 6}), prior(TestContext(), {1, 2, 8}), top(TestContext());
  const auto error = [&](const std::string& text) {
    return ErrorOf([&] { MakeLayer(text)->SetUp({&loc, &conf, &prior}, {&top}); });
  };
  EXPECT_NE(error("type: 'DetectionOutput' detection_output_param { }").find("num_classes must be given"),
            std::string::npos);
  EXPECT_NE(error("type: 'DetectionOutput' detection_output_param { num_classes: 3 background_label_id: 3 }")
                .find("background_label_id 3"),
            std::string::npos);
  EXPECT_NE(error("type: 'DetectionOutput' detection_output_param { num_classes: 3 nms_param { eta: 0 } }")
                .find("eta must be in (0, 1]"),
            std::string::npos);
  // 2 priors x 3 classes fits conf; loc needs 8 x 3 without share_location.
  EXPECT_EQ(error("type: 'DetectionOutput' detection_output_param { num_classes: 3 }"), "(no error)");
  EXPECT_NE(error("type: 'DetectionOutput' detection_output_param { num_classes: 3 share_location: false }")
                .find("bottom 0 (the locations) must be N x 24"),
            std::string::npos);
  EXPECT_NE(error("type: 'DetectionOutput' detection_output_param { num_classes: 4 }")
                .find("bottom 1 (the confidences) must be 1 x 8"),
            std::string::npos);
}

}  // namespace test
}  // namespace dlcaffe
