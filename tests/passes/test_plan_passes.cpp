// The execution plan's passes (src/passes/plan_*.cpp), each alone on a net
// set up with fusion off (so that the plan the Net made has no folds): what
// each finds, and what it must leave alone. Then the plan's steps for whole
// and partial passes, the backward turns a forward leaves, the options that
// turn it off, and the graph passes on a prototxt that opts in. The numbers
// (fused against separate nets) are checked in test_net.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "../../src/passes/plan_pass.hpp"
#include "dlcaffe/net.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

// conv -> bn -> scale -> relu, all in place on 'y', then a pooling.
const char kChain[] = R"(
  layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 2 dim: 3 dim: 5 dim: 5 } } }
  layer { name: 'conv' type: 'Convolution' bottom: 'x' top: 'y'
          convolution_param { num_output: 4 kernel_size: 3 pad: 1 } }
  layer { name: 'bn' type: 'BatchNorm' bottom: 'y' top: 'y' }
  layer { name: 'scale' type: 'Scale' bottom: 'y' top: 'y' scale_param { bias_term: true } }
  layer { name: 'relu' type: 'ReLU' bottom: 'y' top: 'y' }
  layer { name: 'pool' type: 'Pooling' bottom: 'y' top: 'p' pooling_param { global_pooling: true } }
)";

// The net of `text` in `phase`, set up without fusions.
std::unique_ptr<Net> Unfused(const std::string& text, caffe::Phase phase,
                             bool force_backward = false) {
  caffe::NetParameter param = NetFromText(text, phase);
  param.set_force_backward(force_backward);
  SetTestOption("fusion", "off");
  auto net = std::make_unique<Net>(param, TestContext());
  ResetTestOption("fusion");
  return net;
}

std::vector<LayerFusion> RunPass(const std::string& pass, const Net& net) {
  std::vector<LayerFusion> fusions(net.layers().size());
  PlanPassRegistry::Find(pass)(net, &fusions);
  return fusions;
}

int Index(const Net& net, const std::string& layer) {
  const auto& names = net.layer_names();
  return static_cast<int>(std::find(names.begin(), names.end(), layer) - names.begin());
}

