// Each learning-rate policy against its closed form at chosen iterations.
#include <gtest/gtest.h>

#include <cmath>

#include "dlcaffe/error.hpp"
#include "dlcaffe/solver.hpp"

namespace dlcaffe {
namespace test {

namespace {
caffe::SolverParameter Policy(const std::string& name) {
  caffe::SolverParameter p;
  p.set_lr_policy(name);
  p.set_base_lr(0.1f);
  p.set_gamma(0.5f);
  p.set_power(0.75f);
  p.set_stepsize(10);
  p.set_max_iter(100);
  return p;
}
float At(const caffe::SolverParameter& p, int iter) {
  int step = 0;
  return LearningRate(p, iter, &step);
}
}  // namespace

TEST(LrPolicy, Fixed) {
  for (int it : {0, 7, 1000}) EXPECT_FLOAT_EQ(At(Policy("fixed"), it), 0.1f);
}

TEST(LrPolicy, Step) {
  auto p = Policy("step");
  EXPECT_FLOAT_EQ(At(p, 0), 0.1f);
  EXPECT_FLOAT_EQ(At(p, 9), 0.1f);
  EXPECT_FLOAT_EQ(At(p, 10), 0.05f);
  EXPECT_FLOAT_EQ(At(p, 35), 0.1f * 0.125f);
}

TEST(LrPolicy, Exp) {
  auto p = Policy("exp");
  p.set_gamma(0.99f);
  for (int it : {0, 1, 50, 333})
    EXPECT_NEAR(At(p, it), 0.1 * std::pow(0.99, it), 1e-7);
}

TEST(LrPolicy, Inv) {
  auto p = Policy("inv");
  p.set_gamma(1e-4f);
  for (int it : {0, 100, 5000, 10000})
    EXPECT_NEAR(At(p, it), 0.1 * std::pow(1 + 1e-4 * it, -0.75), 1e-7);
}

TEST(LrPolicy, MultistepAdvancesAtEachStepValue) {
  auto p = Policy("multistep");
  p.add_stepvalue(5);
  p.add_stepvalue(8);
  p.add_stepvalue(20);
  int step = 0;
  std::vector<float> rates;
  for (int it = 0; it <= 21; ++it) rates.push_back(LearningRate(p, it, &step));
  EXPECT_FLOAT_EQ(rates[4], 0.1f);
  EXPECT_FLOAT_EQ(rates[5], 0.05f);
  EXPECT_FLOAT_EQ(rates[7], 0.05f);
  EXPECT_FLOAT_EQ(rates[8], 0.025f);
  EXPECT_FLOAT_EQ(rates[19], 0.025f);
  EXPECT_FLOAT_EQ(rates[20], 0.0125f);
  EXPECT_EQ(step, 3);
}

TEST(LrPolicy, Poly) {
  auto p = Policy("poly");
  p.set_power(2.f);
  EXPECT_FLOAT_EQ(At(p, 0), 0.1f);
  EXPECT_NEAR(At(p, 50), 0.1 * 0.25, 1e-7);
  EXPECT_NEAR(At(p, 90), 0.1 * 0.01, 1e-7);
  EXPECT_NEAR(At(p, 100), 0.0, 1e-9);
}

TEST(LrPolicy, Sigmoid) {
  auto p = Policy("sigmoid");
  p.set_gamma(-0.1f);
  for (int it : {0, 10, 30})
    EXPECT_NEAR(At(p, it), 0.1 / (1 + std::exp(0.1 * (it - 10))), 1e-7);
  EXPECT_NEAR(At(p, 10), 0.05, 1e-7);
}

TEST(LrPolicy, CosineFromBaseToMinLr) {
  auto p = Policy("cosine");
  p.set_min_lr(0.01f);
  for (int it : {0, 13, 50, 77, 100})
    EXPECT_NEAR(At(p, it), 0.01 + 0.09 * 0.5 * (1 + std::cos(M_PI * it / 100.0)), 1e-7);
  EXPECT_NEAR(At(p, 50), 0.055, 1e-7);
  EXPECT_NEAR(At(p, 250), 0.01, 1e-9);  // past max_iter it stays at min_lr
}

TEST(LrPolicy, WarmupRampsAnyPolicyLinearly) {
  auto p = Policy("cosine");
  p.set_warmup_iter(20);
  for (int it : {0, 9, 19})
    EXPECT_NEAR(At(p, it), (it + 1) / 20.0 * 0.1 * 0.5 * (1 + std::cos(M_PI * it / 100.0)), 1e-7);
  EXPECT_NEAR(At(p, 20), 0.1 * 0.5 * (1 + std::cos(M_PI * 0.2)), 1e-7);
  auto step = Policy("step");
  step.set_warmup_iter(4);
  EXPECT_NEAR(At(step, 1), 0.05, 1e-8);
  EXPECT_FLOAT_EQ(At(step, 4), 0.1f);
  step.set_warmup_iter(-1);
  EXPECT_THROW(At(step, 0), Error);
}

TEST(LrPolicy, UnknownPolicyListsTheKnownOnes) {
  try {
    At(Policy("cosin"), 0);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'cosin'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("multistep"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("cosine"), std::string::npos);
  }
}

}  // namespace test
}  // namespace dlcaffe
