// End to end: LeNet learns the real MNIST (the canonical files, converted by
// data/mnist/get_mnist.sh) to at least 97% test accuracy over the 10,000 test
// images, with Caffe's LeNet solver on a schedule short enough for CI.
#include <gtest/gtest.h>
#include <unistd.h>

#include "dlcaffe/io.hpp"
#include "dlcaffe/solver.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

TEST(LeNetMNIST, ReachesNinetySevenPercentTestAccuracy) {
  const std::string root = SourceDir();
  ASSERT_TRUE(FileExists(root + "/examples/mnist/mnist_train_lmdb"))
      << "run data/mnist/get_mnist.sh first (the test command does)";
  ASSERT_EQ(chdir(root.c_str()), 0);
  caffe::SolverParameter param = ReadSolverParams("models/lenet/lenet_solver.prototxt");
  // Caffe's schedule, cut short: 1000 iterations of batch 64 (about one
  // epoch), then one test over all 10,000 test images.
  param.set_max_iter(1000);
  param.set_test_interval(1000);
  param.set_test_initialization(false);
  param.set_display(100);
  param.set_snapshot(0);
  param.set_snapshot_after_train(false);
  param.set_random_seed(1701);
  auto solver = SolverRegistry::Create(param, TestContext());
  solver->Solve();
  ASSERT_EQ(solver->iter(), 1000);
  const std::vector<float>& scores = solver->last_test_scores(0);
  ASSERT_EQ(scores.size(), 2u);  // accuracy, loss (in output order)
  const Net& test_net = *solver->test_nets()[0];
  int accuracy_index = -1;
  for (size_t i = 0; i < test_net.output_blob_indices().size(); ++i)
    if (test_net.blob_names()[test_net.output_blob_indices()[i]] == "accuracy")
      accuracy_index = static_cast<int>(i);
  ASSERT_GE(accuracy_index, 0);
  const float accuracy = scores[accuracy_index];
  std::cout << "LeNet MNIST test accuracy after 1000 iterations: " << accuracy << std::endl;
  EXPECT_GE(accuracy, 0.97f);
  EXPECT_LE(accuracy, 1.0f);
}

}  // namespace test
}  // namespace dlcaffe
