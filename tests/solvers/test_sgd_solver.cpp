// The SGD solver against its closed form on a least-squares problem
// (as Caffe's solver tests do): y = X w + b, E = ||y - t||^2 / (2N).
#include <gtest/gtest.h>

#include <cmath>

#include "dlcaffe/io.hpp"
#include "dlcaffe/solver.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

constexpr int kN = 7, kD = 5;

const char* kNet = R"(
  name: 'least_squares'
  layer { name: 'in' type: 'Input' top: 'x' top: 't'
          input_param { shape { dim: 7 dim: 5 } shape { dim: 7 dim: 1 } } }
  layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'y'
          param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 }
          inner_product_param { num_output: 1 weight_filler { type: 'gaussian' std: 1 }
                                bias_filler { type: 'gaussian' std: 1 } } }
  layer { name: 'loss' type: 'EuclideanLoss' bottom: 'y' bottom: 't' top: 'loss' })";

caffe::SolverParameter Params(float momentum, float weight_decay, int iter_size,
                              float clip = -1.f) {
  caffe::SolverParameter p;
  ReadProtoFromTextString(kNet, "<net>", p.mutable_net_param());
  p.set_type("SGD");
  p.set_base_lr(0.05f);
  p.set_lr_policy("step");
  p.set_gamma(0.5f);
  p.set_stepsize(3);
  p.set_momentum(momentum);
  p.set_weight_decay(weight_decay);
  p.set_iter_size(iter_size);
  p.set_clip_gradients(clip);
  p.set_max_iter(100);
  p.set_display(0);
  p.set_snapshot_after_train(false);
  p.set_random_seed(1701);
  return p;
}

// Host closed form of `iters` SGD steps from (w, b).
void ReferenceSGD(const caffe::SolverParameter& p, const std::vector<float>& X,
                  const std::vector<float>& t, std::vector<double>* w, double* b, int iters) {
  std::vector<double> hw(kD, 0.0);
  double hb = 0.0;
  int step = 0;
  for (int it = 0; it < iters; ++it) {
    std::vector<double> gw(kD, 0.0);
    double gb = 0.0;
    for (int n = 0; n < kN; ++n) {
      double y = *b;
      for (int d = 0; d < kD; ++d) y += (*w)[d] * X[n * kD + d];
      const double r = (y - t[n]) / kN;
      for (int d = 0; d < kD; ++d) gw[d] += r * X[n * kD + d];
      gb += r;
    }
    // iter_size repeats the same batch: the average equals one pass.
    if (p.clip_gradients() >= 0) {
      double norm = gb * gb;
      for (double g : gw) norm += g * g;
      norm = std::sqrt(norm);
      if (norm > p.clip_gradients()) {
        const double f = p.clip_gradients() / norm;
        for (double& g : gw) g *= f;
        gb *= f;
      }
    }
    const double rate = LearningRate(p, it, &step);
    for (int d = 0; d < kD; ++d) {
      gw[d] += p.weight_decay() * (*w)[d];  // decay_mult 1 on the weights
      hw[d] = rate * gw[d] + p.momentum() * hw[d];
      (*w)[d] -= hw[d];
    }
    hb = 2 * rate * gb + p.momentum() * hb;  // lr_mult 2, decay_mult 0 on the bias
    *b -= hb;
  }
}

void CheckAgainstClosedForm(const caffe::SolverParameter& p, int iters) {
  auto solver = SolverRegistry::Create(p, TestContext());
  Net& net = solver->net();
  FillGaussian(net.blob_by_name("x").get(), 0, 1, 11);
  FillGaussian(net.blob_by_name("t").get(), 0, 1, 12);
  std::vector<float> X = net.blob_by_name("x")->ReadData();
  std::vector<float> t = net.blob_by_name("t")->ReadData();
  std::vector<float> w0 = net.layer_by_name("ip")->blobs()[0]->ReadData();
  std::vector<double> w(w0.begin(), w0.end());
  double b = net.layer_by_name("ip")->blobs()[1]->ReadData()[0];
  solver->Step(iters);
  ReferenceSGD(p, X, t, &w, &b, iters);
  std::vector<float> got_w = net.layer_by_name("ip")->blobs()[0]->ReadData();
  for (int d = 0; d < kD; ++d) EXPECT_NEAR(got_w[d], w[d], 1e-4 * std::max(1.0, std::fabs(w[d])));
  EXPECT_NEAR(net.layer_by_name("ip")->blobs()[1]->ReadData()[0], b,
              1e-4 * std::max(1.0, std::fabs(b)));
}

}  // namespace

TEST(SGDSolver, PlainGradientDescent) { CheckAgainstClosedForm(Params(0, 0, 1), 5); }
TEST(SGDSolver, WithMomentum) { CheckAgainstClosedForm(Params(0.9f, 0, 1), 7); }
TEST(SGDSolver, WithWeightDecay) { CheckAgainstClosedForm(Params(0, 0.1f, 1), 5); }
TEST(SGDSolver, WithMomentumAndWeightDecay) { CheckAgainstClosedForm(Params(0.9f, 0.1f, 1), 7); }
TEST(SGDSolver, WithIterSize) { CheckAgainstClosedForm(Params(0.9f, 0.1f, 3), 5); }
TEST(SGDSolver, WithGradientClipping) { CheckAgainstClosedForm(Params(0.9f, 0.0f, 1, 0.1f), 6); }

