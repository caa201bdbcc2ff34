// NonMaxSuppression against a plain reference of ONNX's semantics in
// torchvision's arithmetic: batches and classes, corners in either diagonal
// order and centre boxes, a score threshold, a cap per class, ties in score
// (lower box index first), more candidates than a work-group holds, an
// overlap exactly at the threshold (kept: only a larger one suppresses),
// and nothing kept (an empty top).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "util/error_of.hpp"
#include "util/layer_test_util.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

struct Box {
  float x0, y0, x1, y1;  // min and max corners
};

Box Corners(const float* b, bool center) {
  if (center) return {b[0] - b[2] / 2.f, b[1] - b[3] / 2.f, b[0] + b[2] / 2.f, b[1] + b[3] / 2.f};
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

float Area(const Box& b) { return (b.x1 - b.x0) * (b.y1 - b.y0); }

bool Suppresses(const Box& kept, const Box& box, float threshold) {
  const float w = std::max(0.f, std::min(kept.x1, box.x1) - std::max(kept.x0, box.x0));
  const float h = std::max(0.f, std::min(kept.y1, box.y1) - std::max(kept.y0, box.y0));
  const float inter = w * h;
  return inter / (Area(kept) + Area(box) - inter) > threshold;
}

struct Settings {
  int center = 0;
  long max_out = 1000;
  float iou = 0.5f;
  bool has_score = false;
  float score = 0.f;
};

std::vector<float> Reference(const std::vector<float>& boxes, const std::vector<float>& scores,
                             int batch, int classes, int n, const Settings& s) {
  std::vector<float> rows;
  for (int b = 0; b < batch; ++b)
    for (int c = 0; c < classes; ++c) {
      const float* score = &scores[(size_t(b) * classes + c) * n];
      std::vector<int> order;
      for (int j = 0; j < n; ++j)
        if (!s.has_score || score[j] > s.score) order.push_back(j);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b2) { return score[a] > score[b2]; });
      std::vector<Box> kept;
      for (int j : order) {
        if (static_cast<long>(kept.size()) >= s.max_out) break;
        const Box box = Corners(&boxes[(size_t(b) * n + j) * 4], s.center);
        bool drop = false;
        for (const Box& k : kept) drop = drop || Suppresses(k, box, s.iou);
        if (drop) continue;
        kept.push_back(box);
        rows.insert(rows.end(), {float(b), float(c), float(j)});
      }
    }
  return rows;
}

std::string Layer(const Settings& s) {
  std::string text = "type: 'NonMaxSuppression' non_max_suppression_param { center_point_box: " +
                     std::to_string(s.center) +
                     " max_output_boxes_per_class: " + std::to_string(s.max_out) +
                     " iou_threshold: " + std::to_string(s.iou);
  if (s.has_score) text += " score_threshold: " + std::to_string(s.score);
  return text + " }";
}

// Boxes clustered so that many overlap; either diagonal order.
std::vector<float> RandomBoxes(int count, bool center, unsigned seed) {
  Blob noise(TestContext(), {count, 4});
  FillGaussian(&noise, 0.f, 1.f, seed);
  const std::vector<float> r = noise.ReadData();
  std::vector<float> boxes(size_t(count) * 4);
  for (int i = 0; i < count; ++i) {
    const float cx = 10.f * r[4 * i], cy = 10.f * r[4 * i + 1];
    const float w = 4.f + 3.f * std::abs(r[4 * i + 2]), h = 4.f + 3.f * std::abs(r[4 * i + 3]);
    float* b = &boxes[size_t(i) * 4];
    if (center) {
      b[0] = cx, b[1] = cy, b[2] = w, b[3] = h;
    } else if (i % 3 == 0) {
      b[0] = cx + w / 2, b[1] = cy + h / 2, b[2] = cx - w / 2, b[3] = cy - h / 2;
    } else {
      b[0] = cx - w / 2, b[1] = cy - h / 2, b[2] = cx + w / 2, b[3] = cy + h / 2;
    }
  }
  return boxes;
}

