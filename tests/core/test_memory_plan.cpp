// The inference memory plan (Net::PlanInferenceMemory): outputs bit for bit
// as without it (same kernels in the same order) on nets with in-place
// layers, fan-out (Split), layer-made aliasing (Flatten, Reshape, one-input
// Concat), Concat branches, fused BatchNorm/Scale, a layer that reads a bottom
// to the host (Filter) and a top held by a parameter; fusion on and off; the
// bytes against a hand count; kept blobs, reshapes and the errors.
#include <gtest/gtest.h>

#include <cmath>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>

#include "../../src/core/memory_plan.hpp"
#include "dlcaffe/io.hpp"
#include "dlcaffe/net.hpp"
#include "util/bit_identical.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"
#include "../../src/core/execution_plan.hpp"

namespace dlcaffe {
namespace test {

namespace {

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Random weights in `net`, copied into `copy` through a NetParameter (as a
// .caffemodel would be). BatchNorm statistics get a positive variance and a
// scale factor of 1.
void RandomWeights(Net* net, Net* copy) {
  unsigned seed = 11;
  for (const auto& layer : net->layers()) {
    auto& blobs = layer->blobs();
    const bool batch_norm = std::string(layer->type()) == "BatchNorm";
    for (size_t p = 0; p < blobs.size(); ++p) {
      if (batch_norm && p == 2)
        blobs[p]->SetData(1.f);
      else if (batch_norm && p == 1)
        FillUniform(blobs[p].get(), 0.5f, 1.5f, seed++);
      else
        FillUniform(blobs[p].get(), -1.f, 1.f, seed++);
    }
  }
  caffe::NetParameter weights;
  net->ToProto(&weights);
  copy->CopyTrainedLayersFrom(weights);
}

void FillInputs(Net* net, unsigned seed) {
  for (Blob* input : net->input_blobs()) FillUniform(input, -1.f, 1.f, seed++);
}

void ExpectSameOutputs(const Net& reference, const Net& planned) {
  ASSERT_EQ(reference.output_blobs().size(), planned.output_blobs().size());
  for (size_t i = 0; i < reference.output_blobs().size(); ++i)
    ExpectBitIdentical(reference.output_blobs()[i]->ReadData(),
                       planned.output_blobs()[i]->ReadData(),
                       planned.blob_names()[planned.output_blob_indices()[i]]);
}

int DistinctDataBuffers(const Net& net) {
  std::set<const Buffer*> buffers;
  for (const auto& blob : net.blobs()) buffers.insert(blob->data_storage().get());
  return static_cast<int>(buffers.size());
}

// The same net without and with the plan, fusion on and off: identical
// outputs over passes with new inputs; fewer data buffers where blobs can
// share; no activation diffs left after the passes (no layer asks for one in
// forward).
void CheckPlanKeepsOutputs(const std::string& text, bool reuse_possible) {
  for (bool fusion : {true, false}) {
    SCOPED_TRACE(fusion ? "fusion on" : "DLCAFFE_FUSION=off");
    if (!fusion) SetTestOption("fusion", "off");
    Net reference(NetFromText(text, caffe::TEST), TestContext());
    Net planned(NetFromText(text, caffe::TEST), TestContext());
    ResetTestOption("fusion");
    RandomWeights(&reference, &planned);
    const ActivationMemory memory = planned.PlanInferenceMemory();
    EXPECT_LT(memory.bytes_with_plan, memory.bytes_without_plan);
    if (reuse_possible) {
      EXPECT_LT(DistinctDataBuffers(planned), DistinctDataBuffers(reference));
    }
    for (unsigned pass = 0; pass < 2; ++pass) {
      FillInputs(&reference, 100 + 10 * pass);
      FillInputs(&planned, 100 + 10 * pass);
      reference.Forward();
      planned.Forward();
      ExpectSameOutputs(reference, planned);
    }
    for (size_t b = 0; b < planned.blobs().size(); ++b)
      EXPECT_EQ(planned.blobs()[b]->diff_storage(), nullptr) << planned.blob_names()[b];
  }
}

const char* kChain = R"(
  name: 'chain'
  layer { name: 'in' type: 'Input' top: 'data'
          input_param { shape { dim: 2 dim: 3 dim: 9 dim: 9 } } }
  layer { name: 'conv1' type: 'Convolution' bottom: 'data' top: 'conv1'
          convolution_param { num_output: 4 kernel_size: 3 } }
  layer { name: 'relu1' type: 'ReLU' bottom: 'conv1' top: 'conv1' }
  layer { name: 'pool1' type: 'Pooling' bottom: 'conv1' top: 'pool1'
          pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
  layer { name: 'conv2' type: 'Convolution' bottom: 'pool1' top: 'conv2'
          convolution_param { num_output: 5 kernel_size: 1 } }
  layer { name: 'relu2' type: 'ReLU' bottom: 'conv2' top: 'conv2' }
  layer { name: 'ip' type: 'InnerProduct' bottom: 'conv2' top: 'ip'
          inner_product_param { num_output: 7 } }
  layer { name: 'prob' type: 'Softmax' bottom: 'ip' top: 'prob' })";

}  // namespace

TEST(MemoryPlan, ChainWithInPlaceRelu) { CheckPlanKeepsOutputs(kChain, true); }

TEST(MemoryPlan, ResidualBlockWithSplitAndEltwise) {
  CheckPlanKeepsOutputs(R"(
    layer { name: 'in' type: 'Input' top: 'data'
            input_param { shape { dim: 2 dim: 3 dim: 6 dim: 5 } } }
    layer { name: 'conv0' type: 'Convolution' bottom: 'data' top: 'conv0'
            convolution_param { num_output: 4 kernel_size: 3 pad: 1 } }
    layer { name: 'relu0' type: 'ReLU' bottom: 'conv0' top: 'conv0' }
    layer { name: 'conv_a' type: 'Convolution' bottom: 'conv0' top: 'conv_a'
            convolution_param { num_output: 4 kernel_size: 3 pad: 1 } }
    layer { name: 'relu_a' type: 'ReLU' bottom: 'conv_a' top: 'conv_a' }
    layer { name: 'conv_b' type: 'Convolution' bottom: 'conv_a' top: 'conv_b'
            convolution_param { num_output: 4 kernel_size: 3 pad: 1 } }
    layer { name: 'sum' type: 'Eltwise' bottom: 'conv0' bottom: 'conv_b' top: 'sum' }
    layer { name: 'relu_sum' type: 'ReLU' bottom: 'sum' top: 'sum' }
    layer { name: 'conv_c' type: 'Convolution' bottom: 'sum' top: 'conv_c'
            convolution_param { num_output: 3 kernel_size: 1 } }
    layer { name: 'pool' type: 'Pooling' bottom: 'conv_c' top: 'pool'
            pooling_param { pool: AVE global_pooling: true } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'pool' top: 'ip'
            inner_product_param { num_output: 3 } })",
                        true);
}

TEST(MemoryPlan, FlattenAndReshapeAliasTheirBottoms) {
  CheckPlanKeepsOutputs(R"(
    layer { name: 'in' type: 'Input' top: 'data'
            input_param { shape { dim: 2 dim: 3 dim: 7 dim: 5 } } }
    layer { name: 'conv' type: 'Convolution' bottom: 'data' top: 'conv'
            convolution_param { num_output: 3 kernel_size: 3 } }
    layer { name: 'flat' type: 'Flatten' bottom: 'conv' top: 'flat' }
    layer { name: 'ip1' type: 'InnerProduct' bottom: 'flat' top: 'ip1'
            inner_product_param { num_output: 12 } }
    layer { name: 'shape' type: 'Reshape' bottom: 'ip1' top: 'r'
            reshape_param { shape { dim: 0 dim: 3 dim: 4 } } }
    layer { name: 'tanh' type: 'TanH' bottom: 'r' top: 't' }
    layer { name: 'ip2' type: 'InnerProduct' bottom: 't' top: 'ip2'
            inner_product_param { num_output: 5 } }
    layer { name: 'relu' type: 'ReLU' bottom: 'ip2' top: 'ip2' }
    layer { name: 'ip3' type: 'InnerProduct' bottom: 'ip2' top: 'ip3'
            inner_product_param { num_output: 13 } })",
                        true);
}

TEST(MemoryPlan, ConcatOfBranches) {
  CheckPlanKeepsOutputs(R"(
    layer { name: 'in' type: 'Input' top: 'data'
            input_param { shape { dim: 2 dim: 3 dim: 8 dim: 7 } } }
    layer { name: 'conv0' type: 'Convolution' bottom: 'data' top: 'conv0'
            convolution_param { num_output: 4 kernel_size: 3 pad: 1 } }
    layer { name: 'relu0' type: 'ReLU' bottom: 'conv0' top: 'conv0' }
    layer { name: 'conv_a' type: 'Convolution' bottom: 'conv0' top: 'conv_a'
            convolution_param { num_output: 3 kernel_size: 1 } }
    layer { name: 'conv_b' type: 'Convolution' bottom: 'conv0' top: 'conv_b'
            convolution_param { num_output: 2 kernel_size: 3 pad: 1 } }
    layer { name: 'pool' type: 'Pooling' bottom: 'conv0' top: 'pool'
            pooling_param { pool: MAX kernel_size: 3 stride: 1 pad: 1 } }
    layer { name: 'cat' type: 'Concat' bottom: 'conv_a' bottom: 'conv_b' bottom: 'pool'
            top: 'cat' }
    layer { name: 'conv_c' type: 'Convolution' bottom: 'cat' top: 'conv_c'
            convolution_param { num_output: 3 kernel_size: 1 } }
    layer { name: 'one' type: 'Concat' bottom: 'conv_c' top: 'one' }
    layer { name: 'sigmoid' type: 'Sigmoid' bottom: 'one' top: 'sigmoid' }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'sigmoid' top: 'ip'
            inner_product_param { num_output: 4 } })",
                        true);
}

