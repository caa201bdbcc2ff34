#include "util/least_squares_problem.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "dlcaffe/io.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

const char* kLeastSquaresNet = R"(
  name: 'least_squares'
  layer { name: 'in' type: 'Input' top: 'x' top: 't'
          input_param { shape { dim: 7 dim: 5 } shape { dim: 7 dim: 1 } } }
  layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'y'
          param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 }
          inner_product_param { num_output: 1 weight_filler { type: 'gaussian' std: 1 }
                                bias_filler { type: 'gaussian' std: 1 } } }
  layer { name: 'loss' type: 'EuclideanLoss' bottom: 'y' bottom: 't' top: 'loss' })";

constexpr double kLrMult[2] = {1.0, 2.0};     // weights, bias
constexpr double kDecayMult[2] = {1.0, 0.0};  // weights, bias

}  // namespace

caffe::SolverParameter LeastSquaresSolverParams(const std::string& type) {
  caffe::SolverParameter p;
  ReadProtoFromTextString(kLeastSquaresNet, "<least squares net>", p.mutable_net_param());
  p.set_type(type);
  p.set_base_lr(0.05f);
  p.set_lr_policy("step");
  p.set_gamma(0.5f);
  p.set_stepsize(3);
  p.set_max_iter(100);
  p.set_display(0);
  p.set_snapshot_after_train(false);
  p.set_random_seed(1701);
  return p;
}

std::vector<double> LeastSquaresValues(Solver& solver) {
  const auto& blobs = solver.net().layer_by_name("ip")->blobs();
  std::vector<float> w = blobs[0]->ReadData();
  std::vector<double> values(w.begin(), w.end());
  values.push_back(blobs[1]->ReadData()[0]);
  return values;
}

LeastSquaresRun MakeLeastSquaresRun(const caffe::SolverParameter& param) {
  LeastSquaresRun run;
  run.solver = SolverRegistry::Create(param, TestContext());
  Net& net = run.solver->net();
  FillGaussian(net.blob_by_name("x").get(), 0, 1, 11);
  FillGaussian(net.blob_by_name("t").get(), 0, 1, 12);
  run.X = net.blob_by_name("x")->ReadData();
  run.t = net.blob_by_name("t")->ReadData();
  run.start = LeastSquaresValues(*run.solver);
  return run;
}

double WeightStep::regularized() const {
  const double sign = w > 0 ? 1.0 : (w < 0 ? -1.0 : 0.0);
  return grad + (l1 ? decay * sign : decay * w);
}

void ReferenceSteps(const caffe::SolverParameter& param, const std::vector<float>& X,
                    const std::vector<float>& t, const ReferenceRule& rule, int iters,
                    std::vector<double>* values) {
  std::vector<double>& v = *values;
  std::vector<double> history(2 * kLeastSquaresParams, 0.0);
  int lr_step = 0;
  for (int it = 0; it < iters; ++it) {
    // dE/dw and dE/db of one pass.
    std::vector<double> grad(kLeastSquaresParams, 0.0);
    for (int n = 0; n < kLeastSquaresN; ++n) {
      double y = v[kLeastSquaresD];
      for (int d = 0; d < kLeastSquaresD; ++d) y += v[d] * X[n * kLeastSquaresD + d];
      const double r = (y - t[n]) / kLeastSquaresN;
      for (int d = 0; d < kLeastSquaresD; ++d) grad[d] += r * X[n * kLeastSquaresD + d];
      grad[kLeastSquaresD] += r;
    }
    // iter_size passes over the same batch accumulate iter_size * grad; Caffe
    // clips that sum, then divides by iter_size.
    double scale = 1.0;
    if (param.clip_gradients() >= 0) {
      double sumsq = 0;
      for (double g : grad) sumsq += g * g;
      const double norm = param.iter_size() * std::sqrt(sumsq);
      if (norm > param.clip_gradients()) scale = param.clip_gradients() / norm;
    }
    const double rate = LearningRate(param, it, &lr_step);
    for (int k = 0; k < kLeastSquaresParams; ++k) {
      const int blob = k < kLeastSquaresD ? 0 : 1;
      WeightStep step;
      step.w = v[k];
      step.grad = grad[k] * scale;
      step.rate = rate * kLrMult[blob];
      step.decay = param.weight_decay() * kDecayMult[blob];
      step.l1 = param.regularization_type() == "L1";
      step.iter = it;
      double h[2] = {history[k], history[kLeastSquaresParams + k]};
      v[k] -= rule(step, h);
      history[k] = h[0];
      history[kLeastSquaresParams + k] = h[1];
    }
  }
}

void ExpectSolverMatchesReference(const caffe::SolverParameter& param,
                                  const ReferenceRule& rule, int iters, double tolerance) {
  LeastSquaresRun run = MakeLeastSquaresRun(param);
  run.solver->Step(iters);
  std::vector<double> expected = run.start;
  ReferenceSteps(param, run.X, run.t, rule, iters, &expected);
  const std::vector<double> got = LeastSquaresValues(*run.solver);
  double moved = 0;
  for (int k = 0; k < kLeastSquaresParams; ++k) {
    EXPECT_NEAR(got[k], expected[k], tolerance * std::max(1.0, std::fabs(expected[k])))
        << (k < kLeastSquaresD ? "weight " + std::to_string(k) : std::string("bias"))
        << " after " << iters << " iterations";
    moved = std::max(moved, std::fabs(expected[k] - run.start[k]));
  }
  // A reference that barely moves the weights could not tell rules apart.
  EXPECT_GT(moved, 100 * tolerance) << "the reference hardly moved the weights";
}

void ExpectResumeContinuesExactly(caffe::SolverParameter param, int before, int after) {
  const std::string dir = TempDir();
  param.set_snapshot_prefix(dir + "/ls");
  LeastSquaresRun full = MakeLeastSquaresRun(param);
  full.solver->Step(before);
  full.solver->Snapshot();
  full.solver->Step(after);

  LeastSquaresRun resumed = MakeLeastSquaresRun(param);
  resumed.solver->Restore(dir + "/ls_iter_" + std::to_string(before) + ".solverstate");
  EXPECT_EQ(resumed.solver->iter(), before);
  resumed.solver->Step(after);
  const auto& got = resumed.solver->net().layer_by_name("ip")->blobs();
  const auto& want = full.solver->net().layer_by_name("ip")->blobs();
  for (int j = 0; j < 2; ++j)
    EXPECT_EQ(got[j]->ReadData(), want[j]->ReadData()) << (j == 0 ? "weights" : "bias");
}

}  // namespace test
}  // namespace dlcaffe
