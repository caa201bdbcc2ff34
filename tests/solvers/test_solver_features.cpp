// Solver features around the update: several test nets with their own
// test_iter, test_compute_loss, snapshot_diff, and average_loss smoothing.
#include <gtest/gtest.h>

#include "dlcaffe/io.hpp"
#include "dlcaffe/solver.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

// y = x W with x = 2 everywhere (4 x 3) and W = 0.5: y = 3 per row, and
// E = sum((y - t)^2) / (2 * 4) with a constant target t.
std::string Net(float target) {
  return R"(
    layer { name: 'x' type: 'DummyData' top: 'x'
            dummy_data_param { shape { dim: 4 dim: 3 } data_filler { type: 'constant' value: 2 } } }
    layer { name: 't' type: 'DummyData' top: 't'
            dummy_data_param { shape { dim: 4 dim: 1 }
                               data_filler { type: 'constant' value: )" +
         std::to_string(target) + R"( } } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'y'
            inner_product_param { num_output: 1 bias_term: false
                                  weight_filler { type: 'constant' value: 0.5 } } }
    layer { name: 'loss' type: 'EuclideanLoss' bottom: 'y' bottom: 't' top: 'loss' })";
}

caffe::SolverParameter Params() {
  caffe::SolverParameter p;
  ReadProtoFromTextString(Net(1.f), "<train>", p.mutable_train_net_param());
  ReadProtoFromTextString(Net(1.f), "<test 0>", p.add_test_net_param());
  ReadProtoFromTextString(Net(0.f), "<test 1>", p.add_test_net_param());
  p.add_test_iter(3);
  p.add_test_iter(2);
  p.set_test_interval(100);
  p.set_base_lr(0.f);  // weights stay put: every loss is known in closed form
  p.set_lr_policy("fixed");
  p.set_display(0);
  p.set_max_iter(10);
  p.set_snapshot_after_train(false);
  return p;
}

}  // namespace

TEST(SolverFeatures, EveryTestNetRunsWithItsOwnIterations) {
  caffe::SolverParameter p = Params();
  p.set_test_compute_loss(true);
  auto solver = SolverRegistry::Create(p, TestContext());
  ASSERT_EQ(solver->test_nets().size(), 2u);
  solver->TestAll();
  ASSERT_EQ(solver->last_test_scores(0).size(), 1u);
  ASSERT_EQ(solver->last_test_scores(1).size(), 1u);
  EXPECT_FLOAT_EQ(solver->last_test_scores(0)[0], 4 * 4.f / 8);  // (3 - 1)^2
  EXPECT_FLOAT_EQ(solver->last_test_scores(1)[0], 4 * 9.f / 8);  // (3 - 0)^2
}

TEST(SolverFeatures, TestIterCountMustMatchTheTestNets) {
  caffe::SolverParameter p = Params();
  p.clear_test_iter();
  p.add_test_iter(3);
  EXPECT_THROW(SolverRegistry::Create(p, TestContext()), Error);
}

TEST(SolverFeatures, SmoothedLossIsTheMeanOfTheLastAverageLossIterations) {
  caffe::SolverParameter p = Params();
  p.set_average_loss(4);
  auto solver = SolverRegistry::Create(p, TestContext());
  solver->Step(6);
  EXPECT_FLOAT_EQ(solver->smoothed_loss(), 2.f);  // every iteration's loss is 2
}

TEST(SolverFeatures, SnapshotDiffWritesTheLastUpdate) {
  const std::string dir = TempDir();
  for (bool with_diff : {false, true}) {
    caffe::SolverParameter p = Params();
    p.set_base_lr(0.1f);
    p.set_snapshot_diff(with_diff);
    p.set_snapshot_prefix(dir + (with_diff ? "/diff" : "/plain"));
    auto solver = SolverRegistry::Create(p, TestContext());
    solver->Step(1);
    solver->Snapshot();
    caffe::NetParameter weights;
    ReadProtoFromBinaryFile(p.snapshot_prefix() + "_iter_1.caffemodel", &weights);
    const caffe::LayerParameter* ip = nullptr;
    for (const auto& layer : weights.layer())
      if (layer.name() == "ip") ip = &layer;
    ASSERT_NE(ip, nullptr);
    ASSERT_EQ(ip->blobs_size(), 1);
    ASSERT_EQ(ip->blobs(0).data_size(), 3);
    // dE/dW = sum over rows of (y - t) * x / 4 = 2 * 2 = 4 per weight; as in
    // Caffe the diff holds the last update, 0.1 * 4, and W = 0.5 - 0.4.
    EXPECT_NEAR(ip->blobs(0).data(0), 0.1f, 1e-6);
    if (with_diff) {
      ASSERT_EQ(ip->blobs(0).diff_size(), 3);
      EXPECT_NEAR(ip->blobs(0).diff(0), 0.4f, 1e-6);
    } else {
      EXPECT_EQ(ip->blobs(0).diff_size(), 0);
    }
  }
}

}  // namespace test
}  // namespace dlcaffe