std::vector<float> Suppress(const std::vector<float>& boxes, const std::vector<float>& scores, int batch,
                       int classes, int n, const Settings& s) {
  Blob box_blob(TestContext(), {batch, n, 4}), score_blob(TestContext(), {batch, classes, n}),
      top(TestContext());
  box_blob.WriteData(boxes);
  score_blob.WriteData(scores);
  auto layer = MakeLayer(Layer(s));
  layer->SetUp({&box_blob, &score_blob}, {&top});
  layer->Forward({&box_blob, &score_blob}, {&top});
  EXPECT_EQ(top.num_axes(), 2);
  EXPECT_EQ(top.shape(1), 3);
  return top.count() ? top.ReadData() : std::vector<float>{};
}

}  // namespace

TEST(NonMaxSuppression, MatchesTheReference) {
  struct Case {
    int batch, classes, n;
    Settings s;
  };
  std::vector<Case> cases = {{1, 1, 40, {}}, {2, 3, 57, {}}, {1, 2, 700, {}}};
  cases.push_back({2, 2, 90, {1, 1000, 0.3f, false, 0.f}});   // centre boxes
  cases.push_back({1, 3, 120, {0, 7, 0.5f, true, 0.2f}});    // cap and score threshold
  cases.push_back({2, 1, 50, {0, 1000, 0.f, false, 0.f}});   // any overlap suppresses
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.batch) + " x " + std::to_string(c.classes) + " x " +
                 std::to_string(c.n) + " center " + std::to_string(c.s.center));
    const std::vector<float> boxes = RandomBoxes(c.batch * c.n, c.s.center, 3);
    Blob noise(TestContext(), {c.batch, c.classes, c.n});
    FillGaussian(&noise, 0.f, 1.f, 4);
    std::vector<float> scores = noise.ReadData();
    // Ties: a third of the scores share a few levels.
    for (size_t i = 0; i < scores.size(); i += 3) scores[i] = 0.25f * float(i % 4);
    const std::vector<float> want = Reference(boxes, scores, c.batch, c.classes, c.n, c.s);
    ASSERT_GT(want.size(), 0u);
    EXPECT_EQ(Suppress(boxes, scores, c.batch, c.classes, c.n, c.s), want);
  }
}

TEST(NonMaxSuppression, OverlapAtTheThresholdIsKept) {
  // Boxes 0 and 2 overlap by exactly 0.5 (2 of 4); box 1 is apart.
  const std::vector<float> boxes = {0, 0, 3, 1, 10, 0, 14, 1, 1, 0, 4, 1};
  const std::vector<float> scores = {0.9f, 0.8f, 0.7f};
  Settings s;
  s.iou = 0.5f;
  EXPECT_EQ(Suppress(boxes, scores, 1, 1, 3, s), (std::vector<float>{0, 0, 0, 0, 0, 1, 0, 0, 2}));
  s.iou = 0.49f;
  EXPECT_EQ(Suppress(boxes, scores, 1, 1, 3, s), (std::vector<float>{0, 0, 0, 0, 0, 1}));
}

TEST(NonMaxSuppression, NothingKeptIsAnEmptyTop) {
  const std::vector<float> boxes = RandomBoxes(10, false, 5);
  const std::vector<float> scores(10, 0.1f);
  Settings s;
  s.has_score = true;
  s.score = 0.5f;
  EXPECT_TRUE(Suppress(boxes, scores, 1, 1, 10, s).empty());
  s.has_score = false;
  s.max_out = 0;  // ONNX's default: no boxes
  EXPECT_TRUE(Suppress(boxes, scores, 1, 1, 10, s).empty());
}

TEST(NonMaxSuppression, BadShapesAreOneClearError) {
  Blob boxes(TestContext(), {1, 5, 4}), scores(TestContext(), {1, 2, 6}), top(TestContext());
  const std::string e = ErrorOf([&] { MakeLayer(Layer({}))->SetUp({&boxes, &scores}, {&top}); });
  EXPECT_TRUE(Contains(e, "the scores (bottom 1) must be 1 x C x 5")) << e;
}

}  // namespace test
}  // namespace dlcaffe
