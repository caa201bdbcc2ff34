// The training memory plan (Net::PlanTrainingMemory): parameter gradients
// and the input's gradient bit for bit as without it (same kernels in the
// same order, only other buffers), over passes whose diffs land on storage
// that other blobs' gradients used before; on a net with fan-out (Split),
// in-place layers, a Flatten that shares its bottom's diff, Concat and
// Eltwise branches, BatchNorm with a Scale it absorbs in place and one out
// of place (run separately); fusion on and off; after a reshape. Reads of shared
// diffs outside a backward pass throw naming the blob; a solver's train net
// has the plan (share_diffs) and trains to the same weights.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

#include "../../src/core/execution_plan.hpp"
#include "dlcaffe/net.hpp"
#include "dlcaffe/solver.hpp"
#include "util/bit_identical.hpp"
#include "util/error_of.hpp"
#include "util/layer_test_util.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

// Two branches off one convolution (Split), joined by Eltwise and Concat;
// in-place BatchNorm + Scale + ReLU, an out-of-place BatchNorm -> Scale, a
// Flatten, and a loss on labels that take no gradient.
const char* kBranchyNet = R"(
  name: 'branchy'
  force_backward: true
  layer { name: 'in' type: 'Input' top: 'data' top: 'label'
          input_param { shape { dim: 3 dim: 2 dim: 7 dim: 5 } shape { dim: 3 } } }
  layer { name: 'conv0' type: 'Convolution' bottom: 'data' top: 'conv0'
          convolution_param { num_output: 4 kernel_size: 3 pad: 1
                              weight_filler { type: 'gaussian' std: 0.3 } } }
  layer { name: 'bn0' type: 'BatchNorm' bottom: 'conv0' top: 'conv0' }
  layer { name: 'scale0' type: 'Scale' bottom: 'conv0' top: 'conv0'
          scale_param { bias_term: true } }
  layer { name: 'relu0' type: 'ReLU' bottom: 'conv0' top: 'conv0' }
  layer { name: 'conv_a' type: 'Convolution' bottom: 'conv0' top: 'conv_a'
          convolution_param { num_output: 4 kernel_size: 1
                              weight_filler { type: 'gaussian' std: 0.4 } } }
  layer { name: 'bn_a' type: 'BatchNorm' bottom: 'conv_a' top: 'bn_a' }
  layer { name: 'scale_a' type: 'Scale' bottom: 'bn_a' top: 'scale_a'
          scale_param { bias_term: true } }
  layer { name: 'sum' type: 'Eltwise' bottom: 'scale_a' bottom: 'conv0' top: 'sum' }
  layer { name: 'pool' type: 'Pooling' bottom: 'conv0' top: 'pool'
          pooling_param { pool: MAX kernel_size: 3 stride: 1 pad: 1 } }
  layer { name: 'cat' type: 'Concat' bottom: 'sum' bottom: 'pool' top: 'cat' }
  layer { name: 'sig' type: 'Sigmoid' bottom: 'cat' top: 'sig' }
  layer { name: 'flat' type: 'Flatten' bottom: 'sig' top: 'flat' }
  layer { name: 'ip' type: 'InnerProduct' bottom: 'flat' top: 'ip'
          inner_product_param { num_output: 5
                                weight_filler { type: 'gaussian' std: 0.2 } } }
  layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' top: 'loss' })";

void FillBatch(Net* net, unsigned seed) {
  FillUniform(net->blob_by_name("data").get(), -1.f, 1.f, seed);
  const int n = net->blob_by_name("label")->count();
  std::vector<float> labels;
  for (int i = 0; i < n; ++i) labels.push_back(static_cast<float>((seed + 2 * i) % 5));
  net->blob_by_name("label")->WriteData(labels);
}

// Parameters of `from` copied into `to`, as a .caffemodel would carry them.
void CopyWeights(const Net& from, Net* to) {
  caffe::NetParameter weights;
  from.ToProto(&weights);
  to->CopyTrainedLayersFrom(weights);
}

