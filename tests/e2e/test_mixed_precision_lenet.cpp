// End to end: Caffe's LeNet (models/lenet, its solver's settings) learns the
// real MNIST in 16-bit storage to the accuracy it reaches in float32 from
// the same seed: FLOAT16 with dynamic loss scaling, and BFLOAT16. The
// convolutions, poolings, inner products, ReLU, the loss's softmax and the
// accuracy's scores are stored in 16 bits; the data layers, the labels, the
// loss and the accuracy stay float32 (docs/mixed-precision.md).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "dlcaffe/io.hpp"
#include "dlcaffe/solver.hpp"
#include "util/test_context.hpp"
#include "util/test_depth.hpp"

namespace dlcaffe {
namespace test {
namespace {

// Nightly (util/test_depth.hpp): 1000 iterations, the figures below. CI's
// short form: 300 iterations reached float32 0.9671, float16 0.9671,
// bfloat16 0.9667 here (seed 1701); the 16-bit runs must stay as close.
constexpr int kCiIterations = 300;
constexpr float kCiFloatAccuracy = 0.95f;
constexpr float kCiDistance = 0.005f;
int Iterations() { return ByDepth(kCiIterations, 1000); }

std::string FileText(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Trains Iterations() of 64 images (models/lenet/lenet_solver.prototxt's
// rule) and returns the accuracy over the 10,000 test images.
float TrainedAccuracy(const std::string& types, StorageType expected_storage) {
  caffe::SolverParameter param;
  // The net's text with the storage fields in front (a message's fields may
  // come in any order).
  ReadProtoFromTextString(types + "\n" + FileText("models/lenet/lenet_train_test.prototxt"),
                          "models/lenet/lenet_train_test.prototxt", param.mutable_net_param());
  param.add_test_iter(100);
  param.set_test_interval(Iterations());
  param.set_test_initialization(false);
  param.set_base_lr(0.01f);
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
  for (const char* blob : {"conv1", "pool1", "conv2", "pool2", "ip1", "ip2"})
    EXPECT_EQ(solver->net().blob_by_name(blob)->storage_type(), expected_storage)
        << "blob " << blob << " is stored as the net asked";
  solver->Solve();
  const std::vector<float>& scores = solver->last_test_scores(0);
  EXPECT_EQ(scores.size(), 2u);  // accuracy, loss
  return scores.empty() ? 0.f : scores[0];
}

TEST(MixedPrecisionLeNet, SixteenBitStorageLearnsAsWellAsFloat) {
  const std::string root = SourceDir();
  ASSERT_TRUE(FileExists(root + "/examples/mnist/mnist_train_lmdb"))
      << "run data/mnist/get_mnist.sh first (the test command does)";
  ASSERT_EQ(chdir(root.c_str()), 0);
  const float full = TrainedAccuracy("", StorageType::kFloat32);
  const float half = TrainedAccuracy(
      "default_forward_type: FLOAT16 global_grad_scale_adaptive: true", StorageType::kFloat16);
  const float bf16 = TrainedAccuracy("default_forward_type: BFLOAT16", StorageType::kBFloat16);
  std::cout << "LeNet MNIST test accuracy after " << Iterations() << " iterations: float32 "
            << full << ", float16 " << half << ", bfloat16 " << bf16 << std::endl;
  EXPECT_GE(full, ByDepth(kCiFloatAccuracy, 0.97f));
  // Measured here over seeds 1, 2, 3 and 1701: float32 reaches 0.9790 to
  // 0.9814, and each 16-bit run lands within 0.0009 of the float32 run of
  // its seed. Half a point (50 of the 10,000 images) is above both; a
  // 16-bit path that lost precision somewhere falls outside.
  EXPECT_NEAR(half, full, ByDepth(kCiDistance, 0.005f));
  EXPECT_NEAR(bf16, full, ByDepth(kCiDistance, 0.005f));
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
