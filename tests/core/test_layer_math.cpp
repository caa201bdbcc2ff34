// The math of a layer's matrix products (core/layer_math.hpp): its own
// forward_math / backward_math, else the net's default (copied in by the
// storage pass), else its storage type; TF32 a math type only;
// DLCAFFE_ALLOW_TF32 making FLOAT math TF32. And that Convolution,
// Deconvolution, InnerProduct and MatMul hand their GEMMs the resolved math,
// forward and backward (GemmRecording sees every GemmArgs), also inside LSTM
// and RNN.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "../../src/core/gemm_tuning.hpp"
#include "../../src/core/layer_math.hpp"
#include "../../src/passes/net_pass.hpp"
#include "dlcaffe/error.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "dlcaffe/net.hpp"
#include "util/environment_variable.hpp"
#include "util/error_of.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

// A test option for a scope, then the environment's value again.
struct TestOption {
  TestOption(const char* name, const char* value) : name(name) { SetTestOption(name, value); }
  ~TestOption() { ResetTestOption(name); }
  const char* name;
};

constexpr StorageType kF32 = StorageType::kFloat32;
constexpr StorageType kF16 = StorageType::kFloat16;
constexpr StorageType kBF16 = StorageType::kBFloat16;

MatrixMath Forward(const std::string& layer, StorageType storage, bool tf32 = false) {
  LayerChoices options;
  options.allow_tf32 = tf32;
  return ForwardMatrixMath(LayerParam(layer), storage, options);
}
MatrixMath Backward(const std::string& layer, StorageType storage, bool tf32 = false) {
  LayerChoices options;
  options.allow_tf32 = tf32;
  return BackwardMatrixMath(LayerParam(layer), storage, options);
}

TEST(LayerMath, TheLayersFieldElseItsStorageType) {
  const std::string plain = "name: 'c' type: 'Convolution'";
  EXPECT_EQ(Forward(plain, kF32), MatrixMath::kFloat32);
  EXPECT_EQ(Forward(plain, kF16), MatrixMath::kFloat16);
  EXPECT_EQ(Forward(plain, kBF16), MatrixMath::kBFloat16);
  EXPECT_EQ(Backward(plain, kF32), MatrixMath::kFloat32);
  EXPECT_EQ(Backward(plain, kF16), MatrixMath::kFloat16);
  EXPECT_EQ(Backward(plain, kBF16), MatrixMath::kBFloat16);
  // Each direction its own field, over the storage type.
  const std::string forward_float = plain + " forward_math: FLOAT";
  EXPECT_EQ(Forward(forward_float, kF16), MatrixMath::kFloat32);
  EXPECT_EQ(Backward(forward_float, kF16), MatrixMath::kFloat16);
  const std::string backward_bf16 = plain + " backward_math: BFLOAT16";
  EXPECT_EQ(Forward(backward_bf16, kF16), MatrixMath::kFloat16);
  EXPECT_EQ(Backward(backward_bf16, kF16), MatrixMath::kBFloat16);
  const std::string both = plain + " forward_math: TF32 backward_math: FLOAT16";
  EXPECT_EQ(Forward(both, kF32), MatrixMath::kTF32);
  EXPECT_EQ(Backward(both, kF32), MatrixMath::kFloat16);
  // TF32 maps as it is on 16-bit storage too (their values are exact in it).
  EXPECT_EQ(Forward(plain + " forward_math: TF32", kBF16), MatrixMath::kTF32);
}

TEST(LayerMath, OtherTypesAreRefusedNamingTheLayerAndField) {
  const std::string forward =
      ErrorOf([] { Forward("name: 'c' type: 'Convolution' forward_math: DOUBLE", kF32); });
  EXPECT_NE(forward.find("layer 'c' (Convolution): forward_math DOUBLE is not supported "
                         "(FLOAT, TF32, FLOAT16 or BFLOAT16)"),
            std::string::npos)
      << forward;
  const std::string backward =
      ErrorOf([] { Backward("name: 'ip' type: 'InnerProduct' backward_math: UINT", kF16); });
  EXPECT_NE(backward.find("layer 'ip' (InnerProduct): backward_math UINT is not supported"),
            std::string::npos)
      << backward;
  // A layer made outside a net refuses it at setup, before any product.
  auto layer = MakeLayer(R"(name: 'ip' type: 'InnerProduct' forward_math: INT
                            inner_product_param { num_output: 2 })");
  Blob bottom(TestContext(), {2, 3}), top(TestContext());
  const std::string setup = ErrorOf([&] { layer->SetUp({&bottom}, {&top}); });
  EXPECT_NE(setup.find("forward_math INT is not supported"), std::string::npos) << setup;
}

