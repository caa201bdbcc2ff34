#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

void FillLabels(Blob* labels, int dim, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(labels->count());
  for (float& l : v) l = float(rng() % dim);
  labels->WriteData(v);
}

// Scores kept at least `gap` away from the kinks at +-1 (where 1 + t x = 0).
void FillScores(Blob* x, float gap, unsigned seed) {
  FillGaussian(x, 0.f, 1.5f, seed);
  std::vector<float> v = x->ReadData();
  for (float& s : v) {
    const float a = std::fabs(s);
    if (std::fabs(a - 1.f) < gap) s = std::copysign(a < 1.f ? 1.f - gap : 1.f + gap, s);
  }
  x->WriteData(v);
}

struct Reference {
  double loss;
  std::vector<double> gradient;  // for loss weight 1
};

// Caffe's HingeLossLayer: t = -1 at the label, +1 elsewhere, m = max(0, 1 + t x);
// L1: sum m / num, gradient t [m > 0] / num; L2: sum m^2 / num, gradient 2 t m / num.
Reference ReferenceHinge(const std::vector<float>& x, const std::vector<float>& labels, bool l2) {
  const int num = static_cast<int>(labels.size()), dim = static_cast<int>(x.size()) / num;
  Reference r{0, std::vector<double>(x.size())};
  for (int n = 0; n < num; ++n)
    for (int j = 0; j < dim; ++j) {
      const int i = n * dim + j;
      const double t = j == int(labels[n]) ? -1 : 1;
      const double m = std::max(0.0, 1 + t * x[i]);
      r.loss += l2 ? m * m : m;
      r.gradient[i] = (l2 ? 2 * t * m : (m > 0 ? t : 0)) / num;
    }
  r.loss /= num;
  return r;
}

std::string HingeProto(bool l2, const std::string& extra = "") {
  return std::string("type: 'HingeLoss' hinge_loss_param { norm: ") + (l2 ? "L2" : "L1") +
         " } " + extra;
}

}  // namespace

TEST(HingeLoss, ForwardMatchesReference) {
  for (bool l2 : {false, true})
    for (const std::vector<int>& shape :
         {std::vector<int>{127, 10}, std::vector<int>{3, 5, 2, 1}, std::vector<int>{1, 3}}) {
      SCOPED_TRACE(HingeProto(l2) + ::testing::PrintToString(shape));
      Blob x(TestContext(), shape), labels(TestContext(), {shape[0]}), loss(TestContext());
      FillScores(&x, 0.f, 1);
      FillLabels(&labels, x.count() / shape[0], 2);
      auto layer = MakeLayer(HingeProto(l2));
      layer->SetUp({&x, &labels}, {&loss});
      layer->Forward({&x, &labels}, {&loss});
      const double expected = ReferenceHinge(x.ReadData(), labels.ReadData(), l2).loss;
      EXPECT_NEAR(loss.ReadData()[0], expected, 1e-5 * std::max(1.0, expected));
    }
}

TEST(HingeLoss, DefaultNormIsL1) {
  Blob x(TestContext(), {5, 4}), labels(TestContext(), {5}), loss(TestContext());
  FillScores(&x, 0.f, 3);
  FillLabels(&labels, 4, 4);
  auto layer = MakeLayer("type: 'HingeLoss'");
  layer->SetUp({&x, &labels}, {&loss});
  layer->Forward({&x, &labels}, {&loss});
  EXPECT_NEAR(loss.ReadData()[0], ReferenceHinge(x.ReadData(), labels.ReadData(), false).loss,
              1e-5);
}

TEST(HingeLoss, GradientMatchesNumeric) {
  for (bool l2 : {false, true})
    for (const std::vector<int>& shape : {std::vector<int>{13, 10}, std::vector<int>{3, 5, 2, 1}}) {
      SCOPED_TRACE(HingeProto(l2));
      Blob x(TestContext(), shape), labels(TestContext(), {shape[0]}), loss(TestContext());
      FillScores(&x, 0.05f, 5);  // the step is 0.01: stay off the kinks
      FillLabels(&labels, x.count() / shape[0], 6);
      auto layer = MakeLayer(HingeProto(l2));
      layer->SetUp({&x, &labels}, {&loss});
      CheckGradient(*layer, {&x, &labels}, {&loss}, {0});
    }
}

TEST(HingeLoss, BackwardScalesByLossWeight) {
  for (bool l2 : {false, true}) {
    Blob x(TestContext(), {6, 4}), labels(TestContext(), {6}), loss(TestContext());
    FillScores(&x, 0.05f, 7);
    FillLabels(&labels, 4, 8);
    auto layer = MakeLayer(HingeProto(l2, "loss_weight: 3"));
    layer->SetUp({&x, &labels}, {&loss});
    layer->Forward({&x, &labels}, {&loss});
    layer->Backward({&loss}, {true, false}, {&x, &labels});
    const Reference r = ReferenceHinge(x.ReadData(), labels.ReadData(), l2);
    const std::vector<float> dx = x.ReadDiff();
    for (size_t i = 0; i < dx.size(); ++i) EXPECT_NEAR(dx[i], 3 * r.gradient[i], 1e-5) << i;
    EXPECT_THROW(layer->Backward({&loss}, {true, true}, {&x, &labels}), Error);
  }
}

TEST(HingeLoss, LabelOutOfRangeIsAUserError) {
  Blob x(TestContext(), {4, 5}), labels(TestContext(), {4}), loss(TestContext());
  FillScores(&x, 0.f, 9);
  labels.WriteData({0.f, 4.f, 1.f, 5.f});
  auto layer = MakeLayer("type: 'HingeLoss'");
  layer->SetUp({&x, &labels}, {&loss});
  layer->Forward({&x, &labels}, {&loss});
  EXPECT_TRUE(std::isnan(loss.ReadData()[0]));
  try {
    layer->Forward({&x, &labels}, {&loss});
    ADD_FAILURE() << "no error for label 5";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("label 5 at position 3"), std::string::npos) << message;
  }
  labels.WriteData({0.f, 4.f, 1.f, 2.f});
  layer->Forward({&x, &labels}, {&loss});
  EXPECT_FALSE(std::isnan(loss.ReadData()[0]));
}

}  // namespace test
}  // namespace dlcaffe
