// The net-description passes of src/passes/, each alone on a net written in
// the test: what they rewrite, and what they must leave alone (graph inputs
// and outputs, blobs with other readers, producers that need their top).
#include <gtest/gtest.h>

#include <cmath>

#include "../../src/passes/net_pass.hpp"
#include "dlcaffe/error.hpp"
#include "dlcaffe/net.hpp"
#include "dlcaffe/onnx_import.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

caffe::NetParameter Net(const std::string& text) { return NetFromText(text); }

const caffe::LayerParameter& Layer(const caffe::NetParameter& net, const std::string& name) {
  for (const auto& l : net.layer())
    if (l.name() == name) return l;
  ADD_FAILURE() << "no layer " << name;
  return net.layer(0);
}

const char kConvBnScaleRelu[] = R"(
  layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 1 dim: 2 dim: 3 dim: 3 } } }
  layer { name: 'conv' type: 'Convolution' bottom: 'x' top: 'c' convolution_param { num_output: 2 kernel_size: 1 } }
  layer { name: 'bn' type: 'BatchNorm' bottom: 'c' top: 'n' }
  layer { name: 'scale' type: 'Scale' bottom: 'n' top: 's' scale_param { bias_term: true } }
  layer { name: 'relu' type: 'ReLU' bottom: 's' top: 'r' }
  layer { name: 'pool' type: 'Pooling' bottom: 'r' top: 'y' pooling_param { global_pooling: true } }
)";

TEST(MakeLayersInPlace, ChainsAfterAConvolutionShareItsTop) {
  caffe::NetParameter net = Net(kConvBnScaleRelu);
  EXPECT_EQ(MakeLayersInPlace(&net, {"x", "y"}), 3);
  for (const char* name : {"bn", "scale", "relu"}) {
    EXPECT_EQ(Layer(net, name).bottom(0), "c") << name;
    EXPECT_EQ(Layer(net, name).top(0), "c") << name;
  }
  EXPECT_EQ(Layer(net, "pool").bottom(0), "c");
}

TEST(MakeLayersInPlace, LeavesKeptBlobsOtherReadersAndTopReadingProducers) {
  {  // 's' is a graph output: the Scale keeps writing it, the ReLU may not overwrite it.
    caffe::NetParameter net = Net(kConvBnScaleRelu);
    EXPECT_EQ(MakeLayersInPlace(&net, {"x", "y", "s"}), 1);
    EXPECT_EQ(Layer(net, "bn").top(0), "c");
    EXPECT_EQ(Layer(net, "scale").top(0), "s");
    EXPECT_EQ(Layer(net, "relu").bottom(0), "s");
    EXPECT_EQ(Layer(net, "relu").top(0), "r");
  }
  {  // 'c' has a second reader: nothing may overwrite it.
    caffe::NetParameter net = Net(std::string(kConvBnScaleRelu) +
                                  "layer { name: 'other' type: 'Power' bottom: 'c' top: 'p' }");
    MakeLayersInPlace(&net, {"x", "y", "p"});
    EXPECT_EQ(Layer(net, "bn").top(0), "n");
  }
  {  // A Sigmoid's backward reads its top: a ReLU after it stays out of place.
    caffe::NetParameter net = Net(R"(
      layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 4 } } }
      layer { name: 'sig' type: 'Sigmoid' bottom: 'x' top: 's' }
      layer { name: 'relu' type: 'ReLU' bottom: 's' top: 'y' })");
    EXPECT_EQ(MakeLayersInPlace(&net, {"x"}), 0);
  }
}

TEST(FusionPasses, GateProductsBecomeSwishAndHardSwish) {
  caffe::NetParameter net = Net(R"(
    layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 4 } } }
    layer { name: 'sig' type: 'Sigmoid' bottom: 'x' top: 'g' }
    layer { name: 'mul' type: 'Eltwise' bottom: 'x' bottom: 'g' top: 'a' eltwise_param { operation: PROD } }
    layer { name: 'hs' type: 'HardSigmoid' bottom: 'a' top: 'h' hard_sigmoid_param { alpha: 0.16666667 beta: 0.5 } }
    layer { name: 'mul2' type: 'Eltwise' bottom: 'h' bottom: 'a' top: 'y' eltwise_param { operation: PROD } })");
  const std::vector<std::string> fused = RunFusionPasses(&net, {"x", "y"});
  EXPECT_EQ(fused.size(), 2u);
  ASSERT_EQ(net.layer_size(), 3);
  EXPECT_EQ(Layer(net, "mul").type(), "Swish");
  EXPECT_EQ(Layer(net, "mul").bottom(0), "x");
  EXPECT_EQ(Layer(net, "mul2").type(), "HardSwish");
  EXPECT_EQ(Layer(net, "mul2").bottom(0), "a");
  EXPECT_EQ(Layer(net, "mul2").top(0), "y");
}