const char* kBatchNormNet = R"(
  layer { name: 'in' type: 'Input' top: 'data'
          input_param { shape { dim: 2 dim: 3 dim: 7 dim: 7 } } }
  layer { name: 'conv1' type: 'Convolution' bottom: 'data' top: 'conv1'
          convolution_param { num_output: 4 kernel_size: 3 pad: 1 } }
  layer { name: 'bn1' type: 'BatchNorm' bottom: 'conv1' top: 'conv1' }
  layer { name: 'scale1' type: 'Scale' bottom: 'conv1' top: 'conv1'
          scale_param { bias_term: true } }
  layer { name: 'relu1' type: 'ReLU' bottom: 'conv1' top: 'conv1' }
  layer { name: 'conv2' type: 'Convolution' bottom: 'conv1' top: 'conv2'
          convolution_param { num_output: 5 kernel_size: 3 pad: 1 bias_term: false } }
  layer { name: 'bn2' type: 'BatchNorm' bottom: 'conv2' top: 'conv2' }
  layer { name: 'scale2' type: 'Scale' bottom: 'conv2' top: 'conv2'
          scale_param { bias_term: true } }
  layer { name: 'relu2' type: 'ReLU' bottom: 'conv2' top: 'conv2' }
  layer { name: 'pool' type: 'Pooling' bottom: 'conv2' top: 'pool'
          pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
  layer { name: 'ip' type: 'InnerProduct' bottom: 'pool' top: 'ip'
          inner_product_param { num_output: 6 } })";

