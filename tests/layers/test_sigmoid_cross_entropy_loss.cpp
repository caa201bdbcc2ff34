#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

// Targets in [0, 1]; with an ignore label, every fifth one is that label.
void FillTargets(Blob* targets, const int* ignore, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(0.f, 1.f);
  std::vector<float> v(targets->count());
  for (size_t i = 0; i < v.size(); ++i) v[i] = ignore && i % 5 == 2 ? float(*ignore) : dist(rng);
  targets->WriteData(v);
}

struct Reference {
  double loss;
  std::vector<double> gradient;  // for loss weight 1
};

// -[t log s(x) + (1 - t) log(1 - s(x))] summed over non-ignored targets, in
// double through log1p, divided by Caffe's normalizer.
Reference ReferenceLoss(const std::vector<float>& x, const std::vector<float>& t, int outer,
                        const std::string& mode, const int* ignore) {
  Reference r{0, std::vector<double>(x.size(), 0.0)};
  int valid = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (ignore && int(t[i]) == *ignore) continue;
    const double v = x[i];
    // log(1 + exp(-|v|)) + max(v, 0) - v t  ==  the cross entropy.
    r.loss += std::log1p(std::exp(-std::fabs(v))) + std::max(v, 0.0) - v * t[i];
    r.gradient[i] = 1 / (1 + std::exp(-v)) - t[i];
    ++valid;
  }
  double norm = 1;
  if (mode == "FULL") norm = double(x.size());
  if (mode == "VALID") norm = valid;
  if (mode == "BATCH_SIZE") norm = outer;
  norm = std::max(norm, 1.0);
  r.loss /= norm;
  for (double& g : r.gradient) g /= norm;
  return r;
}

struct ModeCase {
  const char* loss_param;  // without ignore_label
  const char* mode;        // the normalization it means
};

// Caffe master: normalization if set, else the legacy normalize, else BATCH_SIZE.
const ModeCase kModes[] = {
    {"", "BATCH_SIZE"},
    {"normalization: FULL", "FULL"},
    {"normalization: VALID", "VALID"},
    {"normalization: BATCH_SIZE", "BATCH_SIZE"},
    {"normalization: NONE", "NONE"},
    {"normalize: true", "VALID"},
    {"normalize: false", "BATCH_SIZE"},
    {"normalize: true normalization: NONE", "NONE"},
};

const std::vector<int> kShapes[] = {{3, 5, 2, 3}, {127, 1}, {1, 3}, {2, 3, 13, 13}};

std::string Proto(const ModeCase& m, bool with_ignore, const std::string& extra = "") {
  return std::string("type: 'SigmoidCrossEntropyLoss' loss_param { ") + m.loss_param +
         (with_ignore ? " ignore_label: -1" : "") + " } " + extra;
}

}  // namespace

TEST(SigmoidCrossEntropyLoss, ForwardMatchesReferenceInEveryMode) {
  const int ignore = -1;
  for (const auto& shape : kShapes)
    for (const ModeCase& m : kModes)
      for (bool with_ignore : {false, true}) {
        SCOPED_TRACE(Proto(m, with_ignore) + ::testing::PrintToString(shape));
        Blob x(TestContext(), shape), t(TestContext(), shape), loss(TestContext());
        FillGaussian(&x, 0.f, 3.f, 1);
        FillTargets(&t, with_ignore ? &ignore : nullptr, 2);
        auto layer = MakeLayer(Proto(m, with_ignore));
        layer->SetUp({&x, &t}, {&loss});
        ASSERT_EQ(loss.num_axes(), 0);
        layer->Forward({&x, &t}, {&loss});
        const double expected = ReferenceLoss(x.ReadData(), t.ReadData(), shape[0], m.mode,
                                              with_ignore ? &ignore : nullptr).loss;
        EXPECT_NEAR(loss.ReadData()[0], expected, 2e-5 * std::max(1.0, expected));
      }
}

// Large scores neither overflow nor lose the loss (Caffe's stable form).
TEST(SigmoidCrossEntropyLoss, LargeScoresAreStable) {
  Blob x(TestContext(), {4, 1}), t(TestContext(), {4, 1}), loss(TestContext());
  x.WriteData({100.f, -100.f, 100.f, -100.f});
  t.WriteData({1.f, 0.f, 0.f, 1.f});
  auto layer = MakeLayer("type: 'SigmoidCrossEntropyLoss' loss_param { normalization: NONE }");
  layer->SetUp({&x, &t}, {&loss});
  layer->Forward({&x, &t}, {&loss});
  EXPECT_NEAR(loss.ReadData()[0], 200.0, 1e-3);
  layer->Backward({&loss}, {true, false}, {&x, &t});
  const std::vector<float> dx = x.ReadDiff();
  EXPECT_NEAR(dx[0], 0.f, 1e-6);
  EXPECT_NEAR(dx[1], 0.f, 1e-6);
  EXPECT_NEAR(dx[2], 1.f, 1e-6);
  EXPECT_NEAR(dx[3], -1.f, 1e-6);
}

TEST(SigmoidCrossEntropyLoss, GradientMatchesNumericInEveryMode) {
  const int ignore = -1;
  for (const ModeCase& m : kModes)
    for (bool with_ignore : {false, true}) {
      SCOPED_TRACE(Proto(m, with_ignore));
      Blob x(TestContext(), {3, 5, 2, 1}), t(TestContext(), {3, 5, 2, 1}), loss(TestContext());
      FillGaussian(&x, 0.f, 2.f, 3);
      FillTargets(&t, with_ignore ? &ignore : nullptr, 4);
      auto layer = MakeLayer(Proto(m, with_ignore));
      layer->SetUp({&x, &t}, {&loss});
      CheckGradient(*layer, {&x, &t}, {&loss}, {0});
    }
}

TEST(SigmoidCrossEntropyLoss, BackwardScalesByLossWeight) {
  const int ignore = -1;
  Blob x(TestContext(), {4, 3, 2}), t(TestContext(), {4, 3, 2}), loss(TestContext());
  FillGaussian(&x, 0.f, 2.f, 5);
  FillTargets(&t, &ignore, 6);
  t.SetDiff(7.f);
  auto layer = MakeLayer(Proto(kModes[2], true, "loss_weight: 0.5"));
  layer->SetUp({&x, &t}, {&loss});
  EXPECT_EQ(layer->loss(0), 0.5f);
  layer->Forward({&x, &t}, {&loss});
  layer->Backward({&loss}, {true, false}, {&x, &t});
  const Reference r = ReferenceLoss(x.ReadData(), t.ReadData(), 4, "VALID", &ignore);
  const std::vector<float> dx = x.ReadDiff();
  for (size_t i = 0; i < dx.size(); ++i) EXPECT_NEAR(dx[i], 0.5 * r.gradient[i], 1e-6) << i;
  for (float d : t.ReadDiff()) EXPECT_EQ(d, 7.f);  // targets get no gradient
  EXPECT_THROW(layer->Backward({&loss}, {true, true}, {&x, &t}), Error);
}

TEST(SigmoidCrossEntropyLoss, CountMismatchIsAnError) {
  Blob x(TestContext(), {4, 3}), t(TestContext(), {4, 2}), loss(TestContext());
  EXPECT_THROW(MakeLayer("type: 'SigmoidCrossEntropyLoss'")->SetUp({&x, &t}, {&loss}), Error);
}

}  // namespace test
}  // namespace dlcaffe