TEST(FusionPasses, AGateThatIsAlsoAnOutputIsNotFused) {
  caffe::NetParameter net = Net(R"(
    layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 4 } } }
    layer { name: 'sig' type: 'Sigmoid' bottom: 'x' top: 'g' }
    layer { name: 'mul' type: 'Eltwise' bottom: 'x' bottom: 'g' top: 'y' eltwise_param { operation: PROD } })");
  EXPECT_TRUE(RunFusionPasses(&net, {"x", "y", "g"}).empty());
  EXPECT_EQ(net.layer_size(), 3);
}

TEST(FusionPasses, InnerProductTakesTheBiasAfterIt) {
  caffe::NetParameter net = Net(R"(
    layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 2 dim: 5 dim: 3 } } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'p' param { name: 'w' }
            inner_product_param { num_output: 4 axis: 2 bias_term: false }
            blobs { shape { dim: 4 dim: 3 } data: 1 data: 2 data: 3 data: 4 data: 5 data: 6
                    data: 7 data: 8 data: 9 data: 10 data: 11 data: 12 } }
    layer { name: 'b' type: 'Bias' bottom: 'p' top: 'y' param { name: 'bias' }
            bias_param { axis: 2 num_axes: 1 }
            blobs { shape { dim: 4 } data: 0.5 data: 1.5 data: 2.5 data: 3.5 } })");
  EXPECT_EQ(RunFusionPasses(&net, {"x", "y"}), std::vector<std::string>{"InnerProductBias"});
  ASSERT_EQ(net.layer_size(), 2);
  const caffe::LayerParameter& ip = net.layer(1);
  EXPECT_TRUE(ip.inner_product_param().bias_term());
  EXPECT_EQ(ip.top(0), "y");
  ASSERT_EQ(ip.blobs_size(), 2);
  EXPECT_EQ(ip.blobs(1).data(3), 3.5f);
  ASSERT_EQ(ip.param_size(), 2);
  EXPECT_EQ(ip.param(1).name(), "bias");
  // The parameters follow the blobs by their names.
  std::map<std::string, OnnxParameterSource> sources = {{"w", {"ip", 0}}, {"bias", {"b", 0}}};
  RelocateParameters(net, &sources);
  EXPECT_EQ(sources["bias"].layer, "ip");
  EXPECT_EQ(sources["bias"].blob_index, 1);
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe

namespace dlcaffe {
namespace test {
namespace {

// Attention as the TorchScript exporter spells it: q and K^T each scaled,
// K^T by a Permute, and a stored additive mask; the mask's values are given
// as a (1, 1, 5, 6) plane.
std::string AttentionPattern(const std::string& mask_layers, const std::string& scores) {
  return R"(
    layer { name: 'in' type: 'Input' top: 'q' top: 'k' top: 'v'
            input_param { shape { dim: 1 dim: 2 dim: 5 dim: 4 } shape { dim: 1 dim: 2 dim: 6 dim: 4 }
                          shape { dim: 1 dim: 2 dim: 6 dim: 3 } } }
    layer { name: 'qs' type: 'Power' bottom: 'q' top: 'qs' power_param { scale: 0.5 } }
    layer { name: 'kt' type: 'Permute' bottom: 'k' top: 'kt' permute_param { order: 0 order: 1 order: 3 order: 2 } }
    layer { name: 'kts' type: 'Power' bottom: 'kt' top: 'kts' power_param { scale: 0.7 } }
    layer { name: 'qk' type: 'MatMul' bottom: 'qs' bottom: 'kts' top: 's' }
  )" + mask_layers + R"(
    layer { name: 'softmax' type: 'Softmax' bottom: ')" + scores + R"(' top: 'p' softmax_param { axis: 3 } }
    layer { name: 'pv' type: 'MatMul' bottom: 'p' bottom: 'v' top: 'o' })";
}

std::string PlaneOperand(const std::string& name, const std::string& bottom, const std::string& top,
                         const char* op, const std::vector<float>& values) {
  std::string text = "layer { name: '" + name + "' type: 'BinaryOp' bottom: '" + bottom +
                     "' top: '" + top + "' binary_op_param { operation: " + op +
                     " operand_shape { dim: 1 dim: 1 dim: 5 dim: 6 } } blobs { shape { dim: 1 "
                     "dim: 1 dim: 5 dim: 6 }";
  for (float v : values) text += " data: " + std::to_string(v);
  return text + " } }";
}

std::vector<float> ForwardOutput(const caffe::NetParameter& param) {
  caffe::NetParameter with_state = param;
  with_state.mutable_state()->set_phase(caffe::TEST);
  dlcaffe::Net net(with_state, TestContext());
  for (const char* input : {"q", "k", "v"}) FillGaussian(net.blob_by_name(input).get(), 0.f, 1.f, 5);
  net.Forward();
  return net.blob_by_name("o")->ReadData();
}

TEST(FusionPasses, AttentionWithAStoredMaskBecomesOneLayerWithTheSameOutput) {
  std::vector<float> mask(30);
  for (int i = 0; i < 30; ++i) mask[i] = i % 4 == 1 ? -3.4e38f : 0.1f * (i % 5);
  const caffe::NetParameter unfused =
      Net(AttentionPattern(PlaneOperand("mask", "s", "sm", "ADD", mask), "sm"));
  caffe::NetParameter fused = unfused;
  EXPECT_EQ(RunFusionPasses(&fused, {"q", "k", "v", "o"}), std::vector<std::string>{"Attention"});
  const caffe::LayerParameter& attention = Layer(fused, "pv");
  EXPECT_EQ(attention.type(), "Attention");
  EXPECT_NEAR(attention.attention_param().scale(), 0.35f, 1e-6f);
  EXPECT_FALSE(attention.attention_param().causal());
  ASSERT_EQ(attention.bottom_size(), 4);
  EXPECT_EQ(attention.bottom(0), "q");
  EXPECT_EQ(attention.bottom(1), "k");  // the identity Permute is gone
  EXPECT_EQ(attention.bottom(2), "v");
  EXPECT_EQ(fused.layer_size(), 3);  // Input, the mask's Parameter, Attention
  const std::vector<float> expected = ForwardOutput(unfused), got = ForwardOutput(fused);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-5f) << i;
}

TEST(FusionPasses, AttentionWithACausalMaskedFillBecomesCausal) {
  // masked_fill: scores * kept + fill, kept 1 where s <= t + S - T.
  std::vector<float> kept(30), fill(30);
  for (int t = 0; t < 5; ++t)
    for (int s = 0; s < 6; ++s) {
      kept[t * 6 + s] = s <= t + 1 ? 1.f : 0.f;
      fill[t * 6 + s] = s <= t + 1 ? 0.f : -3.4e38f;
    }
  const caffe::NetParameter unfused = Net(AttentionPattern(
      PlaneOperand("kept", "s", "sk", "MUL", kept) + PlaneOperand("fill", "sk", "sf", "ADD", fill),
      "sf"));
  caffe::NetParameter fused = unfused;
  EXPECT_EQ(RunFusionPasses(&fused, {"q", "k", "v", "o"}).size(), 1u);
  EXPECT_TRUE(Layer(fused, "pv").attention_param().causal());
  EXPECT_EQ(Layer(fused, "pv").bottom_size(), 3);
  const std::vector<float> expected = ForwardOutput(unfused), got = ForwardOutput(fused);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-5f) << i;
}