// A pass forward and backward on both nets; the gradients must agree.
void ExpectSameGradients(Net* reference, Net* planned, unsigned seed) {
  FillBatch(reference, seed);
  FillBatch(planned, seed);
  reference->ClearParamDiffs();
  planned->ClearParamDiffs();
  const float reference_loss = reference->ForwardBackward();
  const float planned_loss = planned->ForwardBackward();
  EXPECT_EQ(reference_loss, planned_loss);
  for (size_t p = 0; p < reference->learnable_params().size(); ++p)
    ExpectBitIdentical(reference->learnable_params()[p]->ReadDiff(),
                       planned->learnable_params()[p]->ReadDiff(),
                       "gradient of " + planned->param_display_names()[p]);
  ExpectBitIdentical(reference->blob_by_name("data")->ReadDiff(),
                     planned->blob_by_name("data")->ReadDiff(), "gradient of the input");
}

int DistinctDiffBuffers(const Net& net) {
  std::set<const Buffer*> buffers;
  for (const auto& blob : net.blobs())
    if (blob->diff_storage()) buffers.insert(blob->diff_storage().get());
  return static_cast<int>(buffers.size());
}

}  // namespace

TEST(TrainingMemoryPlan, GradientsAsWithoutThePlanFusionOnAndOff) {
  for (bool fusion : {true, false}) {
    SCOPED_TRACE(fusion ? "fusion on" : "DLCAFFE_FUSION=off");
    if (!fusion) SetTestOption("fusion", "off");
    Net reference(NetFromText(kBranchyNet), TestContext());
    Net planned(NetFromText(kBranchyNet), TestContext());
    ResetTestOption("fusion");
    // What the lifetimes must cover: bn0's backward stands for scale0's.
    if (fusion) ASSERT_EQ(planned.plan().absorbs_after(2), 1);
    CopyWeights(reference, &planned);
    const ActivationMemory memory = planned.PlanTrainingMemory();
    EXPECT_LT(memory.bytes_with_plan, memory.bytes_without_plan);
    EXPECT_LT(DistinctDiffBuffers(planned), DistinctDiffBuffers(reference));
    for (unsigned pass = 0; pass < 3; ++pass) ExpectSameGradients(&reference, &planned, 7 + pass);
  }
}

TEST(TrainingMemoryPlan, ReshapeRedoesThePlan) {
  Net reference(NetFromText(kBranchyNet), TestContext());
  Net planned(NetFromText(kBranchyNet), TestContext());
  CopyWeights(reference, &planned);
  planned.PlanTrainingMemory();
  ExpectSameGradients(&reference, &planned, 3);
  const size_t before = planned.diff_memory().bytes_with_plan;
  for (Net* net : {&reference, &planned}) {
    net->blob_by_name("data")->Reshape({5, 2, 7, 5});
    net->blob_by_name("label")->Reshape({5});
    net->Reshape();
  }
  EXPECT_GT(planned.diff_memory().bytes_with_plan, before);
  ExpectSameGradients(&reference, &planned, 4);
  // Grown by a Forward alone (no Net::Reshape): planned again before backward.
  for (Net* net : {&reference, &planned}) {
    net->blob_by_name("data")->Reshape({6, 2, 7, 5});
    net->blob_by_name("label")->Reshape({6});
  }
  const size_t at_five = planned.diff_memory().bytes_with_plan;
  ExpectSameGradients(&reference, &planned, 5);
  EXPECT_GT(planned.diff_memory().bytes_with_plan, at_five);
}

