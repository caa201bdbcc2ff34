// MultiBoxLoss against Caffe SSD's algorithm (MatchBBox, MineHardExamples,
// EncodeBBox, the smooth L1 / Euclidean and softmax / logistic losses of
// MultiBoxLossLayer) written out here on the host, its gradient against
// that and against numerical differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "dlcaffe/error.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/ssd_boxes.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

struct Settings {
  int classes = 4;
  int background = 0;
  bool per_prediction = true;
  float overlap_threshold = 0.5f;
  bool use_prior_for_matching = true;
  bool use_difficult_gt = true;
  float neg_pos_ratio = 3.f;
  float neg_overlap = 0.5f;
  int code_type = 2;  // CENTER_SIZE
  bool variance_in_target = false;
  bool agnostic = false;
  bool ignore_cross = false;
  bool mining = true;  // MAX_NEGATIVE; false: NONE
  bool l2 = false;
  bool logistic = false;
  float loc_weight = 1.f;
  std::string normalization = "VALID";

  std::string Text() const {
    const char* codes[] = {"", "CORNER", "CENTER_SIZE", "CORNER_SIZE"};
    auto flag = [](bool b) { return b ? std::string("true") : std::string("false"); };
    return "type: 'MultiBoxLoss' multibox_loss_param { num_classes: " + std::to_string(classes) +
           " background_label_id: " + std::to_string(background) +
           " match_type: " + (per_prediction ? "PER_PREDICTION" : "BIPARTITE") +
           " overlap_threshold: " + std::to_string(overlap_threshold) +
           " use_prior_for_matching: " + flag(use_prior_for_matching) +
           " use_difficult_gt: " + flag(use_difficult_gt) +
           " neg_pos_ratio: " + std::to_string(neg_pos_ratio) +
           " neg_overlap: " + std::to_string(neg_overlap) + " code_type: " + codes[code_type] +
           " encode_variance_in_target: " + flag(variance_in_target) +
           " map_object_to_agnostic: " + flag(agnostic) +
           " ignore_cross_boundary_bbox: " + flag(ignore_cross) +
           " mining_type: " + (mining ? "MAX_NEGATIVE" : "NONE") +
           " loc_loss_type: " + (l2 ? "L2" : "SMOOTH_L1") +
           " conf_loss_type: " + (logistic ? "LOGISTIC" : "SOFTMAX") +
           " loc_weight: " + std::to_string(loc_weight) +
           " } loss_param { normalization: " + normalization + " }";
  }
};

struct Inputs {
  int N = 0, P = 0;
  std::vector<float> loc, conf, prior, gt;  // gt: rows of 8
};

// Priors of a 6 x 6 map, three shapes per cell, some crossing the image's
// edge; variances 0.1, 0.1, 0.2, 0.2.
std::vector<float> Priors(int* count) {
  std::vector<Box> boxes;
  for (int y = 0; y < 6; ++y)
    for (int x = 0; x < 6; ++x) {
      const float cx = (x + 0.5f) / 6.f, cy = (y + 0.5f) / 6.f;
      for (auto [w, h] : {std::pair{0.2f, 0.2f}, {0.35f, 0.2f}, {0.2f, 0.4f}})
        boxes.push_back({cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2});
    }
  *count = static_cast<int>(boxes.size());
  std::vector<float> out;
  for (const Box& b : boxes) out.insert(out.end(), {b.xmin, b.ymin, b.xmax, b.ymax});
  for (size_t i = 0; i < boxes.size(); ++i) out.insert(out.end(), {0.1f, 0.1f, 0.2f, 0.2f});
  return out;
}