// Swin's window attention as the importer writes it: batch 4 of 2 windows,
// 2 heads, 5 positions; scores + a (2, 5, 5) relative-position bias (a
// trained Parameter reshaped, or a folded Bias blob), then the shifted
// windows' stored (1, 2, 1, 5, 5) mask between Reshapes to (2, 2, 2, 5, 5)
// and back.
std::string WindowAttention(bool trained_bias) {
  std::string bias_values, window_values;
  for (int i = 0; i < 50; ++i) bias_values += " data: " + std::to_string(0.05f * (i % 7) - 0.1f);
  for (int i = 0; i < 50; ++i) window_values += i % 6 == 2 ? " data: -100" : " data: 0";
  const std::string bias =
      trained_bias
          ? "layer { name: 'table' type: 'Parameter' top: 'table' param { name: 'rel_bias' } "
            "parameter_param { shape { dim: 1 dim: 2 dim: 5 dim: 5 } } blobs { shape { dim: 1 "
            "dim: 2 dim: 5 dim: 5 }" + bias_values + " } }"
            "layer { name: 'block' type: 'Reshape' bottom: 'table' top: 'block' reshape_param { "
            "shape { dim: 2 dim: 5 dim: 5 } } }"
            "layer { name: 'rel' type: 'Bias' bottom: 's' bottom: 'block' top: 'sb' bias_param { "
            "axis: 1 num_axes: 3 } }"
          : "layer { name: 'rel' type: 'Bias' bottom: 's' top: 'sb' param { lr_mult: 0 } "
            "bias_param { axis: 1 num_axes: 3 } blobs { shape { dim: 2 dim: 5 dim: 5 }" +
                bias_values + " } }";
  return R"(
    force_backward: true
    layer { name: 'in' type: 'Input' top: 'q' top: 'k' top: 'v'
            input_param { shape { dim: 4 dim: 2 dim: 5 dim: 4 } shape { dim: 4 dim: 2 dim: 5 dim: 4 }
                          shape { dim: 4 dim: 2 dim: 5 dim: 3 } } }
    layer { name: 'qs' type: 'Power' bottom: 'q' top: 'qs' power_param { scale: 0.5 } }
    layer { name: 'kt' type: 'Permute' bottom: 'k' top: 'kt' permute_param { order: 0 order: 1 order: 3 order: 2 } }
    layer { name: 'qk' type: 'MatMul' bottom: 'qs' bottom: 'kt' top: 's' }
  )" + bias + R"(
    layer { name: 'r5' type: 'Reshape' bottom: 'sb' top: 'r5' reshape_param { shape { dim: 2 dim: 2 dim: 2 dim: 5 dim: 5 } } }
    layer { name: 'wm' type: 'BinaryOp' bottom: 'r5' top: 'wm' param { lr_mult: 0 decay_mult: 0 }
            binary_op_param { operation: ADD operand_shape { dim: 1 dim: 2 dim: 1 dim: 5 dim: 5 } }
            blobs { shape { dim: 1 dim: 2 dim: 1 dim: 5 dim: 5 })" + window_values + R"( } }
    layer { name: 'r4' type: 'Reshape' bottom: 'wm' top: 'r4' reshape_param { shape { dim: 4 dim: 2 dim: 5 dim: 5 } } }
    layer { name: 'softmax' type: 'Softmax' bottom: 'r4' top: 'p' softmax_param { axis: 3 } }
    layer { name: 'pv' type: 'MatMul' bottom: 'p' bottom: 'v' top: 'o' })";
}

// The output, and the bias table's gradient where it trains, for a fixed
// output gradient.
std::pair<std::vector<float>, std::vector<float>> ForwardBackward(const caffe::NetParameter& param,
                                                                  bool trained) {
  dlcaffe::Net net(param, TestContext());
  for (const char* input : {"q", "k", "v"}) FillGaussian(net.blob_by_name(input).get(), 0.f, 1.f, 5);
  net.Forward();
  Blob gradient(TestContext(), {net.blob_by_name("o")->count()});
  FillGaussian(&gradient, 0.f, 1.f, 6);
  net.blob_by_name("o")->WriteDiff(gradient.ReadData());
  net.Backward();
  return {net.blob_by_name("o")->ReadData(),
          trained ? net.layer_by_name("table")->blobs()[0]->ReadDiff() : std::vector<float>()};
}

TEST(FusionPasses, SwinsWindowBiasBecomesTheAttentionsMaskWithItsGradient) {
  for (const bool trained : {true, false}) {
    SCOPED_TRACE(trained ? "trained bias" : "folded bias");
    const caffe::NetParameter unfused = Net(WindowAttention(trained));
    caffe::NetParameter fused = unfused;
    EXPECT_EQ(RunFusionPasses(&fused, {"q", "k", "v", "o"}),
              std::vector<std::string>{"Attention"});
    const caffe::LayerParameter& attention = Layer(fused, "pv");
    EXPECT_EQ(attention.type(), "Attention");
    ASSERT_EQ(attention.bottom_size(), 4);
    // The bias as one batch item, tiled over the 2 windows, plus their mask.
    EXPECT_EQ(Layer(fused, "rel/windows").type(), "Tile");
    EXPECT_EQ(Layer(fused, "rel/windows").tile_param().tiles(), 2);
    EXPECT_EQ(Layer(fused, "rel/window_mask").binary_op_param().operand_shape().dim(0), 2);
    EXPECT_EQ(attention.bottom(3), "rel/window_mask");
    for (const auto& l : fused.layer()) {
      EXPECT_NE(l.type(), "Softmax");
      EXPECT_NE(l.name(), "r4");
    }
    const auto [expected_out, expected_grad] = ForwardBackward(unfused, trained);
    const auto [out, grad] = ForwardBackward(fused, trained);
    ASSERT_EQ(out.size(), expected_out.size());
    for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], expected_out[i], 1e-5f) << i;
    ASSERT_EQ(grad.size(), expected_grad.size());
    EXPECT_EQ(grad.size(), trained ? 50u : 0u);
    for (size_t i = 0; i < grad.size(); ++i) EXPECT_NEAR(grad[i], expected_grad[i], 1e-5f) << i;
    if (trained) EXPECT_NE(expected_grad, std::vector<float>(50, 0.f));
  }
}