TEST(MemoryPlan, BatchNormAndScaleFusedIntoConvolutions) {
  {  // The fused path is what the check below runs with fusion on.
    Net net(NetFromText(kBatchNormNet, caffe::TEST), TestContext());
    ASSERT_EQ(net.plan().absorbs_after(1), 2);
    ASSERT_EQ(net.plan().absorbs_after(5), 2);
  }
  CheckPlanKeepsOutputs(kBatchNormNet, true);
}

// Filter reads its selector (a planned blob here) to the host in Reshape, and
// its top changes size with the selection, beyond what the plan placed.
TEST(MemoryPlan, LayerThatReadsABottomAndGrowsItsTop) {
  const std::string text = R"(
    layer { name: 'in' type: 'Input' top: 'x' top: 's'
            input_param { shape { dim: 5 dim: 100 } shape { dim: 5 } } }
    layer { name: 'select' type: 'Threshold' bottom: 's' top: 'sel'
            threshold_param { threshold: 0 } }
    layer { name: 'filter' type: 'Filter' bottom: 'x' bottom: 'sel' top: 'fx' }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'fx' top: 'ip'
            inner_product_param { num_output: 3 } })";
  Net reference(NetFromText(text, caffe::TEST), TestContext());
  Net planned(NetFromText(text, caffe::TEST), TestContext());
  RandomWeights(&reference, &planned);
  const std::vector<std::vector<float>> selections = {
      {1, -1, -1, -1, 1}, {1, 1, -1, 1, 1}, {-1, 1, -1, -1, -1}, {1, 1, 1, 1, 1}};
  for (size_t pass = 0; pass < selections.size(); ++pass) {
    SCOPED_TRACE("pass " + std::to_string(pass));
    for (Net* net : {&reference, &planned}) {
      FillUniform(net->blob_by_name("x").get(), -1, 1, 5 + pass);
      net->blob_by_name("s")->WriteData(selections[pass]);
      net->Forward();
    }
    ExpectSameOutputs(reference, planned);
    if (pass == 0) planned.PlanInferenceMemory();  // the selector has data now
  }
}

