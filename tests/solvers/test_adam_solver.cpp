// The Adam solver against Caffe's closed form on the least-squares problem, its
// two history sets in Caffe's order, and snapshot/resume.
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

// m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
// update = rate * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps),  t = iter + 1.
ReferenceRule AdamRule(double beta1, double beta2, double eps) {
  return [beta1, beta2, eps](const WeightStep& s, double* h) {
    const double g = s.regularized();
    h[0] = beta1 * h[0] + (1 - beta1) * g;
    h[1] = beta2 * h[1] + (1 - beta2) * g * g;
    const int t = s.iter + 1;
    const double correction = std::sqrt(1 - std::pow(beta2, t)) / (1 - std::pow(beta1, t));
    return s.rate * correction * h[0] / (std::sqrt(h[1]) + eps);
  };
}

caffe::SolverParameter Params(float weight_decay = 0, int iter_size = 1, float clip = -1) {
  caffe::SolverParameter p = LeastSquaresSolverParams("Adam");
  p.set_momentum(0.9f);  // beta1; momentum2 (beta2) keeps Caffe's default 0.999
  p.set_weight_decay(weight_decay);
  p.set_iter_size(iter_size);
  p.set_clip_gradients(clip);
  return p;
}

}  // namespace

TEST(AdamSolver, CaffeDefaults) {
  ExpectSolverMatchesReference(Params(), AdamRule(0.9, 0.999, 1e-8), 8);
}
TEST(AdamSolver, OtherBetasAndEps) {
  // A large eps shows whether it is added to sqrt(v) (Caffe) or sqrt(v_hat).
  caffe::SolverParameter p = Params();
  p.set_momentum(0.5f);
  p.set_momentum2(0.9f);
  p.set_delta(0.1f);
  ExpectSolverMatchesReference(p, AdamRule(0.5, 0.9, 0.1), 8);
}
TEST(AdamSolver, WithWeightDecay) {
  // Caffe's Adam adds the decay to the gradient before the moments.
  ExpectSolverMatchesReference(Params(0.5f), AdamRule(0.9, 0.999, 1e-8), 7);
}
TEST(AdamSolver, WithL1WeightDecay) {
  caffe::SolverParameter p = Params(0.3f);
  p.set_regularization_type("L1");
  ExpectSolverMatchesReference(p, AdamRule(0.9, 0.999, 1e-8), 5);
}
TEST(AdamSolver, WithIterSize) {
  ExpectSolverMatchesReference(Params(0.1f, 3), AdamRule(0.9, 0.999, 1e-8), 5);
}
TEST(AdamSolver, WithGradientClippingAndIterSize) {
  // Adam's step hardly depends on the gradient's size; eps of its order does.
  caffe::SolverParameter p = Params(0.01f, 2, 0.1f);
  p.set_delta(0.05f);
  ExpectSolverMatchesReference(p, AdamRule(0.9, 0.999, 0.05), 6);
}

TEST(AdamSolver, HistoryHoldsFirstThenSecondMoments) {
  // Caffe's .solverstate layout: [m for every param, then v for every param].
  caffe::SolverParameter p = Params();
  const std::string dir = TempDir();
  p.set_snapshot_prefix(dir + "/ls");
  LeastSquaresRun run = MakeLeastSquaresRun(p);
  run.solver->Step(1);
  run.solver->Snapshot();
  caffe::SolverState state;
  ReadProtoFromBinaryFile(dir + "/ls_iter_1.solverstate", &state);
  ASSERT_EQ(state.history_size(), 4);  // {m_w, m_b, v_w, v_b}
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
    EXPECT_NEAR(state.history(blob).data(j), 0.1 * grad[i], 1e-6) << "m of value " << i;
    EXPECT_NEAR(state.history(2 + blob).data(j), 0.001 * grad[i] * grad[i], 1e-7)
        << "v of value " << i;
  }
}

TEST(AdamSolver, SnapshotAndResumeContinueExactly) {
  ExpectResumeContinuesExactly(Params(0.01f), 4, 5);
}

TEST(AdamSolver, StateOfAnSGDSolverIsRefused) {
  // An SGD state has one history set; Adam needs two.
  const std::string dir = TempDir();
  caffe::SolverParameter sgd = LeastSquaresSolverParams("SGD");
  sgd.set_snapshot_prefix(dir + "/sgd");
  LeastSquaresRun sgd_run = MakeLeastSquaresRun(sgd);
  sgd_run.solver->Step(1);
  sgd_run.solver->Snapshot();
  LeastSquaresRun adam = MakeLeastSquaresRun(Params());
  try {
    adam.solver->Restore(dir + "/sgd_iter_1.solverstate");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another net or solver"), std::string::npos)
        << e.what();
  }
}

}  // namespace test
}  // namespace dlcaffe