// nn.MultiheadAttention's heads as torch.onnx.export gathers them: the
// packed projection 'x' (T 5, B 2, 3E 24; H 2, D 4) reshaped, permuted and
// sliced into (B, H, T, D) operands, the output permuted to (T, B, H, D) and
// flattened. `k_slice` picks K's third of the projection (1; 0 makes K
// Q's, which no layout reads in place).
std::string GatheredHeads(int k_slice) {
  std::string text = R"(
    force_backward: true
    layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 5 dim: 2 dim: 24 } } }
    layer { name: 'r0' type: 'Reshape' bottom: 'x' top: 'r0' reshape_param { shape { dim: 5 dim: 2 dim: 3 dim: 8 } } }
    layer { name: 'r1' type: 'Reshape' bottom: 'r0' top: 'r1' reshape_param { shape { dim: 1 dim: 5 dim: 2 dim: 3 dim: 8 } } }
    layer { name: 'p1' type: 'Permute' bottom: 'r1' top: 'p1' permute_param { order: 3 order: 1 order: 2 order: 0 order: 4 } }
    layer { name: 'r2' type: 'Reshape' bottom: 'p1' top: 'r2' reshape_param { shape { dim: 3 dim: 5 dim: 2 dim: 8 } } })";
  const int slices[3] = {0, k_slice, 2};
  const char* names[3] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    const std::string n = names[i], at = std::to_string(slices[i]);
    text += "layer { name: '" + n + "_slice' type: 'StridedSlice' bottom: 'r2' top: '" + n +
            "_slice' strided_slice_param { axis: 0 start: " + at + " end: " +
            std::to_string(slices[i] + 1) + " } }"
            "layer { name: '" + n + "_rows' type: 'Reshape' bottom: '" + n + "_slice' top: '" + n +
            "_rows' reshape_param { shape { dim: 5 dim: 2 dim: 8 } } }"
            "layer { name: '" + n + "_heads' type: 'Reshape' bottom: '" + n + "_rows' top: '" + n +
            "_heads' reshape_param { shape { dim: 5 dim: 4 dim: 4 } } }"
            "layer { name: '" + n + "_first' type: 'Permute' bottom: '" + n + "_heads' top: '" + n +
            "_first' permute_param { order: 1 order: 0 order: 2 } }"
            "layer { name: '" + n + "' type: 'Reshape' bottom: '" + n + "_first' top: '" + n +
            "' reshape_param { shape { dim: 2 dim: 2 dim: 5 dim: 4 } } }";
  }
  return text + R"(
    layer { name: 'att' type: 'Attention' bottom: 'q' bottom: 'k' bottom: 'v' top: 'o' attention_param { causal: true } }
    layer { name: 'out' type: 'Permute' bottom: 'o' top: 'tbhd' permute_param { order: 2 order: 0 order: 1 order: 3 } }
    layer { name: 'flat' type: 'Reshape' bottom: 'tbhd' top: 'y' reshape_param { shape { dim: 10 dim: 8 } } })";
}

// The output and the projection's gradient for a fixed output gradient.
std::pair<std::vector<float>, std::vector<float>> ProjectionForwardBackward(
    const caffe::NetParameter& param) {
  TestContext().Seed(48);  // the same weights in both nets
  dlcaffe::Net net(param, TestContext());
  FillGaussian(net.blob_by_name("x").get(), 0.f, 1.f, 5);
  net.Forward();
  Blob gradient(TestContext(), {net.blob_by_name("y")->count()});
  FillGaussian(&gradient, 0.f, 1.f, 6);
  net.blob_by_name("y")->WriteDiff(gradient.ReadData());
  net.Backward();
  return {net.blob_by_name("y")->ReadData(), net.blob_by_name("x")->ReadDiff()};
}

