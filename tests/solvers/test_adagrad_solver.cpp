// The AdaGrad solver against Caffe's closed form on the least-squares problem,
// and its refusal of momentum.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "util/least_squares_problem.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

// h += g^2;  update = rate * g / (sqrt(h) + delta).
ReferenceRule AdaGradRule(double delta) {
  return [delta](const WeightStep& s, double* h) {
    const double g = s.regularized();
    h[0] += g * g;
    return s.rate * g / (std::sqrt(h[0]) + delta);
  };
}

caffe::SolverParameter Params(float weight_decay = 0, int iter_size = 1, float clip = -1) {
  caffe::SolverParameter p = LeastSquaresSolverParams("AdaGrad");
  p.set_weight_decay(weight_decay);
  p.set_iter_size(iter_size);
  p.set_clip_gradients(clip);
  return p;
}

}  // namespace

TEST(AdaGradSolver, DefaultDelta) { ExpectSolverMatchesReference(Params(), AdaGradRule(1e-8), 7); }
TEST(AdaGradSolver, LargeDelta) {
  // A delta of the gradients' order shows up in every step.
  caffe::SolverParameter p = Params();
  p.set_delta(0.5f);
  ExpectSolverMatchesReference(p, AdaGradRule(0.5), 7);
}
TEST(AdaGradSolver, WithWeightDecay) {
  ExpectSolverMatchesReference(Params(0.1f), AdaGradRule(1e-8), 7);
}
TEST(AdaGradSolver, WithL1WeightDecay) {
  caffe::SolverParameter p = Params(0.2f);
  p.set_regularization_type("L1");
  ExpectSolverMatchesReference(p, AdaGradRule(1e-8), 5);
}
TEST(AdaGradSolver, WithIterSize) {
  ExpectSolverMatchesReference(Params(0.1f, 3), AdaGradRule(1e-8), 5);
}
TEST(AdaGradSolver, WithGradientClippingAndIterSize) {
  // AdaGrad normalises the gradient's size away, so use a delta that keeps it.
  caffe::SolverParameter p = Params(0.01f, 2, 0.1f);
  p.set_delta(0.05f);
  ExpectSolverMatchesReference(p, AdaGradRule(0.05), 6);
}

TEST(AdaGradSolver, MomentumIsRefused) {
  caffe::SolverParameter p = Params();
  p.set_momentum(0.9f);
  try {
    SolverRegistry::Create(p, TestContext());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("momentum cannot be used with AdaGrad"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace test
}  // namespace dlcaffe