// x -> conv (FLOAT16 storage) -> ip (forward_math set) -> loss; a LogSoftmax
// (float32 kernels only) reads ip's output too.
const char kNet[] = R"(
  name: 'm'
  layer { name: 'x' type: 'Input' top: 'x' top: 't'
          input_param { shape { dim: 2 dim: 3 dim: 5 dim: 5 } shape { dim: 2 dim: 4 } } }
  layer { name: 'conv' type: 'Convolution' bottom: 'x' top: 'c'
          convolution_param { num_output: 2 kernel_size: 3 pad: 1
                              weight_filler { type: 'gaussian' std: 0.2 } } }
  layer { name: 'ip' type: 'InnerProduct' bottom: 'c' top: 'y' forward_math: TF32
          inner_product_param { num_output: 4 weight_filler { type: 'gaussian' std: 0.2 } } }
  layer { name: 'loss' type: 'EuclideanLoss' bottom: 'y' bottom: 't' top: 'loss' }
  layer { name: 'lsm' type: 'LogSoftmax' bottom: 'y' top: 'p' }
)";

std::map<std::string, caffe::LayerParameter> Typed(const std::string& fields) {
  caffe::NetParameter typed;
  AssignStorageTypes(NetFromText(fields + kNet), TestContext(), &typed);
  std::map<std::string, caffe::LayerParameter> layers;
  for (const auto& layer : typed.layer()) layers[layer.name()] = layer;
  return layers;
}

TEST(LayerMath, ALayersFieldBeatsTheNetsDefaultWhichBeatsTheStorageType) {
  LayerChoices options;
  {
    // The net's defaults reach the layers that set none; ip keeps its own.
    auto layers = Typed(
        "default_forward_type: FLOAT16 default_forward_math: BFLOAT16 "
        "default_backward_math: FLOAT");
    EXPECT_EQ(ForwardMatrixMath(layers["conv"], kF16, options), MatrixMath::kBFloat16);
    EXPECT_EQ(BackwardMatrixMath(layers["conv"], kF16, options), MatrixMath::kFloat32);
    EXPECT_EQ(ForwardMatrixMath(layers["ip"], kF16, options), MatrixMath::kTF32);
    EXPECT_EQ(BackwardMatrixMath(layers["ip"], kF16, options), MatrixMath::kFloat32);
    EXPECT_EQ(layers["conv"].forward_math(), caffe::BFLOAT16);
    EXPECT_EQ(layers["ip"].forward_math(), caffe::TF32);
  }
  {
    // No default: the storage type, each direction on its own.
    auto layers = Typed("default_forward_type: BFLOAT16 default_backward_math: FLOAT16");
    EXPECT_FALSE(layers["conv"].has_forward_math());
    EXPECT_EQ(layers["conv"].forward_type(), caffe::BFLOAT16);
    EXPECT_EQ(ForwardMatrixMath(layers["conv"], kBF16, options), MatrixMath::kBFloat16);
    EXPECT_EQ(BackwardMatrixMath(layers["conv"], kBF16, options), MatrixMath::kFloat16);
    // LogSoftmax stays float32: its storage, and so its math, is FLOAT.
    EXPECT_EQ(layers["lsm"].forward_type(), caffe::FLOAT);
    EXPECT_EQ(ForwardMatrixMath(layers["lsm"], kF32, options), MatrixMath::kFloat32);
  }
}