// The fused net gives the unfused one's output and projection gradient
// (which is not all zeros: the comparison checks something).
void ExpectSameProjectionForwardBackward(const caffe::NetParameter& unfused,
                                         const caffe::NetParameter& fused) {
  const auto [expected_out, expected_grad] = ProjectionForwardBackward(unfused);
  const auto [out, grad] = ProjectionForwardBackward(fused);
  ASSERT_EQ(out.size(), expected_out.size());
  for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], expected_out[i], 1e-5f) << i;
  ASSERT_EQ(grad.size(), expected_grad.size());
  for (size_t i = 0; i < grad.size(); ++i) EXPECT_NEAR(grad[i], expected_grad[i], 1e-5f) << i;
  EXPECT_NE(expected_grad, std::vector<float>(grad.size(), 0.f));
}

TEST(FusionPasses, GatheredHeadsBecomeAttentionReadingThePackedProjection) {
  const caffe::NetParameter unfused = Net(GatheredHeads(1));
  caffe::NetParameter fused = unfused;
  EXPECT_EQ(RunFusionPasses(&fused, {"x", "y"}), std::vector<std::string>{"AttentionHeads"});
  // Input, the projection's Reshape to (T, B, 3E), Attention, the output's
  // Reshape to (T, B, H, D), the flattening.
  ASSERT_EQ(fused.layer_size(), 5);
  const caffe::LayerParameter& attention = Layer(fused, "att");
  EXPECT_EQ(attention.attention_param().num_heads(), 2u);
  EXPECT_EQ(attention.attention_param().layout(), caffe::AttentionParameter::SEQUENCE_FIRST);
  EXPECT_TRUE(attention.attention_param().packed_qkv());
  EXPECT_TRUE(attention.attention_param().causal());
  ASSERT_EQ(attention.bottom_size(), 1);
  EXPECT_EQ(attention.bottom(0), "r0");
  EXPECT_EQ(Layer(fused, "r0").reshape_param().shape().dim_size(), 3);
  EXPECT_EQ(Layer(fused, "out").type(), "Reshape");
  ExpectSameProjectionForwardBackward(unfused, fused);
}

// Gathers that no layout reads in place (K is Q's third again), or whose
// blobs something else reads, stay.
TEST(FusionPasses, GatheredHeadsThatDoNotFitStay) {
  caffe::NetParameter twice = Net(GatheredHeads(0));
  EXPECT_TRUE(RunFusionPasses(&twice, {"x", "y"}).empty());
  caffe::NetParameter read = Net(GatheredHeads(1));
  EXPECT_TRUE(RunFusionPasses(&read, {"x", "y", "k_rows"}).empty());
  caffe::NetParameter output = Net(GatheredHeads(1));
  EXPECT_TRUE(RunFusionPasses(&output, {"x", "y", "o"}).empty());
}

// GPT's heads as TorchScript exports them: the packed projection 'qkv'
// (B 2, T 5, 3E 24; H 2, D 4) split by a Slice on its last axis, each part
// reshaped to (B, T, H, D) and permuted to (B, H, T, D); the output permuted
// back and flattened. `project` makes 'qkv' an InnerProduct of 'x' (the
// pass reads the projection's width off it); false makes it an input, whose
// shape the pass cannot see.
std::string SplitHeads(bool project) {
  std::string text = R"(
    force_backward: true
    layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 2 dim: 5 dim: 24 } } })";
  text += project ? R"(
    layer { name: 'proj' type: 'InnerProduct' bottom: 'x' top: 'qkv'
            inner_product_param { num_output: 24 axis: 2 weight_filler { type: 'gaussian' std: 0.3 }
                                  bias_filler { type: 'gaussian' std: 0.1 } } })"
                  : R"(
    layer { name: 'in2' type: 'Input' top: 'qkv' input_param { shape { dim: 2 dim: 5 dim: 24 } } })";
  text += R"(
    layer { name: 'split' type: 'Slice' bottom: 'qkv' top: 'q3' top: 'k3' top: 'v3'
            slice_param { axis: 2 slice_point: 8 slice_point: 16 } })";
  for (const char* n : {"q", "k", "v"}) {
    const std::string t = n;
    text += "layer { name: '" + t + "_heads' type: 'Reshape' bottom: '" + t + "3' top: '" + t +
            "_heads' reshape_param { shape { dim: 2 dim: 5 dim: 2 dim: 4 } } }"
            "layer { name: '" + t + "' type: 'Permute' bottom: '" + t + "_heads' top: '" + t +
            "' permute_param { order: 0 order: 2 order: 1 order: 3 } }";
  }
  return text + R"(
    layer { name: 'att' type: 'Attention' bottom: 'q' bottom: 'k' bottom: 'v' top: 'o' attention_param { causal: true } }
    layer { name: 'out' type: 'Permute' bottom: 'o' top: 'bthd' permute_param { order: 0 order: 2 order: 1 order: 3 } }
    layer { name: 'flat' type: 'Reshape' bottom: 'bthd' top: 'y' reshape_param { shape { dim: 2 dim: 5 dim: 8 } } })";
}