// N images; image 2 (when there) has no box; one box is difficult. Rows are
// not in image order.
Inputs MakeInputs(int N, int classes, unsigned seed) {
  Inputs in;
  in.N = N;
  in.prior = Priors(&in.P);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f), small(-0.6f, 0.6f);
  std::normal_distribution<float> g(0.f, 1.5f);
  for (int i = 0; i < N * in.P * 4; ++i) in.loc.push_back(small(rng));
  for (int i = 0; i < N * in.P * classes; ++i) in.conf.push_back(g(rng));
  std::vector<std::vector<float>> rows;
  for (int n = 0; n < N; ++n) {
    if (n == 2) continue;
    const int boxes = 1 + n % 3;
    for (int b = 0; b < boxes; ++b) {
      const float w = 0.15f + 0.4f * u(rng), h = 0.15f + 0.4f * u(rng);
      const float x = (1.f - w) * u(rng), y = (1.f - h) * u(rng);
      const int label = 1 + static_cast<int>(u(rng) * (classes - 1)) % (classes - 1);
      rows.push_back({float(n), float(label), float(b), x, y, x + w, y + h,
                      n == 1 && b == 1 ? 1.f : 0.f});
    }
  }
  std::shuffle(rows.begin(), rows.end(), rng);
  for (const auto& r : rows) in.gt.insert(in.gt.end(), r.begin(), r.end());
  return in;
}

Box PriorBox(const Inputs& in, int p) {
  return {in.prior[4 * p], in.prior[4 * p + 1], in.prior[4 * p + 2], in.prior[4 * p + 3]};
}
const float* Variance(const Inputs& in, int p) { return &in.prior[4 * (in.P + p)]; }

// Caffe SSD's EncodeBBox.
std::vector<float> Encode(const Box& prior, const float* var, const Box& b, int code, bool in_target) {
  const float v[4] = {in_target ? 1.f : var[0], in_target ? 1.f : var[1], in_target ? 1.f : var[2],
                      in_target ? 1.f : var[3]};
  if (code == 1)
    return {(b.xmin - prior.xmin) / v[0], (b.ymin - prior.ymin) / v[1], (b.xmax - prior.xmax) / v[2],
            (b.ymax - prior.ymax) / v[3]};
  const float pw = prior.xmax - prior.xmin, ph = prior.ymax - prior.ymin;
  if (code == 2) {
    const float pcx = (prior.xmin + prior.xmax) / 2.f, pcy = (prior.ymin + prior.ymax) / 2.f;
    const float bcx = (b.xmin + b.xmax) / 2.f, bcy = (b.ymin + b.ymax) / 2.f;
    return {(bcx - pcx) / pw / v[0], (bcy - pcy) / ph / v[1],
            std::log((b.xmax - b.xmin) / pw) / v[2], std::log((b.ymax - b.ymin) / ph) / v[3]};
  }
  return {(b.xmin - prior.xmin) / pw / v[0], (b.ymin - prior.ymin) / ph / v[1],
          (b.xmax - prior.xmax) / pw / v[2], (b.ymax - prior.ymax) / ph / v[3]};
}

struct Matching {
  std::vector<int> match;          // per (n, p): gt row, -1, -2
  std::vector<float> overlap;      // per (n, p): the best overlap
  std::vector<int> role;           // per (n, p): target label or -1
};