// A top that shares a parameter's storage (Parameter) is left alone.
TEST(MemoryPlan, StorageHeldByAParameterIsLeftAlone) {
  const std::string text = R"(
    layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 2 dim: 3 } } }
    layer { name: 'p' type: 'Parameter' top: 'p' parameter_param { shape { dim: 2 dim: 3 } } }
    layer { name: 'sum' type: 'Eltwise' bottom: 'x' bottom: 'p' top: 'sum' }
    layer { name: 'relu' type: 'ReLU' bottom: 'sum' top: 'sum' }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'sum' top: 'ip'
            inner_product_param { num_output: 4 } })";
  Net reference(NetFromText(text, caffe::TEST), TestContext());
  Net planned(NetFromText(text, caffe::TEST), TestContext());
  RandomWeights(&reference, &planned);
  planned.PlanInferenceMemory();
  FillInputs(&reference, 3);
  FillInputs(&planned, 3);
  reference.Forward();
  planned.Forward();
  ExpectSameOutputs(reference, planned);
  const Blob& parameter = *planned.layer_by_name("p")->blobs()[0];
  EXPECT_TRUE(planned.blob_by_name("p")->SharesDataWith(parameter));
  ExpectBitIdentical(parameter.ReadData(), planned.blob_by_name("p")->ReadData(), "p");
}

// The chain by hand. Lifetimes (layer indices: 0 in, 1 conv1, 2 relu1,
// 3 pool1, 4 conv2, 5 relu2, 6 ip, 7 prob): conv1 1-3, pool1 3-4, conv2 4-6,
// ip 6-7, so conv1 and conv2 share one buffer and pool1 and ip another; data
// (input) and prob (output) keep theirs. Without the plan every blob has its
// own data and diff; with it, no diffs.
TEST(MemoryPlan, BytesMatchAHandCountOnAChain) {
  Net net(NetFromText(kChain, caffe::TEST), TestContext());
  const auto bytes = [&](const char* blob) {
    return net.blob_by_name(blob)->count() * sizeof(float);
  };
  size_t all_blobs = 0;
  for (const auto& blob : net.blobs()) all_blobs += blob->count() * sizeof(float);
  const ActivationMemory memory = net.PlanInferenceMemory();
  EXPECT_EQ(memory.bytes_without_plan, 2 * all_blobs);
  EXPECT_EQ(memory.bytes_with_plan, bytes("data") + bytes("prob") +
                                        std::max(bytes("conv1"), bytes("conv2")) +
                                        std::max(bytes("pool1"), bytes("ip")));
  EXPECT_EQ(net.activation_memory().bytes_with_plan, memory.bytes_with_plan);
  EXPECT_TRUE(net.blob_by_name("conv1")->SharesDataWith(*net.blob_by_name("conv2")));
  EXPECT_TRUE(net.blob_by_name("pool1")->SharesDataWith(*net.blob_by_name("ip")));
  EXPECT_FALSE(net.blob_by_name("conv1")->SharesDataWith(*net.blob_by_name("pool1")));
}