TEST(PlanPasses, TheyRunInRankOrder) {
  std::vector<std::string> names;
  for (const NamedPlanPass& p : PlanPassRegistry::Passes()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fold_channel_affine", "absorb_scale", "fuse_relu"}));
}

TEST(PlanPasses, FoldChannelAffineTakesAnInferenceBatchNormAndScale) {
  auto net = Unfused(kChain, caffe::TEST);
  const int conv = Index(*net, "conv");
  const std::vector<LayerFusion> f = RunPass("fold_channel_affine", *net);
  EXPECT_EQ(f[conv].absorbed, 2);
  EXPECT_TRUE(f[conv].channel_affine);
  EXPECT_FALSE(f[conv].relu_after_absorbed);  // fuse_relu's part
  for (size_t i = 0; i < f.size(); ++i)
    if (static_cast<int>(i) != conv) EXPECT_EQ(f[i].absorbed, 0) << i;
  // Not where the chain takes gradients (a training net), nor for a
  // BatchNorm of batch statistics.
  EXPECT_EQ(RunPass("fold_channel_affine", *Unfused(kChain, caffe::TEST, true))[conv].absorbed, 0);
  EXPECT_EQ(RunPass("fold_channel_affine", *Unfused(kChain, caffe::TRAIN))[conv].absorbed, 0);
}

TEST(PlanPasses, AbsorbScaleTakesTheScaleAfterATrainingBatchNorm) {
  auto net = Unfused(kChain, caffe::TRAIN, true);
  const std::vector<LayerFusion> f = RunPass("absorb_scale", *net);
  EXPECT_EQ(f[Index(*net, "bn")].absorbed, 1);
  EXPECT_FALSE(f[Index(*net, "bn")].channel_affine);
  EXPECT_EQ(f[Index(*net, "conv")].absorbed, 0);  // a convolution cannot
  // An inference BatchNorm (stored statistics) normalises by constants: it
  // does not take the Scale.
  EXPECT_EQ(RunPass("absorb_scale", *Unfused(kChain, caffe::TEST))[Index(*net, "bn")].absorbed, 0);
}

TEST(PlanPasses, FuseReluClampsRightAfterALayerOrAfterWhatItAbsorbed) {
  auto net = Unfused(kChain, caffe::TEST);
  const int conv = Index(*net, "conv"), scale = Index(*net, "scale");
  std::vector<LayerFusion> f = RunPass("fuse_relu", *net);
  EXPECT_TRUE(f[scale].relu);   // the Scale right before the ReLU
  EXPECT_FALSE(f[conv].relu);   // a BatchNorm follows the convolution
  EXPECT_FALSE(f[conv].relu_after_absorbed);
  // After fold_channel_affine, the convolution also clamps past the two.
  PlanPassRegistry::Find("fold_channel_affine")(*net, &f);
  PlanPassRegistry::Find("fuse_relu")(*net, &f);
  EXPECT_TRUE(f[conv].relu_after_absorbed);
  // A leaky ReLU is not a clamp at 0.
  std::string leaky = kChain;
  leaky.replace(leaky.find("top: 'y' }\n  layer { name: 'pool'"), 10,
                "top: 'y' relu_param { negative_slope: 0.1 } }");
  EXPECT_FALSE(RunPass("fuse_relu", *Unfused(leaky, caffe::TEST))[scale].relu);
}

// Whole passes fold; a pass that ends inside a fold, or debug_info, runs
// the layers separately; a backward pass skips what the forward folded.
TEST(ExecutionPlan, StepsFollowThePassRange) {
  Net net(NetFromText(kChain, caffe::TEST), TestContext());
  const ExecutionPlan& plan = net.plan();
  const int conv = Index(net, "conv"), last = static_cast<int>(net.layers().size()) - 1;
  ASSERT_EQ(plan.absorbs_after(conv), 2);
  const std::vector<ForwardStep> whole = plan.ForwardSteps(net, 0, last, false);
  ASSERT_EQ(whole.size(), 3u);  // input, conv (+ bn, scale, relu), pool
  EXPECT_EQ(whole[1].layer, conv);
  EXPECT_EQ(whole[1].absorbed, 2);
  EXPECT_TRUE(whole[1].channel_affine);
  EXPECT_TRUE(whole[1].relu);
  EXPECT_EQ(whole[1].next, Index(net, "pool"));
  EXPECT_EQ(plan.StepOfLayers(net), (std::vector<int>{0, 1, 1, 1, 1, 2}));
  // Ending at the Scale: the fold stays, the ReLU (past the end) is not clamped.
  const std::vector<ForwardStep> to_scale = plan.ForwardSteps(net, 0, Index(net, "scale"), false);
  ASSERT_EQ(to_scale.size(), 2u);
  EXPECT_EQ(to_scale[1].absorbed, 2);
  EXPECT_FALSE(to_scale[1].relu);
  // Ending at the BatchNorm: the fold would reach past it.
  EXPECT_EQ(plan.ForwardSteps(net, 0, Index(net, "bn"), false).size(), 3u);
  EXPECT_EQ(plan.ForwardSteps(net, 0, last, true).size(), net.layers().size());
  for (size_t b = 0; b < net.blobs().size(); ++b)
    EXPECT_EQ(plan.edge(static_cast<int>(b)).storage, StorageType::kFloat32) << net.blob_names()[b];
}

TEST(ExecutionPlan, BackwardSkipsWhatTheLastForwardFolded) {
  caffe::NetParameter param = NetFromText(kChain, caffe::TRAIN);
  param.set_force_backward(true);
  Net net(param, TestContext());
  const int bn = Index(net, "bn"), scale = Index(net, "scale"), relu = Index(net, "relu");
  ASSERT_EQ(net.plan().absorbs_after(bn), 1);
  FillGaussian(net.blob_by_name("x").get(), 0, 1, 5);
  net.Forward();
  EXPECT_TRUE(net.plan().masks_relu_diff_after(bn));  // in place: it masks the ReLU's diff
  const int last = static_cast<int>(net.layers().size()) - 1;
  for (const BackwardStep& step : net.plan().BackwardPass(net, last, 0)) {
    if (step.layer == scale || step.layer == relu) EXPECT_FALSE(step.runs) << step.layer;
    if (step.layer == bn) EXPECT_TRUE(step.runs && step.relu_diff_mask);
  }
  // A backward pass that starts below the ReLU runs it... and the BatchNorm
  // then leaves the diff unmasked.
  for (const BackwardStep& step : net.plan().BackwardPass(net, scale, 0))
    if (step.layer == bn) EXPECT_FALSE(step.relu_diff_mask);
  // Set off on the net, fusion leaves every layer to itself.
  RunOptions separate = net.options();
  separate.fusion = false;
  net.set_options(separate);
  EXPECT_EQ(net.plan().absorbs_after(bn), 0);
  EXPECT_FALSE(net.plan().fuses_relu_after(scale));
}

// The plan decides each layer's choices from the net's options: a net given
// other options re-decides them (Net::set_options) and its layers follow,
// not only its fusions. A convolution that ran im2col with plane kernels
// runs Winograd with GPU-shaped kernels once told so, to the same outputs
// within Winograd's rounding, and back again to the same bits.
TEST(ExecutionPlan, SetOptionsReDecidesEveryLayersChoices) {
  const std::string text = R"(
    layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 2 dim: 16 dim: 9 dim: 7 } } }
    layer { name: 'conv' type: 'Convolution' bottom: 'x' top: 'y'
            convolution_param { num_output: 16 kernel_size: 3 pad: 1
                                weight_filler { type: 'gaussian' std: 0.1 } } }
    layer { name: 'bn' type: 'BatchNorm' bottom: 'y' top: 'z' })";
  SetTestOption("kernel_shape", "cpu");
  SetTestOption("winograd", "off");
  SetTestOption("implicit_gemm", "off");
  Net net(NetFromText(text, caffe::TEST), TestContext());
  ResetTestOption("kernel_shape");
  ResetTestOption("winograd");
  ResetTestOption("implicit_gemm");
  const Layer& conv = *net.layers()[Index(net, "conv")];
  EXPECT_TRUE(conv.choices().cpu_shaped_kernels);
  EXPECT_EQ(conv.DescribeAlgorithm(),
            "forward: im2col + GEMM, plane kernels; data gradient: im2col + GEMM, plane kernels");
  FillGaussian(net.input_blobs()[0], 0.f, 1.f, 7);
  net.Forward();
  const std::vector<float> direct = net.blob_by_name("y")->ReadData();

  RunOptions winograd = net.options();
  winograd.kernel_shape = RunOptions::KernelShape::kGpu;
  winograd.winograd = RunOptions::Choice::kOn;
  net.set_options(winograd);
  for (const auto& layer : net.layers()) {
    EXPECT_FALSE(layer->choices().cpu_shaped_kernels) << layer->name();
    EXPECT_EQ(layer->choices().winograd, RunOptions::Choice::kOn) << layer->name();
  }
  EXPECT_EQ(conv.DescribeAlgorithm(),
            "forward: Winograd F(4x4, 3x3); data gradient: Winograd F(4x4, 3x3)");
  net.Forward();
  const std::vector<float> by_winograd = net.blob_by_name("y")->ReadData();
  ASSERT_EQ(by_winograd.size(), direct.size());
  float largest = 0.f, worst = 0.f;
  for (size_t i = 0; i < direct.size(); ++i) {
    largest = std::max(largest, std::fabs(direct[i]));
    worst = std::max(worst, std::fabs(by_winograd[i] - direct[i]));
  }
  EXPECT_GT(worst, 0.f);  // another summation: the algorithm did change
  EXPECT_LT(worst, 1e-4f * largest);

  RunOptions back = winograd;
  back.kernel_shape = RunOptions::KernelShape::kCpu;
  back.winograd = RunOptions::Choice::kOff;
  net.set_options(back);
  EXPECT_TRUE(conv.choices().cpu_shaped_kernels);
  net.Forward();
  EXPECT_EQ(net.blob_by_name("y")->ReadData(), direct);
}

