#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

constexpr double kLogThreshold = 1e-20;  // Caffe's kLOG_THRESHOLD

// Rows of positive values summing to 1, none below `floor` before scaling.
void FillProbabilities(Blob* prob, int num, float floor, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(floor, 1.f);
  std::vector<float> p(prob->count());
  const int dim = prob->count() / num;
  for (int n = 0; n < num; ++n) {
    double sum = 0;
    for (int j = 0; j < dim; ++j) sum += p[n * dim + j] = dist(rng);
    for (int j = 0; j < dim; ++j) p[n * dim + j] /= sum;
  }
  prob->WriteData(p);
}

void FillLabels(Blob* labels, int dim, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(labels->count());
  for (float& l : v) l = float(rng() % dim);
  labels->WriteData(v);
}

double ReferenceLoss(const std::vector<float>& p, const std::vector<float>& labels) {
  const int num = static_cast<int>(labels.size()), dim = static_cast<int>(p.size()) / num;
  double loss = 0;
  for (int n = 0; n < num; ++n)
    loss -= std::log(std::max<double>(p[n * dim + int(labels[n])], kLogThreshold));
  return loss / num;
}

struct Case {
  std::vector<int> shape, label_shape;
};

const Case kCases[] = {
    {{127, 10}, {127}}, {{3, 5, 2, 3}, {3, 1, 1, 1}}, {{1, 3}, {1}}, {{13, 7}, {13, 1}}};

}  // namespace

TEST(MultinomialLogisticLoss, ForwardMatchesReference) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(::testing::PrintToString(c.shape));
    Blob p(TestContext(), c.shape), labels(TestContext(), c.label_shape), loss(TestContext());
    FillProbabilities(&p, c.shape[0], 0.01f, 1);
    const int dim = p.count() / c.shape[0];
    FillLabels(&labels, dim, 2);
    auto layer = MakeLayer("type: 'MultinomialLogisticLoss'");
    layer->SetUp({&p, &labels}, {&loss});
    ASSERT_EQ(loss.num_axes(), 0);
    EXPECT_EQ(layer->loss(0), 1.f);
    layer->Forward({&p, &labels}, {&loss});
    const double expected = ReferenceLoss(p.ReadData(), labels.ReadData());
    EXPECT_NEAR(loss.ReadData()[0], expected, 1e-5 * std::max(1.0, expected));
  }
}

// A zero probability counts as Caffe's threshold 1e-20: -log(1e-20) = 46.05.
TEST(MultinomialLogisticLoss, ZeroProbabilityIsClampedToTheThreshold) {
  Blob p(TestContext(), {2, 3}), labels(TestContext(), {2}), loss(TestContext());
  p.WriteData({0.f, 0.5f, 0.5f, 0.2f, 0.3f, 0.5f});
  labels.WriteData({0.f, 2.f});
  auto layer = MakeLayer("type: 'MultinomialLogisticLoss'");
  layer->SetUp({&p, &labels}, {&loss});
  layer->Forward({&p, &labels}, {&loss});
  EXPECT_NEAR(loss.ReadData()[0], (-std::log(1e-20) - std::log(0.5)) / 2, 1e-4);
}

TEST(MultinomialLogisticLoss, GradientMatchesNumeric) {
  for (const Case& c : {Case{{13, 10}, {13}}, Case{{3, 5, 2, 3}, {3}}, Case{{1, 3}, {1}}}) {
    SCOPED_TRACE(::testing::PrintToString(c.shape));
    Blob p(TestContext(), c.shape), labels(TestContext(), c.label_shape), loss(TestContext());
    // Values stay far from 0 so that the central differences of log are exact enough.
    FillUniform(&p, 0.2f, 1.f, 3);
    FillLabels(&labels, p.count() / c.shape[0], 4);
    auto layer = MakeLayer("type: 'MultinomialLogisticLoss'");
    layer->SetUp({&p, &labels}, {&loss});
    CheckGradient(*layer, {&p, &labels}, {&loss}, {0});
  }
}

// loss_weight lands in the top diff at SetUp; backward scales by it on the
// device. Labels get no gradient.
TEST(MultinomialLogisticLoss, BackwardScalesByLossWeight) {
  Blob p(TestContext(), {4, 5}), labels(TestContext(), {4}), loss(TestContext());
  FillProbabilities(&p, 4, 0.1f, 5);
  FillLabels(&labels, 5, 6);
  labels.SetDiff(42.f);
  auto layer = MakeLayer("type: 'MultinomialLogisticLoss' loss_weight: 2.5");
  layer->SetUp({&p, &labels}, {&loss});
  EXPECT_EQ(layer->loss(0), 2.5f);
  layer->Forward({&p, &labels}, {&loss});
  layer->Backward({&loss}, {true, false}, {&p, &labels});
  const std::vector<float> prob = p.ReadData(), l = labels.ReadData(), dp = p.ReadDiff();
  for (int n = 0; n < 4; ++n)
    for (int j = 0; j < 5; ++j) {
      const double expected = j == int(l[n]) ? -2.5 / 4 / prob[n * 5 + j] : 0.0;
      EXPECT_NEAR(dp[n * 5 + j], expected, 1e-5 * std::max(1.0, std::fabs(expected)));
    }
  for (float d : labels.ReadDiff()) EXPECT_EQ(d, 42.f);
  EXPECT_THROW(layer->Backward({&loss}, {true, true}, {&p, &labels}), Error);
  EXPECT_FALSE(layer->AllowForceBackward(1));
}

TEST(MultinomialLogisticLoss, LabelOutOfRangeIsAUserError) {
  for (float bad : {5.f, -1.f}) {
    Blob p(TestContext(), {4, 5}), labels(TestContext(), {4}), loss(TestContext());
    FillProbabilities(&p, 4, 0.1f, 7);
    labels.WriteData({0.f, 4.f, bad, 1.f});
    auto layer = MakeLayer("type: 'MultinomialLogisticLoss'");
    layer->SetUp({&p, &labels}, {&loss});
    layer->Forward({&p, &labels}, {&loss});
    EXPECT_TRUE(std::isnan(loss.ReadData()[0]));
    try {
      layer->Forward({&p, &labels}, {&loss});
      ADD_FAILURE() << "no error for label " << bad;
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("out of range [0, 5)"), std::string::npos) << message;
      EXPECT_NE(message.find("position 2"), std::string::npos) << message;
    }
    labels.WriteData({0.f, 4.f, 2.f, 1.f});
    layer->Forward({&p, &labels}, {&loss});
    EXPECT_FALSE(std::isnan(loss.ReadData()[0]));
    EXPECT_NO_THROW(layer->Forward({&p, &labels}, {&loss}));
  }
}

TEST(MultinomialLogisticLoss, LabelShapeErrors) {
  Blob p(TestContext(), {4, 5}), loss(TestContext());
  Blob two_per_sample(TestContext(), {4, 2}), wrong_num(TestContext(), {3});
  EXPECT_THROW(MakeLayer("type: 'MultinomialLogisticLoss'")->SetUp({&p, &two_per_sample}, {&loss}),
               Error);
  EXPECT_THROW(MakeLayer("type: 'MultinomialLogisticLoss'")->SetUp({&p, &wrong_num}, {&loss}),
               Error);
}

}  // namespace test
}  // namespace dlcaffe