TEST(MemoryPlan, InputsOutputsAndKeptBlobsKeepTheirValues) {
  Net reference(NetFromText(kChain, caffe::TEST), TestContext());
  Net planned(NetFromText(kChain, caffe::TEST), TestContext());
  RandomWeights(&reference, &planned);
  planned.PlanInferenceMemory({"pool1", "conv1"});
  FillInputs(&reference, 7);
  FillInputs(&planned, 7);
  const std::vector<float> input = planned.blob_by_name("data")->ReadData();
  reference.Forward();
  planned.Forward();
  for (const char* name : {"data", "conv1", "pool1", "prob"})
    ExpectBitIdentical(reference.blob_by_name(name)->ReadData(),
                       planned.blob_by_name(name)->ReadData(), name);
  ExpectBitIdentical(input, planned.blob_by_name("data")->ReadData(), "input after Forward");
  for (const char* own : {"data", "prob", "pool1", "conv1"})
    for (size_t b = 0; b < planned.blobs().size(); ++b)
      if (planned.blob_names()[b] != own) {
        EXPECT_FALSE(planned.blobs()[b]->SharesDataWith(*planned.blob_by_name(own)))
            << own << " shares its storage with " << planned.blob_names()[b];
      }
  // conv2 and ip were not kept: reading them is an error naming the blob.
  for (const char* dropped : {"conv2", "ip"}) {
    const std::string what = ErrorOf([&] { planned.blob_by_name(dropped)->ReadData(); });
    EXPECT_TRUE(Contains(what, std::string("blob '") + dropped + "'")) << what;
    EXPECT_TRUE(Contains(what, "keep list")) << what;
  }
  EXPECT_TRUE(Contains(ErrorOf([&] { planned.PlanInferenceMemory({"nope"}); }), "'nope'"));
}

// Calling the plan again replaces the keep list: a blob kept only by the
// first call is dropped, one kept only by the second gets its own storage.
TEST(MemoryPlan, PlanningAgainReplacesTheKeepList) {
  Net reference(NetFromText(kChain, caffe::TEST), TestContext());
  Net planned(NetFromText(kChain, caffe::TEST), TestContext());
  RandomWeights(&reference, &planned);
  planned.PlanInferenceMemory({"pool1"});
  const ActivationMemory first = planned.activation_memory();
  for (const auto& keep : std::vector<std::vector<std::string>>{{"conv2"}, {}, {"pool1"}}) {
    planned.PlanInferenceMemory(keep);
    FillInputs(&reference, 9);
    FillInputs(&planned, 9);
    reference.Forward();
    planned.Forward();
    ExpectSameOutputs(reference, planned);
    for (const char* name : {"pool1", "conv2"}) {
      const bool kept = !keep.empty() && keep[0] == name;
      if (kept)
        ExpectBitIdentical(reference.blob_by_name(name)->ReadData(),
                           planned.blob_by_name(name)->ReadData(), name);
      else
        EXPECT_FALSE(ErrorOf([&] { planned.blob_by_name(name)->ReadData(); }).empty()) << name;
    }
  }
  EXPECT_EQ(planned.activation_memory().bytes_with_plan, first.bytes_with_plan);
  EXPECT_EQ(planned.activation_memory().bytes_without_plan, first.bytes_without_plan);
}