// Net::Explain: a line per step of a forward pass, with what each step
// stands for and how its blobs are stored.
TEST(ExecutionPlan, ExplainSaysWhatEachStepRuns) {
  Net net(NetFromText(kChain, caffe::TEST), TestContext());
  const std::string text = net.Explain();
  EXPECT_NE(text.find("step 1: 'conv' (Convolution) folds 'bn' 'scale' as a channel affine, "
                      "clamps for 'relu'"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("in float32 -> out float32; "), std::string::npos) << text;
  EXPECT_NE(text.find("step 2: 'pool' (Pooling)"), std::string::npos) << text;
  EXPECT_EQ(text.find("step 3"), std::string::npos) << text;
  RunOptions separate = net.options();
  separate.fusion = false;
  net.set_options(separate);
  const std::string unfused = net.Explain();
  EXPECT_NE(unfused.find("(fusion off)"), std::string::npos) << unfused;
  EXPECT_NE(unfused.find("step 5: 'pool' (Pooling)"), std::string::npos) << unfused;
}

// Net::ExplainWithProducts: under each step, the GEMM products it ran, as
// the layer's choices made them: the net's kernel shape, whatever the
// context's, and the matrix-engine switches its options give.
TEST(ExecutionPlan, ExplainWithProductsShowsEachStepsProductsUnderItsChoices) {
  const char kProduct[] = R"(
    layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 3 dim: 7 } } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'y'
            inner_product_param { num_output: 5 weight_filler { type: 'gaussian' std: 1 } } }
    layer { name: 'softmax' type: 'Softmax' bottom: 'y' top: 'p' })";
  Net net(NetFromText(kProduct, caffe::TEST), TestContext());
  net.blob_by_name("x")->WriteData(std::vector<float>(3 * 7, 1.f));
  for (const bool cpu : {true, false}) {
    RunOptions options = net.options();
    options.kernel_shape = cpu ? RunOptions::KernelShape::kCpu : RunOptions::KernelShape::kGpu;
    options.matrix_engine = !cpu;
    net.set_options(options);
    const std::string text = net.ExplainWithProducts();
    // M = the batch, N = the outputs, K = the inputs; float32 math: the
    // float kernels, a dot-product register kernel in the CPU shape (B^T).
    const std::string product = std::string("    product 3x5x7 float (") +
                                (cpu ? "register-dot" : "local wg");
    const size_t at = text.find(product);
    EXPECT_NE(at, std::string::npos) << text;
    EXPECT_EQ(text.find("    product", at + 1), std::string::npos) << text;  // softmax: none
    EXPECT_LT(text.find("step 1: 'ip'"), at) << text;
    EXPECT_EQ(text.find("no matrix engine") != std::string::npos, cpu) << text;
    EXPECT_EQ(net.Explain().find("    product"), std::string::npos);
  }
}