TEST(FusionPasses, SplitHeadsBecomeAttentionReadingThePackedProjection) {
  const caffe::NetParameter unfused = Net(SplitHeads(true));
  caffe::NetParameter fused = unfused;
  EXPECT_EQ(RunFusionPasses(&fused, {"x", "y"}), std::vector<std::string>{"AttentionHeads"});
  // Input, the projection, the Slice become a Reshape to (B, T, 3E),
  // Attention, the output's Reshape, the flattening.
  ASSERT_EQ(fused.layer_size(), 6);
  const caffe::LayerParameter& attention = Layer(fused, "att");
  EXPECT_EQ(attention.attention_param().num_heads(), 2u);
  EXPECT_EQ(attention.attention_param().layout(), caffe::AttentionParameter::BATCH_FIRST);
  EXPECT_TRUE(attention.attention_param().packed_qkv());
  EXPECT_EQ(Layer(fused, "split").type(), "Reshape");
  ASSERT_EQ(attention.bottom_size(), 1);
  EXPECT_EQ(attention.bottom(0), Layer(fused, "split").top(0));
  ExpectSameProjectionForwardBackward(unfused, fused);
  // Without a layer that gives the projection's shape, the split stays.
  caffe::NetParameter unknown = Net(SplitHeads(false));
  EXPECT_TRUE(RunFusionPasses(&unknown, {"x", "qkv", "y"}).empty());
}

TEST(FusionPasses, AttentionScoresThatAreAnOutputStay) {
  caffe::NetParameter net = Net(AttentionPattern("", "s"));
  EXPECT_TRUE(RunFusionPasses(&net, {"q", "k", "v", "o", "p"}).empty());
}

// Attention as torch.export spells it: K arrives 3-D, (B*H, S, d) from a
// Reshape and a Permute; K^T is Reshape(Permute(k3, [0,2,1]), (B, H, d, S));
// the mask is a frozen Bias over the scores' last two axes. `k3_dims` are
// the dimensions K is reshaped to before its Permute [1,0,2].
std::string TorchExportAttention(const std::string& k3_dims, const std::vector<float>& mask) {
  std::string bias = "blobs { shape { dim: 5 dim: 6 }";
  for (float v : mask) bias += " data: " + std::to_string(v);
  bias += " }";
  return R"(
    layer { name: 'in' type: 'Input' top: 'q' top: 'k' top: 'v'
            input_param { shape { dim: 1 dim: 2 dim: 5 dim: 4 } shape { dim: 6 dim: 2 dim: 4 }
                          shape { dim: 1 dim: 2 dim: 6 dim: 3 } } }
    layer { name: 'view_k' type: 'Reshape' bottom: 'k' top: 'view_k'
            reshape_param { shape { )" + k3_dims + R"( } } }
    layer { name: 'k3' type: 'Permute' bottom: 'view_k' top: 'k3' permute_param { order: 1 order: 0 order: 2 } }
    layer { name: 'k3t' type: 'Permute' bottom: 'k3' top: 'k3t' permute_param { order: 0 order: 2 order: 1 } }
    layer { name: 'kt' type: 'Reshape' bottom: 'k3t' top: 'kt'
            reshape_param { shape { dim: 1 dim: 2 dim: 4 dim: 6 } } }
    layer { name: 'qs' type: 'Power' bottom: 'q' top: 'qs' power_param { scale: 0.5 } }
    layer { name: 'kts' type: 'Power' bottom: 'kt' top: 'kts' power_param { scale: 0.5 } }
    layer { name: 'qk' type: 'MatMul' bottom: 'qs' bottom: 'kts' top: 's' }
    layer { name: 'mask' type: 'Bias' bottom: 's' top: 'sm' param { lr_mult: 0 decay_mult: 0 }
            bias_param { axis: 2 num_axes: 2 } )" + bias + R"( }
    layer { name: 'softmax' type: 'Softmax' bottom: 'sm' top: 'p' softmax_param { axis: 3 } }
    layer { name: 'pv' type: 'MatMul' bottom: 'p' bottom: 'v' top: 'o' })";
}

