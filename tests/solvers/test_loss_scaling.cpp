// Loss scaling (NetParameter.global_grad_scale, global_grad_scale_adaptive;
// src/solvers/loss_scaler.hpp). A power-of-two scale multiplies every
// gradient exactly in binary floating point, so a scaled run must end with
// the same weights, bit for bit, as the unscaled one; dynamic scaling must
// skip exactly the steps whose gradients overflow, halving the scale, and
// raise it after its run of good steps.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "dlcaffe/error.hpp"
#include "dlcaffe/io.hpp"
#include "dlcaffe/solver.hpp"
#include "../../src/solvers/loss_scaler.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

// A small classifier: 13 inputs -> 7 hidden (ReLU) -> 5 classes, batch 6.
// `random_data`: fresh Gaussian inputs each pass; else the same constant
// batch every pass (runs that skip steps then see the same data) and a loss
// weight of 4, which a loss scale of 2^127 or 2^126 takes past float.
std::string NetText(const std::string& scaling, bool random_data) {
  const std::string data_filler = random_data ? "type: 'gaussian' std: 1"
                                              : "type: 'constant' value: 3";
  return "name: 'mlp' " + scaling + R"(
    layer { name: 'x' type: 'DummyData' top: 'x' top: 'label'
            dummy_data_param { shape { dim: 6 dim: 13 } shape { dim: 6 }
                               data_filler { )" + data_filler + R"( }
                               data_filler { type: 'constant' value: 3 } } }
    layer { name: 'ip1' type: 'InnerProduct' bottom: 'x' top: 'h'
            inner_product_param { num_output: 7
              weight_filler { type: 'gaussian' std: 0.5 } bias_filler { type: 'constant' value: 0.1 } } }
    layer { name: 'relu' type: 'ReLU' bottom: 'h' top: 'h' }
    layer { name: 'ip2' type: 'InnerProduct' bottom: 'h' top: 'y'
            inner_product_param { num_output: 5 weight_filler { type: 'gaussian' std: 0.5 } } }
    layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'y' bottom: 'label' top: 'loss'
            loss_weight: )" + std::string(random_data ? "1" : "4") + " }";
}

caffe::SolverParameter Params(const std::string& scaling, bool random_data = true) {
  caffe::SolverParameter p;
  ReadProtoFromTextString(NetText(scaling, random_data), "<train>", p.mutable_train_net_param());
  p.set_base_lr(0.1f);
  p.set_lr_policy("fixed");
  p.set_momentum(0.9f);
  p.set_weight_decay(0.01f);
  p.set_display(0);
  p.set_max_iter(100);
  p.set_random_seed(1701);
  p.set_snapshot_after_train(false);
  return p;
}

std::vector<std::vector<float>> Weights(Solver& solver) {
  std::vector<std::vector<float>> w;
  for (Blob* p : solver.net().learnable_params()) w.push_back(p->ReadData());
  return w;
}

bool AnyNonFinite(const std::vector<std::vector<float>>& blobs) {
  for (const auto& b : blobs)
    for (float v : b)
      if (!std::isfinite(v)) return true;
  return false;
}

TEST(LossScaling, StaticPowerOfTwoScaleGivesTheSameWeightsBitForBit) {
  for (const char* type : {"SGD", "Adam", "AdamW"}) {
    for (float clip : {-1.f, 0.05f}) {
      SCOPED_TRACE(std::string(type) + " clip " + std::to_string(clip));
      caffe::SolverParameter plain = Params(""), scaled = Params("global_grad_scale: 1024");
      for (caffe::SolverParameter* p : {&plain, &scaled}) {
        p->set_type(type);
        p->set_clip_gradients(clip);
        p->set_iter_size(2);
      }
      // One after the other: the runs draw their data from the context's
      // generator, which each solver seeds when it is made.
      auto a = SolverRegistry::Create(plain, TestContext());
      EXPECT_EQ(a->loss_scale(), 1.f);
      a->Step(7);
      auto b = SolverRegistry::Create(scaled, TestContext());
      EXPECT_EQ(b->loss_scale(), 1024.f);
      b->Step(7);
      const auto wa = Weights(*a), wb = Weights(*b);
      ASSERT_FALSE(AnyNonFinite(wa));
      ASSERT_EQ(wa, wb) << "a loss scale of 2^10 must change no bit of the update";
      // And the scale did something: the gradients held 1024 times as much.
      const std::vector<float> ga = a->net().learnable_params()[0]->ReadDiff();
      ASSERT_FALSE(ga.empty());
    }
  }
}