TEST(LayerMath, TF32IsAMathTypeAndNotAStorageType) {
  // Accepted as math, on the net and on a layer.
  EXPECT_EQ(Typed("default_forward_math: TF32 default_backward_math: TF32")["conv"]
                .backward_math(),
            caffe::TF32);
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"default_forward_type: TF32", "net 'm': default_forward_type TF32 is not supported"},
      {"default_backward_type: TF32", "net 'm': default_backward_type TF32 is not supported"},
  };
  for (const auto& [fields, message] : refused) {
    const std::string error = ErrorOf([&] { Typed(fields); });
    EXPECT_NE(error.find(message), std::string::npos) << error;
    EXPECT_NE(error.find("TF32 is a math type only"), std::string::npos) << error;
    EXPECT_NE(error.find("forward_math"), std::string::npos) << error;
  }
  for (const char* field : {"forward_type", "backward_type"}) {
    caffe::NetParameter net = NetFromText(kNet);
    caffe::LayerParameter* ip = net.mutable_layer(2);
    if (std::string(field) == "forward_type") ip->set_forward_type(caffe::TF32);
    else ip->set_backward_type(caffe::TF32);
    caffe::NetParameter typed;
    const std::string error = ErrorOf([&] { AssignStorageTypes(net, TestContext(), &typed); });
    EXPECT_NE(error.find("layer 'ip' (InnerProduct): " + std::string(field) +
                         " TF32 is not supported"),
              std::string::npos)
        << error;
    EXPECT_NE(error.find("TF32 is a math type only"), std::string::npos) << error;
  }
  // The math fields refuse what is not a math type, naming the field.
  const std::string math = ErrorOf([] { Typed("default_backward_math: DOUBLE"); });
  EXPECT_NE(math.find("net 'm': default_backward_math DOUBLE is not supported (FLOAT, TF32, "
                      "FLOAT16 or BFLOAT16)"),
            std::string::npos)
      << math;
}

TEST(LayerMath, AllowTF32MakesFloatMathTF32) {
  {
    EnvironmentVariable unset("DLCAFFE_ALLOW_TF32", nullptr);
    EXPECT_FALSE(RunOptions::FromEnvironment().allow_tf32);
  }
  {
    EnvironmentVariable on("DLCAFFE_ALLOW_TF32", "1");
    EXPECT_TRUE(RunOptions::FromEnvironment().allow_tf32);
  }
  {
    EnvironmentVariable off("DLCAFFE_ALLOW_TF32", "0");
    EXPECT_FALSE(RunOptions::FromEnvironment().allow_tf32);
  }
  {
    EnvironmentVariable bad("DLCAFFE_ALLOW_TF32", "yes");
    const std::string error = ErrorOf([] { RunOptions::FromEnvironment(); });
    EXPECT_NE(error.find("DLCAFFE_ALLOW_TF32"), std::string::npos) << error;
    EXPECT_NE(error.find("'yes'"), std::string::npos) << error;
  }
  // Every FLOAT math, set or from the storage type, as PyTorch's
  // allow_tf32; the 16-bit maths stay.
  const std::string plain = "name: 'c' type: 'Convolution'";
  EXPECT_EQ(Forward(plain, kF32, true), MatrixMath::kTF32);
  EXPECT_EQ(Backward(plain, kF32, true), MatrixMath::kTF32);
  EXPECT_EQ(Forward(plain + " forward_math: FLOAT", kF16, true), MatrixMath::kTF32);
  EXPECT_EQ(Forward(plain, kF16, true), MatrixMath::kFloat16);
  EXPECT_EQ(Backward(plain + " backward_math: BFLOAT16", kF32, true), MatrixMath::kBFloat16);
}

// --- The GEMMs of the layers carry the math.

struct Recorded {
  std::vector<GemmArgs> forward, backward;
};

// Sets the layer up on bottoms of `shapes` stored as `type` (those marked
// in `float_bottoms` in float32), and records the GEMMs of one Forward and
// of one Backward (every bottom but the float32 ones and every parameter
// gradient asked for).
Recorded Record(const std::string& param, StorageType type,
                const std::vector<std::vector<int>>& shapes,
                const std::vector<bool>& float_bottoms = {}) {
  Context& ctx = TestContext();
  auto layer = MakeLayer(param);
  std::vector<std::unique_ptr<Blob>> blobs;
  std::vector<Blob*> bottom;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const bool in_float = i < float_bottoms.size() && float_bottoms[i];
    blobs.push_back(std::make_unique<Blob>(ctx));
    blobs.back()->set_storage_type(in_float ? kF32 : type);
    blobs.back()->Reshape(shapes[i]);
    FillUniform(blobs.back().get(), -1, 1, 7 + i);
    bottom.push_back(blobs.back().get());
  }
  Blob top(ctx);
  top.set_storage_type(type);
  layer->SetUp(bottom, {&top});
  Recorded r;
  {
    GemmRecording recording(ctx);
    layer->Forward(bottom, {&top});
    r.forward = recording.products();
  }
  FillUniform(&top, -1, 1, 3);
  top.WriteDiff(top.ReadData());
  for (auto& blob : layer->blobs()) blob->SetDiff(0.f);
  {
    GemmRecording recording(ctx);
    std::vector<bool> propagate_down(bottom.size(), true);
    for (size_t i = 0; i < float_bottoms.size() && i < bottom.size(); ++i)
      propagate_down[i] = !float_bottoms[i];
    layer->Backward({&top}, propagate_down, bottom);
    r.backward = recording.products();
  }
  ctx.Finish();
  return r;
}