// Every layer's generated kernels and products take the kernel shape its
// net's options give, not its context's: a net of the layers that launch
// pointwise, reduction, channel-sum and GEMM kernels, run forward and
// backward on a context of the other shape, launches no kernel built for
// the context's. (A layer that left its shape to the context would.)
TEST(ExecutionPlan, EveryLayersKernelsTakeTheNetsShapeNotTheContexts) {
  Context ctx(TestContext().info(), TestContext().options());
  ctx.EnableKernelProfile();
  const bool context_cpu = ctx.cpu_shaped_kernels();
  const char kLayers[] = R"(
    layer { name: 'in' type: 'Input' top: 'x' top: 'label'
            input_param { shape { dim: 2 dim: 3 dim: 6 dim: 5 } shape { dim: 2 } } }
    layer { name: 'conv' type: 'Convolution' bottom: 'x' top: 'c'
            convolution_param { num_output: 4 kernel_size: 3 pad: 1
                                weight_filler { type: 'gaussian' std: 0.3 } } }
    layer { name: 'bn' type: 'BatchNorm' bottom: 'c' top: 'bn' }
    layer { name: 'scale' type: 'Scale' bottom: 'bn' top: 's' scale_param { bias_term: true } }
    layer { name: 'prelu' type: 'PReLU' bottom: 's' top: 'p' }
    layer { name: 'sigmoid' type: 'Sigmoid' bottom: 'p' top: 'g' }
    layer { name: 'tanh' type: 'TanH' bottom: 'p' top: 't' }
    layer { name: 'sum' type: 'Eltwise' bottom: 'g' bottom: 't' top: 'e' }
    layer { name: 'elu' type: 'ELU' bottom: 'e' top: 'u' }
    layer { name: 'power' type: 'Power' bottom: 'u' top: 'w' power_param { power: 2 shift: 1 } }
    layer { name: 'bias' type: 'Bias' bottom: 'w' top: 'b' param { lr_mult: 1 }
            bias_param { filler { type: 'gaussian' std: 0.3 } } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'b' top: 'ip'
            inner_product_param { num_output: 5 weight_filler { type: 'gaussian' std: 0.3 } } }
    layer { name: 'relu' type: 'ReLU' bottom: 'ip' top: 'r' }
    layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'r' bottom: 'label' top: 'loss' })";
  Net net(NetFromText(kLayers, caffe::TRAIN), ctx);
  RunOptions other = net.options();
  other.kernel_shape = context_cpu ? RunOptions::KernelShape::kGpu : RunOptions::KernelShape::kCpu;
  net.set_options(other);
  std::vector<float> x(2 * 3 * 6 * 5);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.7f * i);
  net.blob_by_name("x")->WriteData(x);
  net.blob_by_name("label")->WriteData({1.f, 3.f});
  ctx.kernel_profile()->Collect();  // only the passes count
  net.Forward();
  net.Backward();
  const std::vector<KernelTime> kernels = ctx.kernel_profile()->Collect();
  const std::string context_shape =
      std::string("-DPW_CPU_SHAPE=") + (context_cpu ? "1" : "0");
  int generated = 0;
  for (const KernelTime& k : kernels) {
    if (k.label.find("-DPW_CPU_SHAPE=") != std::string::npos) ++generated;
    EXPECT_EQ(k.label.find(context_shape), std::string::npos) << k.label;
    // GPU-shaped products tile in __local memory (gemm_tiled.cl); a CPU
    // context's register kernels would be the context's shape.
    if (context_cpu) {
      EXPECT_EQ(k.label.find("-DUSE_LOCAL=0"), std::string::npos) << k.label;
    }
  }
  EXPECT_GT(generated, 10);  // the net did launch generated kernels
  EXPECT_TRUE(std::isfinite(net.blob_by_name("loss")->ReadData()[0]));
}