// Caffe SSD's MatchBBox (BIPARTITE, then PER_PREDICTION) and
// MineHardExamples (MAX_NEGATIVE) with their loops as written.
Matching Match(const Settings& s, const Inputs& in) {
  Matching m;
  m.match.assign(size_t(in.N) * in.P, -1);
  m.overlap.assign(size_t(in.N) * in.P, 0.f);
  m.role.assign(size_t(in.N) * in.P, -1);
  const int rows = static_cast<int>(in.gt.size() / 8);
  auto label_of = [&](int row) {
    return row < 0 ? s.background : s.agnostic ? s.background + 1 : int(in.gt[8 * row + 1]);
  };
  for (int n = 0; n < in.N; ++n) {
    std::vector<int> gt;  // rows of this image, in row order
    for (int r = 0; r < rows; ++r)
      if (int(in.gt[8 * r]) == n && (s.use_difficult_gt || in.gt[8 * r + 7] == 0.f)) gt.push_back(r);
    auto gt_box = [&](int j) {
      const float* r = &in.gt[8 * gt[j]];
      return Box{r[3], r[4], r[5], r[6]};
    };
    std::vector<Box> boxes(in.P);
    for (int p = 0; p < in.P; ++p)
      boxes[p] = s.use_prior_for_matching
                     ? PriorBox(in, p)
                     : Decode(PriorBox(in, p), Variance(in, p), &in.loc[(size_t(n) * in.P + p) * 4],
                              s.code_type, s.variance_in_target);
    int* match = &m.match[size_t(n) * in.P];
    float* match_overlap = &m.overlap[size_t(n) * in.P];
    std::map<int, std::map<int, float>> overlaps;
    for (int i = 0; i < in.P; ++i) {
      const Box& b = boxes[i];
      if (s.ignore_cross && (b.xmin < 0 || b.xmin > 1 || b.ymin < 0 || b.ymin > 1 || b.xmax < 0 ||
                             b.xmax > 1 || b.ymax < 0 || b.ymax > 1)) {
        match[i] = -2;
        continue;
      }
      for (size_t j = 0; j < gt.size(); ++j) {
        const float o = Overlap(b, gt_box(j));
        if (o > 1e-6f) {
          match_overlap[i] = std::max(match_overlap[i], o);
          overlaps[i][j] = o;
        }
      }
    }
    std::vector<int> pool;
    for (size_t j = 0; j < gt.size(); ++j) pool.push_back(int(j));
    while (!pool.empty()) {
      int max_idx = -1, max_gt = -1;
      float max_overlap = -1;
      for (auto& [i, row] : overlaps) {
        if (match[i] != -1) continue;
        for (int j : pool)
          if (row.count(j) && row[j] > max_overlap) max_idx = i, max_gt = j, max_overlap = row[j];
      }
      if (max_idx == -1) break;
      match[max_idx] = gt[max_gt];
      match_overlap[max_idx] = max_overlap;
      pool.erase(std::find(pool.begin(), pool.end(), max_gt));
    }
    if (s.per_prediction)
      for (auto& [i, row] : overlaps) {
        if (match[i] != -1) continue;
        int max_gt = -1;
        float max_overlap = -1;
        for (size_t j = 0; j < gt.size(); ++j)
          if (row.count(int(j)) && row[int(j)] >= s.overlap_threshold && row[int(j)] > max_overlap)
            max_gt = int(j), max_overlap = row[int(j)];
        if (max_gt != -1) match[i] = gt[max_gt], match_overlap[i] = max_overlap;
      }
    // Mining.
    int* role = &m.role[size_t(n) * in.P];
    int positives = 0;
    for (int i = 0; i < in.P; ++i)
      if (match[i] >= 0) role[i] = label_of(match[i]), ++positives;
    if (!s.mining) {
      for (int i = 0; i < in.P; ++i) role[i] = label_of(match[i]);
      continue;
    }
    std::vector<std::pair<float, int>> candidates;
    for (int i = 0; i < in.P; ++i) {
      if (match[i] != -1 || match_overlap[i] >= s.neg_overlap) continue;
      const float* x = &in.conf[(size_t(n) * in.P + i) * s.classes];
      float loss = 0.f;
      if (s.logistic) {
        for (int c = 0; c < s.classes; ++c) {
          const float v = x[c], pos = v >= 0 ? 1.f : 0.f;
          loss -= v * ((c == s.background ? 1.f : 0.f) - pos) - std::log(1.f + std::exp(v - 2.f * v * pos));
        }
      } else {
        const float most = *std::max_element(x, x + s.classes);
        float sum = 0.f;
        for (int c = 0; c < s.classes; ++c) sum += std::exp(x[c] - most);
        loss = -std::log(std::max(std::exp(x[s.background] - most) / sum, FLT_MIN));
      }
      candidates.emplace_back(loss, i);
    }
    const int wanted = std::min(static_cast<int>(positives * s.neg_pos_ratio), int(candidates.size()));
    std::sort(candidates.begin(), candidates.end(), [](auto& a, auto& b) {
      return a.first > b.first || (a.first == b.first && a.second < b.second);
    });
    for (int k = 0; k < wanted; ++k) role[candidates[k].second] = s.background;
  }
  return m;
}

struct Expected {
  double loss = 0;
  std::vector<float> loc_diff, conf_diff;
};