TEST(SGDSolver, L1Regularization) {
  // With a zero learning rate on the data term the closed form is simple:
  // one step moves each weight by -rate * decay * sign(w).
  caffe::SolverParameter p = Params(0, 0.5f, 1);
  p.set_regularization_type("L1");
  p.set_lr_policy("fixed");
  auto solver = SolverRegistry::Create(p, TestContext());
  Net& net = solver->net();
  FillGaussian(net.blob_by_name("x").get(), 0, 1, 11);
  FillGaussian(net.blob_by_name("t").get(), 0, 1, 12);
  std::vector<float> X = net.blob_by_name("x")->ReadData(), t = net.blob_by_name("t")->ReadData();
  std::vector<float> w = net.layer_by_name("ip")->blobs()[0]->ReadData();
  const float b = net.layer_by_name("ip")->blobs()[1]->ReadData()[0];
  solver->Step(1);
  std::vector<float> got = net.layer_by_name("ip")->blobs()[0]->ReadData();
  for (int d = 0; d < kD; ++d) {
    double g = 0;
    for (int n = 0; n < kN; ++n) {
      double y = b;
      for (int k = 0; k < kD; ++k) y += w[k] * X[n * kD + k];
      g += (y - t[n]) / kN * X[n * kD + d];
    }
    const double sign = w[d] > 0 ? 1 : (w[d] < 0 ? -1 : 0);
    EXPECT_NEAR(got[d], w[d] - 0.05 * (g + 0.5 * sign), 1e-5);
  }
}

TEST(SGDSolver, SnapshotAndResumeContinueExactly) {
  const std::string dir = TempDir();
  caffe::SolverParameter p = Params(0.9f, 0.01f, 1);
  p.set_snapshot_prefix(dir + "/ls");
  p.set_max_iter(8);
  // Uninterrupted: 8 iterations.
  auto full = SolverRegistry::Create(p, TestContext());
  FillGaussian(full->net().blob_by_name("x").get(), 0, 1, 11);
  FillGaussian(full->net().blob_by_name("t").get(), 0, 1, 12);
  std::vector<float> x = full->net().blob_by_name("x")->ReadData();
  std::vector<float> t = full->net().blob_by_name("t")->ReadData();
  std::vector<float> w0 = full->net().layer_by_name("ip")->blobs()[0]->ReadData();
  std::vector<float> b0 = full->net().layer_by_name("ip")->blobs()[1]->ReadData();
  full->Step(4);
  full->Snapshot();
  EXPECT_TRUE(FileExists(dir + "/ls_iter_4.caffemodel"));
  EXPECT_TRUE(FileExists(dir + "/ls_iter_4.solverstate"));
  full->Step(4);

  // Resumed: a fresh solver restores iteration 4 and runs to 8.
  auto resumed = SolverRegistry::Create(p, TestContext());
  resumed->net().blob_by_name("x")->WriteData(x);
  resumed->net().blob_by_name("t")->WriteData(t);
  resumed->Restore(dir + "/ls_iter_4.solverstate");
  EXPECT_EQ(resumed->iter(), 4);
  resumed->Step(4);
  for (int j = 0; j < 2; ++j)
    EXPECT_EQ(resumed->net().layer_by_name("ip")->blobs()[j]->ReadData(),
              full->net().layer_by_name("ip")->blobs()[j]->ReadData());
}

TEST(SGDSolver, StateFromAnotherNetIsRefused) {
  const std::string dir = TempDir();
  caffe::SolverParameter p = Params(0.9f, 0, 1);
  p.set_snapshot_prefix(dir + "/ls");
  auto solver = SolverRegistry::Create(p, TestContext());
  FillGaussian(solver->net().blob_by_name("x").get(), 0, 1, 5);
  FillGaussian(solver->net().blob_by_name("t").get(), 0, 1, 6);
  solver->Step(1);
  solver->Snapshot();
  // A state with one history blob too many.
  caffe::SolverState state;
  ReadProtoFromBinaryFile(dir + "/ls_iter_1.solverstate", &state);
  state.clear_learned_net();
  state.add_history()->CopyFrom(state.history(0));
  WriteProtoToBinaryFile(state, dir + "/other.solverstate");
  try {
    solver->Restore(dir + "/other.solverstate");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another net"), std::string::npos) << e.what();
  }
}

TEST(SGDSolver, UnwritableSnapshotPrefixIsRefusedAtStart) {
  caffe::SolverParameter p = Params(0, 0, 1);
  p.set_snapshot(10);
  p.set_snapshot_prefix("/nonexistent_dir_for_dlcaffe/ls");
  try {
    SolverRegistry::Create(p, TestContext());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent_dir_for_dlcaffe/ls"), std::string::npos);
  }
}

}  // namespace test
}  // namespace dlcaffe
