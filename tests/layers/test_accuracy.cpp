#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

struct AccuracyReference {
  float accuracy;
  std::vector<float> per_class;
};

// Caffe's CPU rule: sort (score, class) pairs in descending order and look
// for the label among the first top_k; ignored labels do not count.
AccuracyReference ReferenceAccuracy(const std::vector<float>& scores,
                                    const std::vector<float>& labels, int outer, int classes,
                                    int inner, int top_k, const int* ignore) {
  int hits = 0, count = 0;
  std::vector<int> class_hits(classes, 0), class_count(classes, 0);
  for (int o = 0; o < outer; ++o)
    for (int s = 0; s < inner; ++s) {
      const int label = int(labels[o * inner + s]);
      if (ignore && label == *ignore) continue;
      ++count;
      std::vector<std::pair<float, int>> ranked;
      for (int c = 0; c < classes; ++c)
        ranked.emplace_back(scores[(o * classes + c) * inner + s], c);
      std::partial_sort(ranked.begin(), ranked.begin() + top_k, ranked.end(),
                        std::greater<std::pair<float, int>>());
      bool hit = false;
      for (int k = 0; k < top_k; ++k) hit = hit || ranked[k].second == label;
      hits += hit;
      if (label >= 0 && label < classes) {
        ++class_count[label];
        class_hits[label] += hit;
      }
    }
  AccuracyReference r{count ? float(hits) / count : 0.f, {}};
  for (int c = 0; c < classes; ++c)
    r.per_class.push_back(class_count[c] ? float(class_hits[c]) / class_count[c] : 0.f);
  return r;
}

struct AccuracyCase {
  std::vector<int> shape;
  int axis;
  std::vector<int> label_shape;
};

const AccuracyCase kCases[] = {
    {{127, 10}, 1, {127}},
    {{3, 5, 2, 3}, 1, {3, 1, 2, 3}},
    {{3, 2, 7}, 2, {3, 2}},
    {{3, 2, 7}, -1, {3, 2}},
    {{2, 3, 13, 13}, 1, {2, 13, 13}},  // more positions than the reduction group
    {{1, 3}, 1, {1}},
};

void FillLabels(Blob* labels, int classes, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(labels->count());
  for (float& l : v) l = float(rng() % classes);
  labels->WriteData(v);
}

// Scores from {0, 1, 2}: many ties.
void FillWithTies(Blob* blob, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(blob->count());
  for (float& x : v) x = float(rng() % 3);
  blob->WriteData(v);
}

void ExpectMatchesReference(const AccuracyCase& c, int top_k, bool with_ignore, bool ties) {
  const int ignore = 1;
  std::string proto = "type: 'Accuracy' accuracy_param { top_k: " + std::to_string(top_k) +
                      " axis: " + std::to_string(c.axis) +
                      (with_ignore ? " ignore_label: 1" : "") + " }";
  SCOPED_TRACE(proto + " shape " + std::to_string(c.shape.size()) + "-d" +
               (ties ? " with ties" : ""));
  Blob scores(TestContext(), c.shape), labels(TestContext(), c.label_shape),
      accuracy(TestContext()), per_class(TestContext());
  const int axis = c.axis < 0 ? c.axis + int(c.shape.size()) : c.axis;
  int outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= c.shape[i];
  for (size_t i = axis + 1; i < c.shape.size(); ++i) inner *= c.shape[i];
  const int classes = c.shape[axis];
  if (ties)
    FillWithTies(&scores, 3);
  else
    FillGaussian(&scores, 0.f, 1.f, 3);
  FillLabels(&labels, classes, 4);
  auto layer = MakeLayer(proto);
  layer->SetUp({&scores, &labels}, {&accuracy, &per_class});
  ASSERT_EQ(accuracy.num_axes(), 0);
  ASSERT_EQ(per_class.shape(), std::vector<int>{classes});
  layer->Forward({&scores, &labels}, {&accuracy, &per_class});
  AccuracyReference ref = ReferenceAccuracy(scores.ReadData(), labels.ReadData(), outer,
                                            classes, inner, top_k,
                                            with_ignore ? &ignore : nullptr);
  EXPECT_NEAR(accuracy.ReadData()[0], ref.accuracy, 1e-6f);
  std::vector<float> got = per_class.ReadData();
  for (int k = 0; k < classes; ++k) EXPECT_NEAR(got[k], ref.per_class[k], 1e-6f) << "class " << k;
}

}  // namespace