// The loss and its gradient (for a top diff of 1) from the matching.
Expected Reference(const Settings& s, const Inputs& in, const Matching& m) {
  Expected e;
  e.loc_diff.assign(in.loc.size(), 0.f);
  e.conf_diff.assign(in.conf.size(), 0.f);
  int matches = 0;
  for (int v : m.match) matches += v >= 0;
  double norm = 1;
  if (s.normalization == "FULL") norm = double(in.N) * in.P;
  if (s.normalization == "VALID") norm = matches;
  if (s.normalization == "BATCH_SIZE") norm = in.N;
  norm = std::max(norm, 1.0);
  double loc_loss = 0, conf_loss = 0;
  for (int n = 0; n < in.N; ++n)
    for (int p = 0; p < in.P; ++p) {
      const size_t i = size_t(n) * in.P + p;
      if (m.match[i] >= 0) {
        const float* r = &in.gt[8 * m.match[i]];
        const std::vector<float> t = Encode(PriorBox(in, p), Variance(in, p), Box{r[3], r[4], r[5], r[6]},
                                            s.code_type, s.variance_in_target);
        for (int k = 0; k < 4; ++k) {
          const float d = in.loc[4 * i + k] - t[k], a = std::fabs(d);
          loc_loss += s.l2 ? 0.5 * d * d : a < 1 ? 0.5 * d * d : a - 0.5;
          e.loc_diff[4 * i + k] = float(s.loc_weight * (s.l2 || a < 1 ? d : (d > 0 ? 1 : -1)) / norm);
        }
      }
      const int label = m.role[i];
      if (label < 0) continue;
      const float* x = &in.conf[i * s.classes];
      float* dx = &e.conf_diff[i * s.classes];
      if (s.logistic) {
        for (int c = 0; c < s.classes; ++c) {
          const double sig = 1 / (1 + std::exp(-double(x[c]))), t = c == label;
          conf_loss -= t * std::log(std::max(sig, 1e-300)) + (1 - t) * std::log(std::max(1 - sig, 1e-300));
          dx[c] = float((sig - t) / norm);
        }
      } else {
        const double most = *std::max_element(x, x + s.classes);
        double sum = 0;
        for (int c = 0; c < s.classes; ++c) sum += std::exp(x[c] - most);
        conf_loss -= std::log(std::exp(x[label] - most) / sum);
        for (int c = 0; c < s.classes; ++c) dx[c] = float((std::exp(x[c] - most) / sum - (c == label)) / norm);
      }
    }
  e.loss = (s.loc_weight * loc_loss + conf_loss) / norm;
  return e;
}

// The layer set up and run forward on `in`.
struct LayerRun {
  LayerRun(const Settings& s, const Inputs& in)
      : loc(TestContext(), {in.N, in.P * 4}),
        conf(TestContext(), {in.N, in.P * s.classes}),
        prior(TestContext(), {1, 2, in.P * 4}),
        gt(TestContext(), {1, 1, int(in.gt.size() / 8), 8}),
        top(TestContext()),
        layer(MakeLayer(s.Text())) {
    loc.WriteData(in.loc);
    conf.WriteData(in.conf);
    prior.WriteData(in.prior);
    gt.WriteData(in.gt);
    layer->SetUp(bottoms(), {&top});
    layer->Forward(bottoms(), {&top});
  }
  std::vector<Blob*> bottoms() { return {&loc, &conf, &prior, &gt}; }
  void Backward() {
    top.SetDiff(1.f);
    layer->Backward({&top}, {true, true, false, false}, bottoms());
  }
  Blob loc, conf, prior, gt, top;
  std::unique_ptr<Layer> layer;
};

void ExpectMatchesReference(const Settings& s, const Inputs& in) {
  SCOPED_TRACE(s.Text());
  const Matching m = Match(s, in);
  int matches = 0, chosen = 0;
  for (size_t i = 0; i < m.match.size(); ++i) matches += m.match[i] >= 0, chosen += m.role[i] >= 0;
  // The case must exercise both matching and mining.
  ASSERT_GT(matches, 0);
  ASSERT_GT(chosen, matches);
  const Expected e = Reference(s, in, m);
  LayerRun run(s, in);
  EXPECT_NEAR(run.top.ReadData()[0], e.loss, 2e-5 * std::max(1.0, std::fabs(e.loss)));
  run.Backward();
  const std::vector<float> loc_diff = run.loc.ReadDiff(), conf_diff = run.conf.ReadDiff();
  for (size_t i = 0; i < loc_diff.size(); ++i)
    ASSERT_NEAR(loc_diff[i], e.loc_diff[i], 1e-5f) << "location gradient " << i;
  for (size_t i = 0; i < conf_diff.size(); ++i)
    ASSERT_NEAR(conf_diff[i], e.conf_diff[i], 1e-5f) << "confidence gradient " << i
                                                     << " (prior " << i / s.classes << ")";
}