void ExpectMath(const std::vector<GemmArgs>& products, MatrixMath math, size_t at_least,
                const char* what) {
  EXPECT_GE(products.size(), at_least) << what;
  for (const GemmArgs& g : products)
    EXPECT_EQ(static_cast<int>(g.math), static_cast<int>(math))
        << what << ": M " << g.M << " N " << g.N << " K " << g.K;
}

class ConvolutionMath : public ::testing::TestWithParam<const char*> {};

// Every GEMM path: im2col and column-order copies (the CPU shape), and the
// GEMMs in place on implicit windows with the data gradient as an implicit
// GEMM (the GPU shape).
TEST_P(ConvolutionMath, ForwardAndBackwardGemmsCarryTheirMath) {
  TestOption shape("kernel_shape", GetParam());
  TestOption winograd("winograd", "off");
  const std::string conv = R"(name: 'conv' type: 'Convolution'
      convolution_param { num_output: 4 kernel_size: 3 pad: 1
                          weight_filler { type: 'gaussian' std: 0.2 } })";
  // 16-bit storage: forward from the storage type, backward its own field.
  Recorded r = Record(conv + " backward_math: BFLOAT16", kF16, {{2, 3, 5, 5}});
  ExpectMath(r.forward, MatrixMath::kFloat16, 1, "forward");
  ExpectMath(r.backward, MatrixMath::kBFloat16, 2, "backward (data and weight gradients)");
  // A grouped, strided one (the data gradient by col2im) in float32.
  const std::string strided = R"(name: 'conv' type: 'Convolution' forward_math: TF32
      convolution_param { num_output: 4 kernel_size: 3 stride: 2 group: 2
                          weight_filler { type: 'gaussian' std: 0.2 } })";
  r = Record(strided, kF32, {{2, 4, 7, 7}});
  ExpectMath(r.forward, MatrixMath::kTF32, 1, "strided forward");
  ExpectMath(r.backward, MatrixMath::kFloat32, 2, "strided backward");
  // Deconvolution: its forward is W^T * columns, its data gradient W * col.
  const std::string deconv = R"(name: 'deconv' type: 'Deconvolution'
      forward_math: FLOAT16 backward_math: TF32
      convolution_param { num_output: 3 kernel_size: 3 stride: 2
                          weight_filler { type: 'gaussian' std: 0.2 } })";
  r = Record(deconv, kF32, {{2, 4, 3, 3}});
  ExpectMath(r.forward, MatrixMath::kFloat16, 1, "deconvolution forward");
  ExpectMath(r.backward, MatrixMath::kTF32, 2, "deconvolution backward");
}