TEST(LossScaling, BackwardStartsFromTheScaledLossWeight) {
  caffe::SolverParameter p = Params("global_grad_scale: 256");
  auto solver = SolverRegistry::Create(p, TestContext());
  solver->Step(1);
  Net& net = solver->net();
  EXPECT_EQ(net.blob_by_name("loss")->ReadDiff(), std::vector<float>{256.f});
}

// Dynamic scaling from 2^127: the loss gradient (4 x 2^127) overflows float
// and the steps are skipped, halving the scale, until it fits; from then on
// the run is the unscaled run's, bit for bit (the same batch every pass).
TEST(LossScaling, DynamicScalingSkipsOverflowingStepsAndRecovers) {
  for (bool check_finite : {false, true}) {
    SCOPED_TRACE(check_finite ? "check_finite" : "plain");
    caffe::SolverParameter dynamic =
        Params("global_grad_scale: 1.7014118e38 global_grad_scale_adaptive: true "
               "grad_scale_growth_interval: 1000",
               false);
    dynamic.set_check_finite(check_finite);
    auto solver = SolverRegistry::Create(dynamic, TestContext());
    EXPECT_EQ(solver->loss_scale(), std::ldexp(1.f, 127));
    int skipped = 0;
    std::vector<std::vector<float>> before = Weights(*solver);
    for (; skipped < 130; ++skipped) {
      const float scale = solver->loss_scale();
      solver->Step(1);
      const auto after = Weights(*solver);
      if (after != before) {
        EXPECT_EQ(solver->loss_scale(), scale) << "an applied step keeps the scale";
        break;
      }
      EXPECT_EQ(solver->loss_scale(), scale / 2) << "a skipped step halves the scale";
    }
    EXPECT_EQ(skipped, 2) << "4 x 2^127 and 4 x 2^126 overflow, 4 x 2^125 fits";
    ASSERT_LT(skipped, 130) << "the scale never came down far enough";
    solver->Step(5);

    auto plain = SolverRegistry::Create(Params("", false), TestContext());
    plain->Step(6);
    EXPECT_EQ(Weights(*solver), Weights(*plain))
        << "after " << skipped << " skipped steps the run must be the unscaled run";
    EXPECT_EQ(solver->iter(), skipped + 6) << "skipped steps still count as iterations";
  }
}

TEST(LossScaling, DynamicScaleGrowsAfterItsIntervalOfGoodSteps) {
  caffe::SolverParameter p =
      Params("global_grad_scale: 8 global_grad_scale_adaptive: true "
             "grad_scale_growth_interval: 3 grad_scale_growth_factor: 4");
  auto solver = SolverRegistry::Create(p, TestContext());
  std::vector<float> scales;
  for (int i = 0; i < 7; ++i) {
    solver->Step(1);
    scales.push_back(solver->loss_scale());
  }
  EXPECT_EQ(scales, (std::vector<float>{8, 8, 32, 32, 32, 128, 128}));
}

