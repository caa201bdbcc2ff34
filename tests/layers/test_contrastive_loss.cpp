#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

struct Pairs {
  std::vector<float> a, b, similar;
};

double DistSq(const Pairs& p, int n, int channels) {
  double d2 = 0;
  for (int c = 0; c < channels; ++c) {
    const double d = p.a[n * channels + c] - p.b[n * channels + c];
    d2 += d * d;
  }
  return d2;
}

// Random pairs, half similar. Dissimilar pairs are pushed away from the kink
// of their hinge (d = margin, or d^2 = margin with legacy_version) and from
// d = 0, so that central differences see a smooth function.
Pairs MakePairs(int num, int channels, float margin, bool legacy, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> gauss(0.f, 0.4f);
  Pairs p{std::vector<float>(num * channels), std::vector<float>(num * channels),
          std::vector<float>(num)};
  for (int n = 0; n < num; ++n) {
    p.similar[n] = float(rng() % 2);
    for (int c = 0; c < channels; ++c) {
      p.a[n * channels + c] = gauss(rng);
      p.b[n * channels + c] = gauss(rng);
    }
    for (;;) {
      const double d2 = DistSq(p, n, channels);
      const double kink_distance = legacy ? std::fabs(d2 - margin) : std::fabs(std::sqrt(d2) - margin);
      if (p.similar[n] != 0.f || (kink_distance > 0.1 && d2 > 0.01)) break;
      for (int c = 0; c < channels; ++c)  // move b away from a
        p.b[n * channels + c] = p.a[n * channels + c] + 1.7f * (p.b[n * channels + c] - p.a[n * channels + c]) + 0.05f;
    }
  }
  return p;
}

// Caffe's ContrastiveLossLayer::Forward_cpu.
double ReferenceLoss(const Pairs& p, int channels, double margin, bool legacy) {
  const int num = static_cast<int>(p.similar.size());
  double loss = 0;
  for (int n = 0; n < num; ++n) {
    const double d2 = DistSq(p, n, channels);
    if (int(p.similar[n])) {
      loss += d2;
    } else if (legacy) {
      loss += std::max(margin - d2, 0.0);
    } else {
      const double gap = std::max(margin - std::sqrt(d2), 0.0);
      loss += gap * gap;
    }
  }
  return loss / num / 2;
}

std::string Proto(float margin, bool legacy, const std::string& extra = "") {
  return "type: 'ContrastiveLoss' contrastive_loss_param { margin: " + std::to_string(margin) +
         " legacy_version: " + (legacy ? "true" : "false") + " } " + extra;
}

}  // namespace

TEST(ContrastiveLoss, ForwardMatchesReference) {
  for (bool legacy : {false, true})
    for (float margin : {1.f, 0.5f})
      for (const std::vector<int>& shape :
           {std::vector<int>{127, 3, 1, 1}, std::vector<int>{5, 13}, std::vector<int>{1, 2}}) {
        SCOPED_TRACE(Proto(margin, legacy) + ::testing::PrintToString(shape));
        const int num = shape[0], channels = shape[1];
        const Pairs p = MakePairs(num, channels, margin, legacy, 1);
        Blob a(TestContext(), shape), b(TestContext(), shape), sim(TestContext(), {num}),
            loss(TestContext());
        a.WriteData(p.a);
        b.WriteData(p.b);
        sim.WriteData(p.similar);
        auto layer = MakeLayer(Proto(margin, legacy));
        layer->SetUp({&a, &b, &sim}, {&loss});
        ASSERT_EQ(loss.num_axes(), 0);
        layer->Forward({&a, &b, &sim}, {&loss});
        const double expected = ReferenceLoss(p, channels, margin, legacy);
        EXPECT_NEAR(loss.ReadData()[0], expected, 1e-5 * std::max(1.0, expected));
      }
}

TEST(ContrastiveLoss, GradientMatchesNumericForBothFeatures) {
  for (bool legacy : {false, true}) {
    SCOPED_TRACE(legacy ? "legacy" : "current");
    const int num = 13, channels = 3;
    const Pairs p = MakePairs(num, channels, 1.f, legacy, 2);
    Blob a(TestContext(), {num, channels, 1, 1}), b(TestContext(), {num, channels, 1, 1}),
        sim(TestContext(), {num, 1, 1, 1}), loss(TestContext());
    a.WriteData(p.a);
    b.WriteData(p.b);
    sim.WriteData(p.similar);
    auto layer = MakeLayer(Proto(1.f, legacy));
    layer->SetUp({&a, &b, &sim}, {&loss});
    CheckGradient(*layer, {&a, &b, &sim}, {&loss}, {0, 1});
  }
}

TEST(ContrastiveLoss, BackwardScalesByLossWeight) {
  const int num = 6, channels = 4;
  const Pairs p = MakePairs(num, channels, 1.f, false, 3);
  Blob a(TestContext(), {num, channels}), b(TestContext(), {num, channels}),
      sim(TestContext(), {num}), loss(TestContext());
  a.WriteData(p.a);
  b.WriteData(p.b);
  sim.WriteData(p.similar);
  auto unit = MakeLayer(Proto(1.f, false));
  unit->SetUp({&a, &b, &sim}, {&loss});
  unit->Forward({&a, &b, &sim}, {&loss});
  unit->Backward({&loss}, {true, true, false}, {&a, &b, &sim});
  const std::vector<float> da1 = a.ReadDiff(), db1 = b.ReadDiff();
  auto weighted = MakeLayer(Proto(1.f, false, "loss_weight: 4"));
  weighted->SetUp({&a, &b, &sim}, {&loss});
  weighted->Forward({&a, &b, &sim}, {&loss});
  weighted->Backward({&loss}, {true, true, false}, {&a, &b, &sim});
  const std::vector<float> da4 = a.ReadDiff(), db4 = b.ReadDiff();
  for (size_t i = 0; i < da1.size(); ++i) {
    EXPECT_NEAR(da4[i], 4 * da1[i], 1e-6) << i;
    EXPECT_NEAR(db4[i], 4 * db1[i], 1e-6) << i;
    EXPECT_NEAR(db1[i], -da1[i], 1e-7) << i;  // the pair's gradients are opposite
  }
  EXPECT_THROW(unit->Backward({&loss}, {true, true, true}, {&a, &b, &sim}), Error);
  EXPECT_FALSE(unit->AllowForceBackward(2));
  EXPECT_TRUE(unit->AllowForceBackward(1));
}

TEST(ContrastiveLoss, ShapeErrors) {
  Blob a(TestContext(), {4, 3}), b(TestContext(), {4, 2}), sim(TestContext(), {4}),
      loss(TestContext());
  EXPECT_THROW(MakeLayer("type: 'ContrastiveLoss'")->SetUp({&a, &b, &sim}, {&loss}), Error);
  Blob b_ok(TestContext(), {4, 3}), sim_wrong(TestContext(), {3});
  EXPECT_THROW(MakeLayer("type: 'ContrastiveLoss'")->SetUp({&a, &b_ok, &sim_wrong}, {&loss}),
               Error);
  Blob spatial(TestContext(), {4, 3, 2, 1});
  EXPECT_THROW(MakeLayer("type: 'ContrastiveLoss'")->SetUp({&spatial, &spatial, &sim}, {&loss}),
               Error);
}

}  // namespace test
}  // namespace dlcaffe