TEST(Accuracy, MatchesReference) {
  for (const AccuracyCase& c : kCases)
    for (int top_k : {1, 3})
      for (bool with_ignore : {false, true}) {
        if (top_k > c.shape[c.axis < 0 ? c.axis + int(c.shape.size()) : c.axis]) continue;
        ExpectMatchesReference(c, top_k, with_ignore, /*ties=*/false);
      }
}

TEST(Accuracy, TiesRankTheHigherClassFirst) {
  for (const AccuracyCase& c : kCases)
    for (int top_k : {1, 2}) ExpectMatchesReference(c, top_k, false, /*ties=*/true);
}

// top_k = number of classes: every position is a hit.
TEST(Accuracy, TopKOfAllClassesIsPerfect) {
  Blob scores(TestContext(), {13, 4}), labels(TestContext(), {13}), accuracy(TestContext());
  FillGaussian(&scores, 0.f, 1.f, 5);
  FillLabels(&labels, 4, 6);
  auto layer = MakeLayer("type: 'Accuracy' accuracy_param { top_k: 4 }");
  layer->SetUp({&scores, &labels}, {&accuracy});
  layer->Forward({&scores, &labels}, {&accuracy});
  EXPECT_EQ(accuracy.ReadData()[0], 1.f);
}

TEST(Accuracy, AllIgnoredGivesZero) {
  Blob scores(TestContext(), {3, 4}), labels(TestContext(), {3}), accuracy(TestContext());
  FillGaussian(&scores, 0.f, 1.f, 7);
  labels.WriteData({255.f, 255.f, 255.f});
  auto layer = MakeLayer("type: 'Accuracy' accuracy_param { ignore_label: 255 }");
  layer->SetUp({&scores, &labels}, {&accuracy});
  layer->Forward({&scores, &labels}, {&accuracy});
  EXPECT_EQ(accuracy.ReadData()[0], 0.f);
}

// A label outside the classes can never be predicted: a miss, not a crash.
TEST(Accuracy, LabelOutsideTheClassesIsAMiss) {
  Blob scores(TestContext(), {4, 3}), labels(TestContext(), {4}), accuracy(TestContext());
  scores.WriteData({0, 1, 0, 0, 1, 0, 1, 0, 0, 0, 0, 1});  // argmax 1, 1, 0, 2
  labels.WriteData({1.f, 7.f, 0.f, -1.f});
  auto layer = MakeLayer("type: 'Accuracy'");
  layer->SetUp({&scores, &labels}, {&accuracy});
  layer->Forward({&scores, &labels}, {&accuracy});
  EXPECT_EQ(accuracy.ReadData()[0], 0.5f);
}

TEST(Accuracy, BadSetUpAndBackwardAreUserErrors) {
  Blob scores(TestContext(), {4, 3}), labels(TestContext(), {4}), accuracy(TestContext());
  auto too_many = MakeLayer("type: 'Accuracy' accuracy_param { top_k: 4 }");
  EXPECT_THROW(too_many->SetUp({&scores, &labels}, {&accuracy}), Error);
  Blob wrong_labels(TestContext(), {4, 2});
  auto mismatch = MakeLayer("type: 'Accuracy'");
  EXPECT_THROW(mismatch->SetUp({&scores, &wrong_labels}, {&accuracy}), Error);
  auto layer = MakeLayer("type: 'Accuracy'");
  layer->SetUp({&scores, &labels}, {&accuracy});
  EXPECT_FALSE(layer->AllowForceBackward(0));
  EXPECT_NO_THROW(layer->Backward({&accuracy}, {false, false}, {&scores, &labels}));
  EXPECT_THROW(layer->Backward({&accuracy}, {true, false}, {&scores, &labels}), Error);
}

}  // namespace test
}  // namespace dlcaffe
