// The AdaDelta solver against Caffe's closed form on the least-squares problem,
// its two history sets in Caffe's order, and snapshot/resume.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "dlcaffe/io.hpp"
#include "util/least_squares_problem.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

// h = momentum h + (1 - momentum) g^2;  u = g sqrt((h2 + delta) / (h + delta));
// h2 = momentum h2 + (1 - momentum) u^2;  update = rate * u.
ReferenceRule AdaDeltaRule(double momentum, double delta) {
  return [momentum, delta](const WeightStep& s, double* h) {
    const double g = s.regularized();
    h[0] = momentum * h[0] + (1 - momentum) * g * g;
    const double u = g * std::sqrt((h[1] + delta) / (h[0] + delta));
    h[1] = momentum * h[1] + (1 - momentum) * u * u;
    return s.rate * u;
  };
}

// AdaDelta's steps start near sqrt(delta): a delta of 1e-2 (steps ~0.1 at rate
// 1) keeps them far above float rounding, so the closed form is discriminating.
caffe::SolverParameter Params(float momentum, float delta, float weight_decay = 0,
                              int iter_size = 1, float clip = -1) {
  caffe::SolverParameter p = LeastSquaresSolverParams("AdaDelta");
  p.set_base_lr(1.f);
  p.set_momentum(momentum);
  p.set_delta(delta);
  p.set_weight_decay(weight_decay);
  p.set_iter_size(iter_size);
  p.set_clip_gradients(clip);
  return p;
}

}  // namespace

TEST(AdaDeltaSolver, CaffeExampleMomentum) {
  ExpectSolverMatchesReference(Params(0.95f, 1e-2f), AdaDeltaRule(0.95, 1e-2), 7);
}
TEST(AdaDeltaSolver, DefaultDelta) {
  // delta 1e-8: steps of ~1e-4 * rate, so a large rate makes them visible.
  caffe::SolverParameter p = Params(0.9f, 1e-8f);
  p.clear_delta();
  p.set_base_lr(200.f);
  ExpectSolverMatchesReference(p, AdaDeltaRule(0.9, 1e-8), 7);
}
TEST(AdaDeltaSolver, ZeroMomentum) {
  ExpectSolverMatchesReference(Params(0.f, 1e-2f), AdaDeltaRule(0.0, 1e-2), 5);
}
TEST(AdaDeltaSolver, WithWeightDecay) {
  ExpectSolverMatchesReference(Params(0.9f, 1e-2f, 0.1f), AdaDeltaRule(0.9, 1e-2), 7);
}
TEST(AdaDeltaSolver, WithL1WeightDecay) {
  caffe::SolverParameter p = Params(0.9f, 1e-2f, 0.2f);
  p.set_regularization_type("L1");
  ExpectSolverMatchesReference(p, AdaDeltaRule(0.9, 1e-2), 5);
}
TEST(AdaDeltaSolver, WithIterSize) {
  ExpectSolverMatchesReference(Params(0.9f, 1e-2f, 0.1f, 3), AdaDeltaRule(0.9, 1e-2), 5);
}
TEST(AdaDeltaSolver, WithGradientClippingAndIterSize) {
  ExpectSolverMatchesReference(Params(0.9f, 1e-2f, 0.01f, 2, 0.1f), AdaDeltaRule(0.9, 1e-2),
                               6);
}

TEST(AdaDeltaSolver, HistoryHoldsSquaredGradientsThenSquaredUpdates) {
  // Caffe's .solverstate layout: [h for every param, then h2 for every param].
  const double momentum = 0.9, delta = 1e-2;
  caffe::SolverParameter p = Params(momentum, delta);
  const std::string dir = TempDir();
  p.set_snapshot_prefix(dir + "/ls");
  LeastSquaresRun run = MakeLeastSquaresRun(p);
  run.solver->Step(1);
  run.solver->Snapshot();
  caffe::SolverState state;
  ReadProtoFromBinaryFile(dir + "/ls_iter_1.solverstate", &state);
  ASSERT_EQ(state.history_size(), 4);  // {h_w, h_b, h2_w, h2_b}
  // The first iteration's gradients, recorded by a rule that does not step.
  std::vector<double> grad, values = run.start;
  ReferenceSteps(p, run.X, run.t,
                 [&grad](const WeightStep& s, double*) {
                   grad.push_back(s.grad);
                   return 0.0;
                 },
                 1, &values);
  for (int i = 0; i < kLeastSquaresParams; ++i) {
    const int blob = i < kLeastSquaresD ? 0 : 1, j = i < kLeastSquaresD ? i : 0;
    const double g = grad[i];
    const double h = (1 - momentum) * g * g;
    const double u = g * std::sqrt(delta / (h + delta));
    EXPECT_NEAR(state.history(blob).data(j), h, 1e-5 * std::max(1.0, h)) << "h of value " << i;
    EXPECT_NEAR(state.history(2 + blob).data(j), (1 - momentum) * u * u, 1e-6)
        << "h2 of value " << i;
  }
}

TEST(AdaDeltaSolver, SnapshotAndResumeContinueExactly) {
  ExpectResumeContinuesExactly(Params(0.9f, 1e-2f, 0.01f), 4, 4);
}

}  // namespace test
}  // namespace dlcaffe
