// The RMSProp solver against Caffe's closed form on the least-squares problem,
// and its parameter constraints.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "util/least_squares_problem.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

// h = rms_decay * h + (1 - rms_decay) * g^2;  update = rate * g / (sqrt(h) + delta).
ReferenceRule RMSPropRule(double rms_decay, double delta) {
  return [rms_decay, delta](const WeightStep& s, double* h) {
    const double g = s.regularized();
    h[0] = rms_decay * h[0] + (1 - rms_decay) * g * g;
    return s.rate * g / (std::sqrt(h[0]) + delta);
  };
}

caffe::SolverParameter Params(float weight_decay = 0, int iter_size = 1, float clip = -1) {
  caffe::SolverParameter p = LeastSquaresSolverParams("RMSProp");
  p.set_base_lr(0.01f);  // RMSProp's first steps are rate / sqrt(1 - rms_decay)
  p.set_weight_decay(weight_decay);
  p.set_iter_size(iter_size);
  p.set_clip_gradients(clip);
  return p;
}

void ExpectRefused(const caffe::SolverParameter& p, const std::string& message) {
  try {
    SolverRegistry::Create(p, TestContext());
    FAIL() << "expected an error containing '" << message << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(RMSPropSolver, CaffeDefaults) {
  ExpectSolverMatchesReference(Params(), RMSPropRule(0.99, 1e-8), 7);
}
TEST(RMSPropSolver, OtherDecayAndDelta) {
  caffe::SolverParameter p = Params();
  p.set_rms_decay(0.9f);
  p.set_delta(0.1f);
  ExpectSolverMatchesReference(p, RMSPropRule(0.9, 0.1), 7);
}
TEST(RMSPropSolver, ZeroDecayUsesTheLastGradientOnly) {
  caffe::SolverParameter p = Params();
  p.set_rms_decay(0.f);
  p.set_delta(0.2f);
  ExpectSolverMatchesReference(p, RMSPropRule(0.0, 0.2), 5);
}
TEST(RMSPropSolver, WithWeightDecay) {
  ExpectSolverMatchesReference(Params(0.1f), RMSPropRule(0.99, 1e-8), 7);
}
TEST(RMSPropSolver, WithL1WeightDecay) {
  caffe::SolverParameter p = Params(0.2f);
  p.set_regularization_type("L1");
  ExpectSolverMatchesReference(p, RMSPropRule(0.99, 1e-8), 5);
}
TEST(RMSPropSolver, WithIterSize) {
  ExpectSolverMatchesReference(Params(0.1f, 3), RMSPropRule(0.99, 1e-8), 5);
}
TEST(RMSPropSolver, WithGradientClippingAndIterSize) {
  caffe::SolverParameter p = Params(0.01f, 2, 0.1f);
  p.set_rms_decay(0.9f);
  p.set_delta(0.05f);
  ExpectSolverMatchesReference(p, RMSPropRule(0.9, 0.05), 6);
}

TEST(RMSPropSolver, MomentumIsRefused) {
  caffe::SolverParameter p = Params();
  p.set_momentum(0.5f);
  ExpectRefused(p, "momentum cannot be used with RMSProp");
}
TEST(RMSPropSolver, DecayOutsideZeroOneIsRefused) {
  caffe::SolverParameter p = Params();
  p.set_rms_decay(1.f);
  ExpectRefused(p, "rms_decay in [0, 1)");
  p.set_rms_decay(-0.1f);
  ExpectRefused(p, "rms_decay in [0, 1)");
}

}  // namespace test
}  // namespace dlcaffe
