// End to end: a multilayer perceptron learns the real MNIST in 16-bit
// storage (default_forward_type FLOAT16 with dynamic loss scaling, and
// BFLOAT16) to the accuracy it reaches in float32 from the same seed. The
// scale grows every 50 good steps, so it climbs until the 16-bit gradients
// overflow (about 4e6 here, from iteration 370 on) and steps are skipped
// and the scale lowered again, several times in the run.
// InnerProduct and ReLU store 16-bit activations and gradients; the data
// layer and the loss stay float32 behind Convert layers
// (docs/mixed-precision.md).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <iostream>
#include <string>

#include "dlcaffe/io.hpp"
#include "dlcaffe/solver.hpp"
#include "util/test_context.hpp"
#include "util/test_depth.hpp"

namespace dlcaffe {
namespace test {
namespace {

// CI's short form (util/test_depth.hpp): 800 iterations reached float32
// 0.9421, float16 0.9405, bfloat16 0.9406 on PoCL (seed 1701). The runs are
// still climbing there (about 0.94 -> 0.97 by 2000 iterations), so where a
// device's sums take another order the 16-bit runs land further from
// float32 than converged ones do: on an H200 at 800 iterations float32
// 0.941 against float16 0.9475 (0.9462 with the tensor cores off) and
// bfloat16 0.9428, while at 2000 all three were within 0.0022. CI's bound is
// twice the nightly one.
constexpr int kCiIterations = 800;
constexpr float kCiFloatAccuracy = 0.93f;
constexpr float kCiSixteenBitBound = 0.01f;
int Iterations() { return ByDepth(kCiIterations, 2000); }

std::string MlpNet(const std::string& types) {
  return "name: 'mlp' " + types + R"(
    layer { name: 'mnist' type: 'Data' top: 'data' top: 'label' include { phase: TRAIN }
            transform_param { scale: 0.00390625 }
            data_param { source: 'examples/mnist/mnist_train_lmdb' batch_size: 64 backend: LMDB } }
    layer { name: 'mnist' type: 'Data' top: 'data' top: 'label' include { phase: TEST }
            transform_param { scale: 0.00390625 }
            data_param { source: 'examples/mnist/mnist_test_lmdb' batch_size: 100 backend: LMDB } }
    layer { name: 'ip1' type: 'InnerProduct' bottom: 'data' top: 'ip1'
            inner_product_param { num_output: 256 weight_filler { type: 'xavier' }
                                  bias_filler { type: 'constant' } } }
    layer { name: 'relu1' type: 'ReLU' bottom: 'ip1' top: 'ip1' }
    layer { name: 'ip2' type: 'InnerProduct' bottom: 'ip1' top: 'ip2'
            inner_product_param { num_output: 10 weight_filler { type: 'xavier' }
                                  bias_filler { type: 'constant' } } }
    layer { name: 'accuracy' type: 'Accuracy' bottom: 'ip2' bottom: 'label' top: 'accuracy'
            include { phase: TEST } }
    layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip2' bottom: 'label' top: 'loss' })";
}

// Trains Iterations() of 64 images and returns the accuracy over the
// 10,000 test images.
float TrainedAccuracy(const std::string& types, StorageType expected_storage) {
  caffe::SolverParameter param;
  ReadProtoFromTextString(MlpNet(types), "<mlp>", param.mutable_net_param());
  param.add_test_iter(100);
  param.set_test_interval(Iterations());
  param.set_test_initialization(false);
  param.set_base_lr(0.05f);
  param.set_momentum(0.9f);
  param.set_weight_decay(0.0005f);
  param.set_lr_policy("inv");
  param.set_gamma(0.0001f);
  param.set_power(0.75f);
  param.set_max_iter(Iterations());
  param.set_display(0);
  param.set_snapshot_after_train(false);
  param.set_random_seed(1701);
  auto solver = SolverRegistry::Create(param, TestContext());
  EXPECT_EQ(solver->net().blob_by_name("ip1")->storage_type(), expected_storage)
      << "the hidden layer stores what the net asked for";
  solver->Solve();
  const std::vector<float>& scores = solver->last_test_scores(0);
  EXPECT_EQ(scores.size(), 2u);  // accuracy, loss
  return scores.empty() ? 0.f : scores[0];
}

TEST(MixedPrecisionMNIST, SixteenBitStorageLearnsAsWellAsFloat) {
  const std::string root = SourceDir();
  ASSERT_TRUE(FileExists(root + "/examples/mnist/mnist_train_lmdb"))
      << "run data/mnist/get_mnist.sh first (the test command does)";
  ASSERT_EQ(chdir(root.c_str()), 0);
  const float full = TrainedAccuracy("", StorageType::kFloat32);
  const float half = TrainedAccuracy(
      "default_forward_type: FLOAT16 default_backward_type: FLOAT16 "
      "global_grad_scale_adaptive: true grad_scale_growth_interval: 50",
      StorageType::kFloat16);
  const float bf16 = TrainedAccuracy("default_forward_type: BFLOAT16", StorageType::kBFloat16);
  std::cout << "MLP MNIST test accuracy after " << Iterations() << " iterations: float32 " << full << ", float16 "
            << half << ", bfloat16 " << bf16 << std::endl;
  EXPECT_GE(full, ByDepth(kCiFloatAccuracy, 0.96f));
  // Measured here over seeds 1-6 and 1701: float32 reaches 0.9672-0.9704
  // (a spread of 0.0032), and each 16-bit run lands within 0.0021 of the
  // float32 run of its seed. Half a point (50 of the 10,000 images) is
  // above both; a 16-bit path that lost precision somewhere falls outside.
  EXPECT_NEAR(half, full, ByDepth(kCiSixteenBitBound, 0.005f));
  EXPECT_NEAR(bf16, full, ByDepth(kCiSixteenBitBound, 0.005f));
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