// RunOptions::graph_passes on: a prototxt gets the description rewrites an
// ONNX import gets (an InnerProduct takes the Bias after it; the ReLU goes in
// place), with the same outputs.
TEST(GraphPasses, APrototxtThatOptsInIsRewrittenWithTheSameOutputs) {
  const std::string text = R"(
    layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 3 dim: 5 } } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'h'
            inner_product_param { num_output: 4 bias_term: false
                                  weight_filler { type: 'gaussian' std: 1 } } }
    layer { name: 'bias' type: 'Bias' bottom: 'h' top: 'b' param { lr_mult: 1 }
            bias_param { filler { type: 'gaussian' std: 1 } } }
    layer { name: 'relu' type: 'ReLU' bottom: 'b' top: 'y' })";
  Net as_written(NetFromText(text, caffe::TEST), TestContext());
  SetTestOption("graph_passes", "on");
  caffe::NetParameter with_weights;
  as_written.ToProto(&with_weights);  // the weights travel in the description
  with_weights.mutable_state()->set_phase(caffe::TEST);
  Net rewritten(with_weights, TestContext());
  ResetTestOption("graph_passes");
  EXPECT_EQ(as_written.layers().size(), 4u);
  EXPECT_EQ(rewritten.layers().size(), 3u);  // input, ip (+ bias), relu
  EXPECT_FALSE(rewritten.has_blob("h"));  // the product before the bias
  FillGaussian(as_written.blob_by_name("x").get(), 0, 1, 3);
  rewritten.blob_by_name("x")->WriteData(as_written.blob_by_name("x")->ReadData());
  as_written.Forward();
  rewritten.Forward();
  const std::vector<float> a = as_written.blob_by_name("y")->ReadData();
  const std::vector<float> b = rewritten.blob_by_name("y")->ReadData();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5f * (1 + std::fabs(a[i])));
  // Left at auto, a prototxt is built as written.
  Net automatic(with_weights, TestContext());
  EXPECT_EQ(automatic.layers().size(), 4u);
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