INSTANTIATE_TEST_SUITE_P(Paths, ConvolutionMath, ::testing::Values("cpu", "gpu"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

TEST(LayerMath, InnerProductGemmsCarryTheirMath) {
  const std::string ip = R"(name: 'ip' type: 'InnerProduct'
      inner_product_param { num_output: 5 weight_filler { type: 'gaussian' std: 0.2 }
                            bias_filler { type: 'constant' value: 0.1 } })";
  // 16-bit: the weight and data gradients in backward math (the bias's is
  // a column sum, no product).
  Recorded r = Record(ip + " forward_math: FLOAT16 backward_math: BFLOAT16", kF16, {{3, 7}});
  ExpectMath(r.forward, MatrixMath::kFloat16, 1, "forward");
  ExpectMath(r.backward, MatrixMath::kBFloat16, 2, "backward");
  r = Record(ip, kBF16, {{3, 7}});
  ExpectMath(r.forward, MatrixMath::kBFloat16, 1, "bfloat16 storage, forward");
  ExpectMath(r.backward, MatrixMath::kBFloat16, 2, "bfloat16 storage, backward");
  // float32 with DLCAFFE_ALLOW_TF32 (the run option): the FLOAT math is TF32.
  {
    TestOption tf32("allow_tf32", "on");
    r = Record(ip + " backward_math: FLOAT16", kF32, {{3, 7}});
    ExpectMath(r.forward, MatrixMath::kTF32, 1, "allow_tf32, forward");
    ExpectMath(r.backward, MatrixMath::kFloat16, 2, "allow_tf32, backward");
  }
  r = Record(ip, kF32, {{3, 7}});
  ExpectMath(r.forward, MatrixMath::kFloat32, 1, "float32, forward");
  ExpectMath(r.backward, MatrixMath::kFloat32, 2, "float32, backward");
}

TEST(LayerMath, MatMulGemmsCarryTheirMath) {
  // Two operands, batched (b broadcast: its gradient sums over the batch).
  Recorded r = Record("name: 'mm' type: 'MatMul' forward_math: FLOAT16 backward_math: TF32",
                      kF32, {{2, 3, 4, 5}, {5, 6}});
  ExpectMath(r.forward, MatrixMath::kFloat16, 1, "forward");
  ExpectMath(r.backward, MatrixMath::kTF32, 2, "backward");
  r = Record(R"(name: 'mm' type: 'MatMul' forward_math: BFLOAT16 backward_math: BFLOAT16
                matmul_param { transpose_b: true })",
             kF32, {{3, 4, 5}, {3, 6, 5}});
  ExpectMath(r.forward, MatrixMath::kBFloat16, 1, "batched forward");
  ExpectMath(r.backward, MatrixMath::kBFloat16, 2, "batched backward");
  // A learned operand; no math set: the storage type's.
  r = Record(R"(name: 'mm' type: 'MatMul'
                matmul_param { operand_shape { dim: 5 dim: 2 }
                               operand_filler { type: 'gaussian' std: 0.2 } })",
             kF32, {{4, 5}});
  ExpectMath(r.forward, MatrixMath::kFloat32, 1, "learned operand, forward");
  ExpectMath(r.backward, MatrixMath::kFloat32, 2, "learned operand, backward");
  // 16-bit activations and a learned operand, which stays float: the math is
  // the activation's type, also where the learned operand comes first (a).
  for (const char* first : {"false", "true"}) {
    r = Record(std::string(R"(name: 'mm' type: 'MatMul'
                matmul_param { operand_shape { dim: 5 dim: 5 } operand_first: )") + first +
                   " operand_filler { type: 'gaussian' std: 0.2 } }",
               kF16, {{5, 5}});
    ExpectMath(r.forward, MatrixMath::kFloat16, 1, "16-bit, learned operand, forward");
    ExpectMath(r.backward, MatrixMath::kFloat16, 2, "16-bit, learned operand, backward");
  }
}