TEST(TrainingMemoryPlan, SharedDiffsAreNotReadableOutsideBackward) {
  Net net(NetFromText(kBranchyNet), TestContext());
  net.PlanTrainingMemory({"pool"});
  FillBatch(&net, 1);
  net.set_debug_info(true);  // reads each diff a backward writes, during the pass
  net.ForwardBackward();
  const std::string error = ErrorOf([&] { net.blob_by_name("cat")->ReadDiff(); });
  EXPECT_TRUE(Contains(error, "diff of blob 'cat' of net 'branchy'")) << error;
  EXPECT_TRUE(Contains(error, "share_diffs=off")) << error;
  // Inputs, the loss, kept blobs and data stay readable.
  EXPECT_EQ(ErrorOf([&] { net.blob_by_name("data")->ReadDiff(); }), "(no error)");
  EXPECT_EQ(ErrorOf([&] { net.blob_by_name("loss")->ReadDiff(); }), "(no error)");
  EXPECT_EQ(ErrorOf([&] { net.blob_by_name("pool")->ReadDiff(); }), "(no error)");
  EXPECT_EQ(ErrorOf([&] { net.blob_by_name("cat")->ReadData(); }), "(no error)");
  const std::string missing = ErrorOf([&] { net.PlanTrainingMemory({"nope"}); });
  EXPECT_TRUE(Contains(missing, "blob 'nope'")) << missing;
}

// The kept blob's diff is the one the unplanned net computes.
TEST(TrainingMemoryPlan, KeptBlobHoldsItsGradient) {
  Net reference(NetFromText(kBranchyNet), TestContext());
  Net planned(NetFromText(kBranchyNet), TestContext());
  CopyWeights(reference, &planned);
  planned.PlanTrainingMemory({"sum"});
  ExpectSameGradients(&reference, &planned, 9);
  ExpectBitIdentical(reference.blob_by_name("sum")->ReadDiff(),
                     planned.blob_by_name("sum")->ReadDiff(), "gradient of 'sum'");
}

namespace {

caffe::SolverParameter BranchySolver() {
  caffe::SolverParameter param;
  caffe::NetParameter net = NetFromText(kBranchyNet);
  // Data from the net itself: DummyData in place of the Input layer.
  caffe::LayerParameter* input = net.mutable_layer(0);
  input->set_type("DummyData");
  caffe::DummyDataParameter* dummy = input->mutable_dummy_data_param();
  for (const auto& shape : input->input_param().shape()) *dummy->add_shape() = shape;
  dummy->add_data_filler()->set_type("gaussian");
  caffe::FillerParameter* labels = dummy->add_data_filler();
  labels->set_type("constant");
  labels->set_value(2);
  input->clear_input_param();
  net.set_force_backward(false);  // as nets train: no gradient for the data
  *param.mutable_net_param() = net;
  param.set_type("SGD");
  param.set_base_lr(0.05f);
  param.set_momentum(0.9f);
  param.set_lr_policy("fixed");
  param.set_max_iter(4);
  param.set_random_seed(5);
  param.set_snapshot_after_train(false);
  return param;
}

}  // namespace

TEST(TrainingMemoryPlan, SolverTrainNetHasItAndTrainsToTheSameWeights) {
  std::unique_ptr<Solver> planned = SolverRegistry::Create(BranchySolver(), TestContext());
  EXPECT_TRUE(planned->net().has_training_memory_plan());
  // No backward reads or writes the data's and labels' diffs.
  EXPECT_EQ(planned->net().blob_by_name("data")->diff_storage(), nullptr);
  EXPECT_EQ(planned->net().blob_by_name("label")->diff_storage(), nullptr);
  EXPECT_LT(planned->net().diff_memory().bytes_with_plan,
            planned->net().diff_memory().bytes_without_plan);
  planned->Solve();
  SetTestOption("share_diffs", "off");
  std::unique_ptr<Solver> reference = SolverRegistry::Create(BranchySolver(), TestContext());
  ResetTestOption("share_diffs");
  EXPECT_FALSE(reference->net().has_training_memory_plan());
  reference->Solve();
  const auto& expected = reference->net().learnable_params();
  const auto& actual = planned->net().learnable_params();
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t p = 0; p < expected.size(); ++p)
    ExpectBitIdentical(expected[p]->ReadData(), actual[p]->ReadData(),
                       "weights of " + planned->net().param_display_names()[p]);
}

}  // namespace test
}  // namespace dlcaffe