// Moves each matched prediction off the smooth L1 loss's kinks at +-1 (for
// numerical differences).
void AvoidKinks(const Settings& s, Inputs* in) {
  const Matching m = Match(s, *in);
  for (size_t i = 0; i < m.match.size(); ++i) {
    if (m.match[i] < 0) continue;
    const int p = int(i % in->P);
    const float* r = &in->gt[8 * m.match[i]];
    const std::vector<float> t = Encode(PriorBox(*in, p), Variance(*in, p), Box{r[3], r[4], r[5], r[6]},
                                        s.code_type, s.variance_in_target);
    for (int k = 0; k < 4; ++k) {
      const float d = in->loc[4 * i + k] - t[k];
      if (std::fabs(std::fabs(d) - 1.f) < 0.1f) in->loc[4 * i + k] += d > 0 ? 0.25f : -0.25f;
    }
  }
}

}  // namespace

TEST(MultiBoxLoss, MatchesCaffeSsdsAlgorithm) {
  std::vector<Settings> cases(1);  // SSD's: PER_PREDICTION, CENTER_SIZE, smooth L1, softmax
  Settings s;
  s.per_prediction = false, s.code_type = 1, s.l2 = true, s.normalization = "FULL";
  cases.push_back(s);
  s = Settings();
  s.code_type = 3, s.logistic = true, s.use_difficult_gt = false, s.normalization = "BATCH_SIZE";
  cases.push_back(s);
  s = Settings();
  s.variance_in_target = true, s.agnostic = true, s.ignore_cross = true, s.neg_pos_ratio = 1.5f,
  s.loc_weight = 2.5f, s.normalization = "NONE";
  cases.push_back(s);
  s = Settings();
  s.mining = false, s.overlap_threshold = 0.3f, s.background = 3;
  cases.push_back(s);
  s = Settings();
  s.use_prior_for_matching = false, s.neg_overlap = 0.3f;
  cases.push_back(s);
  for (const Settings& c : cases) {
    const Inputs in = MakeInputs(4, c.classes, 7);
    // With background 3 the rows' labels are 1..3: move 3 to 0.
    Inputs fixed = in;
    if (c.background != 0)
      for (size_t r = 0; r < fixed.gt.size() / 8; ++r)
        if (fixed.gt[8 * r + 1] == float(c.background)) fixed.gt[8 * r + 1] = 0.f;
    ExpectMatchesReference(c, fixed);
  }
}

// Equal losses: the mining takes the first priors among them.
TEST(MultiBoxLoss, MiningTakesTheFirstAmongEqualLosses) {
  Settings s;
  s.neg_pos_ratio = 2.f;
  Inputs in = MakeInputs(2, s.classes, 3);
  std::fill(in.conf.begin(), in.conf.end(), 0.5f);
  ExpectMatchesReference(s, in);
  const Matching m = Match(s, in);
  int first_unmatched = -1, second_unmatched = -1;
  for (int p = 0; p < in.P && second_unmatched < 0; ++p)
    if (m.match[p] == -1 && m.overlap[p] < s.neg_overlap)
      (first_unmatched < 0 ? first_unmatched : second_unmatched) = p;
  EXPECT_EQ(m.role[first_unmatched], 0);
  EXPECT_EQ(m.role[second_unmatched], 0);
}

// Equal overlaps: each prior given twice and two equal boxes of different
// labels. Bipartite matching pairs the first prior with the first box, and
// per-prediction matching takes the first box, as Caffe SSD's loops do.
TEST(MultiBoxLoss, EqualOverlapsMatchInCaffeSsdsOrder) {
  Settings s;
  Inputs in = MakeInputs(1, s.classes, 17);
  std::vector<float> twice;
  for (int p = 0; p < in.P; ++p)
    for (int copy = 0; copy < 2; ++copy) twice.insert(twice.end(), &in.prior[4 * p], &in.prior[4 * p + 4]);
  for (int p = 0; p < 2 * in.P; ++p) twice.insert(twice.end(), {0.1f, 0.1f, 0.2f, 0.2f});
  in.prior = twice;
  in.P *= 2;
  in.loc.resize(size_t(in.P) * 4, 0.1f);
  in.conf.resize(size_t(in.P) * s.classes, 0.3f);
  const float* box = &in.prior[4 * 2 * 45];  // prior 45's first copy
  in.gt = {0, 1, 0, box[0], box[1], box[2], box[3], 0, 0, 2, 1, box[0], box[1], box[2], box[3], 0};
  const Matching m = Match(s, in);
  ASSERT_EQ(m.match[2 * 45], 0);
  ASSERT_EQ(m.match[2 * 45 + 1], 1);
  int shared = 0;  // other priors matched per prediction, to the first box
  for (int p = 0; p < in.P; ++p) shared += p / 2 != 45 && m.match[p] == 0;
  ASSERT_GT(shared, 1);
  ExpectMatchesReference(s, in);
}