// A larger batch after planning: through Net::Reshape, or by reshaping the
// input and calling Forward; then back to the smaller batch.
TEST(MemoryPlan, ReshapeAfterPlanningKeepsOutputsIdentical) {
  for (bool explicit_reshape : {true, false}) {
    SCOPED_TRACE(explicit_reshape ? "Net::Reshape" : "Forward after the input's Reshape");
    Net reference(NetFromText(kChain, caffe::TEST), TestContext());
    Net planned(NetFromText(kChain, caffe::TEST), TestContext());
    RandomWeights(&reference, &planned);
    const ActivationMemory small = planned.PlanInferenceMemory();
    for (int batch : {5, 2}) {
      for (Net* net : {&reference, &planned}) {
        net->blob_by_name("data")->Reshape({batch, 3, 9, 9});
        if (explicit_reshape) net->Reshape();
        FillInputs(net, 30 + batch);
        net->Forward();
      }
      ASSERT_EQ(planned.output_blobs()[0]->shape(0), batch);
      ExpectSameOutputs(reference, planned);
      const ActivationMemory now = planned.activation_memory();
      EXPECT_EQ(now.bytes_with_plan * 2, small.bytes_with_plan * batch);
      EXPECT_EQ(now.bytes_without_plan * 2, small.bytes_without_plan * batch);
    }
  }
}

TEST(MemoryPlan, NetThatRunsBackwardIsRefused) {
  Net net(NetFromText(R"(
    layer { name: 'in' type: 'Input' top: 'data' top: 'label'
            input_param { shape { dim: 2 dim: 3 } shape { dim: 2 } } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'data' top: 'ip'
            inner_product_param { num_output: 4 } }
    layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' top: 'loss' })",
                      caffe::TRAIN),
          TestContext());
  const std::string what = ErrorOf([&] { net.PlanInferenceMemory(); });
  EXPECT_TRUE(Contains(what, "layer 'ip' (InnerProduct) needs backward")) << what;
  EXPECT_FALSE(net.has_memory_plan());
  net.blob_by_name("data")->WriteData({0.5f, -1.f, 2.f, 0.f, 1.f, -0.5f});
  net.blob_by_name("label")->WriteData({1.f, 3.f});
  EXPECT_TRUE(std::isfinite(net.ForwardBackward()));  // untouched
}

TEST(MemoryPlan, PartialForwardAndBackwardAreRefused) {
  Net net(NetFromText(kChain, caffe::TEST), TestContext());
  net.PlanInferenceMemory();
  std::string what = ErrorOf([&] { net.ForwardFromTo(0, 3); });
  EXPECT_TRUE(Contains(what, "layers 'in' to 'pool1'")) << what;
  what = ErrorOf([&] { net.ForwardFromTo(4, 7); });
  EXPECT_TRUE(Contains(what, "layers 'conv2' to 'prob'")) << what;
  what = ErrorOf([&] { net.Backward(); });
  EXPECT_TRUE(Contains(what, "from layer 'prob'")) << what;
  EXPECT_TRUE(Contains(what, "memory plan")) << what;
  net.ForwardNoLoss();  // whole passes still run
  net.Forward();
}

TEST(MemoryPlan, PlaceInSlotsIsGreedyBestFit) {
  // Sizes 8, 6, 5, 2, 1 with lifetimes: a 0-2, b 3-5, c 1-3, d 5-6, e 1-1.
  const std::vector<size_t> bytes = {8, 6, 5, 2, 1};
  const std::vector<Lifetime> life = {{0, 2}, {3, 5}, {1, 3}, {5, 6}, {1, 1}};
  const SlotPlacement p = PlaceInSlots(bytes, life);
  // a opens slot 0; b fits after a; c overlaps both: slot 1; d overlaps b but
  // not c: slot 1; e overlaps a and c: slot 2.
  EXPECT_EQ(p.slot_of, (std::vector<int>{0, 0, 1, 1, 2}));
  EXPECT_EQ(p.slot_bytes, (std::vector<size_t>{8, 5, 1}));
}

}  // namespace test
}  // namespace dlcaffe