TEST(LossScaling, TheDynamicScaleResumesFromTheSolverState) {
  const std::string dir = TempDir();
  for (const char* format : {"BINARYPROTO", "HDF5"}) {
    SCOPED_TRACE(format);
    caffe::SolverParameter p =
        Params("global_grad_scale: 8 global_grad_scale_adaptive: true "
               "grad_scale_growth_interval: 3");
    p.set_snapshot_prefix(dir + "/scaled_" + format);
    caffe::SolverParameter::SnapshotFormat f;
    ASSERT_TRUE(caffe::SolverParameter::SnapshotFormat_Parse(format, &f));
    p.set_snapshot_format(f);
    auto first = SolverRegistry::Create(p, TestContext());
    first->Step(4);  // 8 -> 16 after the third step, one good step since
    ASSERT_EQ(first->loss_scale(), 16.f);
    first->Snapshot();
    const std::string state = dir + "/scaled_" + format + "_iter_4.solverstate" +
                              (std::string(format) == "HDF5" ? ".h5" : "");
    first->Step(2);
    EXPECT_EQ(first->loss_scale(), 32.f);
    auto resumed = SolverRegistry::Create(p, TestContext());
    resumed->Restore(state);
    EXPECT_EQ(resumed->loss_scale(), 16.f);
    resumed->Step(2);
    EXPECT_EQ(resumed->loss_scale(), 32.f) << "the run of good steps resumed too";
    EXPECT_EQ(Weights(*first), Weights(*resumed));
  }
}

TEST(LossScaling, BadSettingsAreNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"global_grad_scale: 0", "global_grad_scale must be a positive finite number, got 0"},
      {"global_grad_scale: -2", "global_grad_scale must be a positive finite number, got -2"},
      {"global_grad_scale_adaptive: true grad_scale_growth_factor: 1",
       "grad_scale_growth_factor must be above 1, got 1"},
      {"global_grad_scale_adaptive: true grad_scale_backoff_factor: 1",
       "grad_scale_backoff_factor must lie in (0, 1), got 1"},
      {"global_grad_scale_adaptive: true grad_scale_growth_interval: 0",
       "grad_scale_growth_interval must be 1 or more, got 0"},
  };
  for (const auto& [setting, message] : cases) {
    SCOPED_TRACE(setting);
    try {
      SolverRegistry::Create(Params(setting), TestContext());
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("net 'mlp': " + message), std::string::npos)
          << e.what();
    }
  }
  caffe::SolverParameter p = Params("");
  p.set_solver_data_type(caffe::FLOAT16);
  try {
    SolverRegistry::Create(p, TestContext());
    ADD_FAILURE() << "solver_data_type FLOAT16 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("solver_data_type FLOAT16 is not supported"),
              std::string::npos)
        << e.what();
  }
}

TEST(LossScaler, FollowsGradScalersRules) {
  caffe::NetParameter net;
  net.set_global_grad_scale_adaptive(true);
  net.set_grad_scale_growth_interval(2);
  LossScaler scaler(net);
  EXPECT_EQ(scaler.scale(), 65536.f) << "GradScaler's first scale where none is given";
  EXPECT_FALSE(scaler.AfterBackward(false));
  EXPECT_EQ(scaler.scale(), 32768.f);
  EXPECT_EQ(scaler.last_change(),
            "gradient overflow (Inf or NaN) at loss scale 65536: update skipped, loss scale "
            "now 32768");
  EXPECT_TRUE(scaler.AfterBackward(true));
  EXPECT_EQ(scaler.last_change(), "");
  EXPECT_TRUE(scaler.AfterBackward(true));
  EXPECT_EQ(scaler.scale(), 65536.f);
  EXPECT_EQ(scaler.last_change(), "2 steps without overflow: loss scale now 65536");
  // An overflow resets the run of good steps.
  EXPECT_TRUE(scaler.AfterBackward(true));
  EXPECT_FALSE(scaler.AfterBackward(false));
  EXPECT_TRUE(scaler.AfterBackward(true));
  EXPECT_EQ(scaler.scale(), 32768.f);
  // Static scaling never skips and never moves.
  caffe::NetParameter fixed;
  fixed.set_global_grad_scale(128);
  LossScaler still(fixed);
  EXPECT_TRUE(still.active());
  EXPECT_TRUE(still.AfterBackward(false));
  EXPECT_EQ(still.scale(), 128.f);
  EXPECT_FALSE(LossScaler(caffe::NetParameter()).active());
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