TEST(MultiBoxLoss, NoBoxesLeaveOnlyTheBackground) {
  Settings s;
  Inputs in = MakeInputs(2, s.classes, 5);
  in.gt = {-1, -1, -1, -1, -1, -1, -1, -1};  // AnnotatedData's row for an empty batch
  {
    LayerRun run(s, in);  // MAX_NEGATIVE: no positives, so no negatives
    EXPECT_EQ(run.top.ReadData()[0], 0.f);
  }
  s.mining = false;  // NONE: every prior toward the background
  const Matching m = Match(s, in);
  const Expected e = Reference(s, in, m);
  LayerRun run(s, in);
  EXPECT_NEAR(run.top.ReadData()[0], e.loss, 2e-5 * e.loss);
}

TEST(MultiBoxLoss, GradientMatchesNumeric) {
  Settings softmax;
  softmax.neg_pos_ratio = 1000.f;  // every negative candidate: no ranking to flip
  Settings logistic;
  logistic.logistic = true, logistic.l2 = true, logistic.mining = false, logistic.code_type = 1;
  for (const Settings& s : {softmax, logistic}) {
    SCOPED_TRACE(s.Text());
    Inputs in = MakeInputs(3, s.classes, 11);
    AvoidKinks(s, &in);
    LayerRun run(s, in);
    CheckGradient(*run.layer, run.bottoms(), {&run.top}, {0, 1});
  }
}

// The priors' and boxes' gradients are zeros where asked for (a Split above
// them sums them).
TEST(MultiBoxLoss, WritesZeroGradientsForPriorsAndBoxes) {
  Settings s;
  const Inputs in = MakeInputs(2, s.classes, 9);
  LayerRun run(s, in);
  run.prior.SetDiff(NAN);
  run.gt.SetDiff(NAN);
  run.top.SetDiff(1.f);
  run.layer->Backward({&run.top}, {true, true, true, true}, run.bottoms());
  for (float v : run.prior.ReadDiff()) ASSERT_EQ(v, 0.f);
  for (float v : run.gt.ReadDiff()) ASSERT_EQ(v, 0.f);
}

TEST(MultiBoxLoss, BadLabelIsReportedByTheNextForward) {
  Settings s;
  Inputs in = MakeInputs(2, s.classes, 13);
  in.gt[8 * 1 + 1] = 0.f;  // row 1 labelled as the background
  LayerRun run(s, in);
  EXPECT_TRUE(std::isnan(run.top.ReadData()[0]));
  try {
    run.layer->Forward(run.bottoms(), {&run.top});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ground-truth row 1"), std::string::npos) << e.what();
  }
}

TEST(MultiBoxLoss, RejectsWhatItDoesNotDo) {
  for (const char* text : {"multibox_loss_param { num_classes: 3 share_location: false }",
                           "multibox_loss_param { num_classes: 3 mining_type: HARD_EXAMPLE }",
                           "multibox_loss_param { num_classes: 3 background_label_id: 3 }",
                           "multibox_loss_param { }"}) {
    SCOPED_TRACE(text);
    Inputs in = MakeInputs(1, 3, 1);
    Blob loc(TestContext(), {1, in.P * 4}), conf(TestContext(), {1, in.P * 3}),
        prior(TestContext(), {1, 2, in.P * 4}), gt(TestContext(), {1, 1, 1, 8}), top(TestContext());
    auto layer = MakeLayer(std::string("name: 'mbox_loss' type: 'MultiBoxLoss' ") + text);
    EXPECT_THROW(layer->SetUp({&loc, &conf, &prior, &gt}, {&top}), Error);
  }
}

}  // namespace test
}  // namespace dlcaffe