TEST(FusionPasses, TorchExportsReshapedTransposeOfKAndFrozenBiasMaskFuse) {
  std::vector<float> causal(30);
  for (int t = 0; t < 5; ++t)
    for (int s = 0; s < 6; ++s) causal[t * 6 + s] = s <= t + 1 ? 0.f : -INFINITY;
  const caffe::NetParameter unfused = Net(TorchExportAttention("dim: 6 dim: 2 dim: 4", causal));
  caffe::NetParameter fused = unfused;
  EXPECT_EQ(RunFusionPasses(&fused, {"q", "k", "v", "o"}), std::vector<std::string>{"Attention"});
  const caffe::LayerParameter& attention = Layer(fused, "pv");
  EXPECT_EQ(attention.type(), "Attention");
  EXPECT_TRUE(attention.attention_param().causal());
  EXPECT_NEAR(attention.attention_param().scale(), 0.25f, 1e-6f);
  ASSERT_EQ(attention.bottom_size(), 3);
  // K itself, (1, 2, 6, 4), from the 3-D K by the former K^T Reshape.
  const caffe::LayerParameter& k = Layer(fused, "kt");
  EXPECT_EQ(attention.bottom(1), "kt");
  EXPECT_EQ(k.bottom(0), "k3");
  EXPECT_EQ(k.reshape_param().shape().dim(2), 6);
  EXPECT_EQ(k.reshape_param().shape().dim(3), 4);
  const std::vector<float> expected = ForwardOutput(unfused), got = ForwardOutput(fused);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-5f) << i;
}

// The same layers where the 3-D tensor is not (B*H, S, d) (here (2, 4, 6)
// reshaped from the same 48 values): K^T is not K's transpose, nothing fuses.
TEST(FusionPasses, ReshapedTransposeOfAnotherShapeIsNotK) {
  std::vector<float> zero(30, 0.f);
  caffe::NetParameter net = Net(TorchExportAttention("dim: 4 dim: 2 dim: 6", zero));
  net.mutable_layer(0)->mutable_input_param()->mutable_shape(1)->set_dim(0, 4);
  net.mutable_layer(0)->mutable_input_param()->mutable_shape(1)->set_dim(2, 6);
  EXPECT_TRUE(RunFusionPasses(&net, {"q", "k", "v", "o"}).empty());
}

TEST(AddClassifierLoss, LabelsAndASoftmaxLossOverTheLastAxisOfTheOutput) {
  caffe::NetParameter net = NetFromText(R"(
    layer { name: 'in' type: 'Input' top: 'ids' input_param { shape { dim: 2 dim: 5 } } }
    layer { name: 'embed' type: 'Embed' bottom: 'ids' top: 'logits'
            embed_param { num_output: 7 input_dim: 11 } })");
  AddClassifierLoss(&net, {2, 5, 7}, "lm.onnx");
  ASSERT_EQ(net.layer_size(), 4);
  const caffe::LayerParameter& label = net.layer(2);
  EXPECT_EQ(label.type(), "Input");
  ASSERT_EQ(label.input_param().shape(0).dim_size(), 2);  // B x T labels
  EXPECT_EQ(label.input_param().shape(0).dim(1), 5);
  const caffe::LayerParameter& loss = net.layer(3);
  EXPECT_EQ(loss.type(), "SoftmaxWithLoss");
  EXPECT_EQ(loss.softmax_param().axis(), -1);
  EXPECT_EQ(loss.bottom(0), "logits");
  EXPECT_EQ(loss.bottom(1), "label");
  try {
    caffe::NetParameter scalar = NetFromText(R"(
      layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 3 } } }
      layer { name: 'p' type: 'Power' bottom: 'x' top: 'y' })");
    AddClassifierLoss(&scalar, {3}, "vector.onnx");
    FAIL() << "an output of one axis has no classes";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("vector.onnx: training needs an output of at least 2"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