// LSTM and RNN unroll into a net of InnerProducts, which take the
// recurrent layer's math and storage: its fields, else its storage type.
TEST(LayerMath, RecurrentLayersInnerProductsCarryTheirMath) {
  const int T = 3, N = 2, K = 5;  // the net below has these too
  const std::vector<std::vector<int>> shapes = {{T, N, K}, {T, N}};
  const std::vector<bool> cont_in_float = {false, true};
  const std::string recurrent = " recurrent_param { num_output: 4 weight_filler { "
                                "type: 'gaussian' std: 0.2 } }";
  // The recording keeps one product per shape: the input product for all
  // steps and the per-step one(s); backward, their data and weight gradients.
  for (const char* type : {"LSTM", "RNN"}) {
    SCOPED_TRACE(type);
    const std::string layer = std::string("name: 'rec' type: '") + type + "'";
    Recorded r = Record(layer + " forward_math: TF32 backward_math: FLOAT16" + recurrent, kF32,
                        shapes, cont_in_float);
    ExpectMath(r.forward, MatrixMath::kTF32, 2, "float32, forward");
    ExpectMath(r.backward, MatrixMath::kFloat16, 4, "float32, backward");
    r = Record(layer + recurrent, kBF16, shapes, cont_in_float);
    ExpectMath(r.forward, MatrixMath::kBFloat16, 2, "bfloat16 storage, forward");
    ExpectMath(r.backward, MatrixMath::kBFloat16, 4, "bfloat16 storage, backward");
    r = Record(layer + " forward_math: FLOAT" + recurrent, kF16, shapes, cont_in_float);
    ExpectMath(r.forward, MatrixMath::kFloat32, 2, "float16 storage, forward");
    ExpectMath(r.backward, MatrixMath::kFloat16, 4, "float16 storage, backward");
    {
      TestOption tf32("allow_tf32", "on");
      r = Record(layer + recurrent, kF32, shapes, cont_in_float);
      ExpectMath(r.forward, MatrixMath::kTF32, 2, "allow_tf32, forward");
      ExpectMath(r.backward, MatrixMath::kTF32, 4, "allow_tf32, backward");
    }
  }
  // In a net: the net's default math, as the storage pass gave it to the
  // LSTM, reaches its products; its storage type makes the other direction's.
  caffe::NetParameter param = NetFromText(R"(
      name: 'seq' default_forward_type: FLOAT16 default_forward_math: BFLOAT16
      layer { name: 'x' type: 'Input' top: 'x' top: 't'
              input_param { shape { dim: 3 dim: 2 dim: 5 } shape { dim: 3 dim: 2 dim: 4 } } }
      layer { name: 'cont' type: 'Input' top: 'cont' input_param { shape { dim: 3 dim: 2 } } }
      layer { name: 'lstm' type: 'LSTM' bottom: 'x' bottom: 'cont' top: 'h'
              recurrent_param { num_output: 4 weight_filler { type: 'gaussian' std: 0.2 } } }
      layer { name: 'loss' type: 'EuclideanLoss' bottom: 'h' bottom: 't' top: 'loss' })");
  Net net(param, TestContext());
  FillUniform(net.blob_by_name("x").get(), -1, 1, 1);
  FillUniform(net.blob_by_name("t").get(), -1, 1, 2);
  net.blob_by_name("cont")->SetData(1.f);
  std::vector<GemmArgs> forward, backward;
  {
    GemmRecording recording(TestContext());
    net.Forward();
    forward = recording.products();
  }
  {
    GemmRecording recording(TestContext());
    net.Backward();
    backward = recording.products();
  }
  ExpectMath(forward, MatrixMath::kBFloat16, 2, "net, forward (the net's default)");
  ExpectMath(backward, MatrixMath::kFloat16, 4, "net, backward (the storage type)");
}

// Through a Net: the pass copies the net's defaults, the layers resolve.
TEST(LayerMath, ANetsGemmsCarryTheResolvedMath) {
  caffe::NetParameter param =
      NetFromText(std::string("default_forward_type: FLOAT16 default_backward_math: BFLOAT16") +
                  kNet);
  Net net(param, TestContext());
  FillUniform(net.blob_by_name("x").get(), -1, 1, 1);
  FillUniform(net.blob_by_name("t").get(), -1, 1, 2);
  std::vector<GemmArgs> forward, backward;
  {
    GemmRecording recording(TestContext());
    net.Forward();
    forward = recording.products();
  }
  {
    GemmRecording recording(TestContext());
    net.Backward();
    backward = recording.products();
  }
  // conv's forward GEMM is 2 x 50 x 27 (num_output x images*area x C*k*k):
  // FLOAT16 from its storage; ip's (2 x 4 x 50) TF32, its own field.
  bool conv_seen = false, ip_seen = false;
  for (const GemmArgs& g : forward) {
    if (g.M == 2 && g.K == 27) {
      conv_seen = true;
      EXPECT_EQ(static_cast<int>(g.math), static_cast<int>(MatrixMath::kFloat16));
    } else if (g.M == 2 && g.N == 4) {
      ip_seen = true;
      EXPECT_EQ(static_cast<int>(g.math), static_cast<int>(MatrixMath::kTF32));
    }
  }
  EXPECT_TRUE(conv_seen && ip_seen) << forward.size() << " forward GEMMs";
  // conv's weight gradient, ip's weight and data gradients (the biases'
  // are sums, no products).
  ExpectMath(backward, MatrixMath::kBFloat16, 3, "backward (the net's default)");
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
