// Net: rules, wiring, in-place layers, fan-out gradient accumulation, shared
// parameters, loss weights and the .caffemodel round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "dlcaffe/io.hpp"
#include "dlcaffe/net.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"
#include "../../src/core/execution_plan.hpp"

namespace dlcaffe {
namespace test {

namespace {

std::vector<std::string> KeptLayers(const std::string& text, const caffe::NetState& state) {
  caffe::NetParameter param;
  ReadProtoFromTextString(text, "<test net>", &param);
  *param.mutable_state() = state;
  caffe::NetParameter filtered;
  Net::FilterNet(param, &filtered);
  std::vector<std::string> names;
  for (const auto& l : filtered.layer()) names.push_back(l.name());
  return names;
}

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// y_r = W x_r + b for a row-major W (n_out x n_in).
std::vector<float> Affine(const std::vector<float>& W, const std::vector<float>& b,
                          const std::vector<float>& x, int rows, int n_in, int n_out) {
  std::vector<float> y(rows * n_out);
  for (int r = 0; r < rows; ++r)
    for (int o = 0; o < n_out; ++o) {
      double acc = b.empty() ? 0.0 : b[o];
      for (int i = 0; i < n_in; ++i) acc += double(W[o * n_in + i]) * x[r * n_in + i];
      y[r * n_out + o] = static_cast<float>(acc);
    }
  return y;
}

}  // namespace

TEST(NetRules, PhaseLevelAndStageRulesSelectLayers) {
  const std::string net = R"(
    layer { name: 'always' type: 'Input' top: 'a' input_param { shape { dim: 1 } } }
    layer { name: 'train' type: 'Input' top: 'b' include { phase: TRAIN } }
    layer { name: 'test' type: 'Input' top: 'c' include { phase: TEST } }
    layer { name: 'not_test' type: 'Input' top: 'd' exclude { phase: TEST } }
    layer { name: 'level2' type: 'Input' top: 'e' include { min_level: 2 } }
    layer { name: 'upto1' type: 'Input' top: 'f' include { max_level: 1 } }
    layer { name: 'deploy' type: 'Input' top: 'g' include { stage: 'deploy' } }
    layer { name: 'both' type: 'Input' top: 'h' include { stage: 'x' stage: 'y' } }
    layer { name: 'not_x' type: 'Input' top: 'i' include { not_stage: 'x' } }
    layer { name: 'either' type: 'Input' top: 'j' include { stage: 'x' } include { stage: 'deploy' } }
  )";
  caffe::NetState train;
  train.set_phase(caffe::TRAIN);
  EXPECT_EQ(KeptLayers(net, train),
            (std::vector<std::string>{"always", "train", "not_test", "upto1", "not_x"}));
  caffe::NetState test;
  test.set_phase(caffe::TEST);
  test.set_level(2);
  test.add_stage("deploy");
  EXPECT_EQ(KeptLayers(net, test),
            (std::vector<std::string>{"always", "test", "level2", "deploy", "not_x", "either"}));
  caffe::NetState xy;
  xy.set_phase(caffe::TRAIN);
  xy.add_stage("x");
  xy.add_stage("y");
  EXPECT_EQ(KeptLayers(net, xy),
            (std::vector<std::string>{"always", "train", "not_test", "upto1", "both", "either"}));
}

TEST(NetRules, IncludeAndExcludeTogetherIsAnError) {
  const std::string net =
      "layer { name: 'odd' type: 'Input' top: 'a' include { phase: TRAIN } exclude { phase: TEST } }";
  caffe::NetState state;
  EXPECT_NE(ErrorOf([&] { KeptLayers(net, state); }).find("'odd'"), std::string::npos);
}

TEST(NetErrors, UnknownBottomNamesLayerAndBlob) {
  const std::string what = ErrorOf([] {
    Net net(NetFromText(R"(
      layer { name: 'in' type: 'Input' top: 'data' input_param { shape { dim: 2 dim: 3 } } }
      layer { name: 'relu' type: 'ReLU' bottom: 'dta' top: 'r' })"),
            TestContext());
  });
  EXPECT_NE(what.find("'relu'"), std::string::npos) << what;
  EXPECT_NE(what.find("'dta'"), std::string::npos) << what;
}

TEST(NetErrors, UnknownLayerTypeListsKnownTypes) {
  const std::string what = ErrorOf([] {
    Net net(NetFromText(R"(
      layer { name: 'in' type: 'Input' top: 'data' input_param { shape { dim: 2 } } }
      layer { name: 'bad' type: 'ReLu' bottom: 'data' top: 'r' })"),
            TestContext());
  });
  EXPECT_NE(what.find("'ReLu'"), std::string::npos) << what;
  EXPECT_NE(what.find("ReLU"), std::string::npos) << what;  // among the known types
  EXPECT_NE(what.find("InnerProduct"), std::string::npos) << what;
}

TEST(NetErrors, CaffeLayersNotProvidedYetSaySo) {
  const std::string what = ErrorOf([&] {
    Net net(NetFromText("layer { name: 'win' type: 'WindowData' top: 'data' }"), TestContext());
  });
  EXPECT_NE(what.find("'win'"), std::string::npos) << what;
  EXPECT_NE(what.find("WindowData layer is not supported yet"), std::string::npos) << what;
}

// Outside Python (this program, the tools) no "Python" type is registered.
TEST(NetErrors, PythonLayersOutsidePythonSayWhereTheyRun) {
  const std::string what = ErrorOf([&] {
    Net net(NetFromText("layer { name: 'py' type: 'Python' top: 'data' }"), TestContext());
  });
  EXPECT_NE(what.find("'py'"), std::string::npos) << what;
  EXPECT_NE(what.find("built from Python (import caffe"), std::string::npos) << what;
}

TEST(NetErrors, ShapeMismatchNamesLayerAndShapes) {
  const std::string what = ErrorOf([] {
    Net net(NetFromText(R"(
      layer { name: 'in' type: 'Input' top: 'a' top: 'b'
              input_param { shape { dim: 4 dim: 3 } shape { dim: 4 dim: 5 } } }
      layer { name: 'l2' type: 'EuclideanLoss' bottom: 'a' bottom: 'b' top: 'loss' })"),
            TestContext());
  });
  EXPECT_NE(what.find("'l2'"), std::string::npos) << what;
  EXPECT_NE(what.find("4 3"), std::string::npos) << what;
  EXPECT_NE(what.find("4 5"), std::string::npos) << what;
}

TEST(NetErrors, MalformedPrototxtNamesLineAndColumn) {
  const std::string path = TempDir() + "/bad.prototxt";
  WriteFileAtomically(path, "name: 'x'\nlayer {\n  name: 'a'\n  typo: 'Input'\n}\n");
  const std::string what = ErrorOf([&] { Net net(path, caffe::TRAIN, TestContext()); });
  EXPECT_NE(what.find(path + ":4:"), std::string::npos) << what;
  EXPECT_NE(what.find("typo"), std::string::npos) << what;
}

TEST(Net, InPlaceLayerReusesItsBottomBlob) {
  Net net(NetFromText(R"(
    layer { name: 'in' type: 'Input' top: 'data' input_param { shape { dim: 2 dim: 3 } } }
    layer { name: 'relu' type: 'ReLU' bottom: 'data' top: 'data' })"),
          TestContext());
  EXPECT_EQ(net.blobs().size(), 1u);
  EXPECT_EQ(net.top_vecs()[1][0], net.bottom_vecs()[1][0]);
  Blob& data = *net.blob_by_name("data");
  data.WriteData({-1, 2, -3, 4, -5, 6});
  net.ForwardNoLoss();
  EXPECT_EQ(data.ReadData(), (std::vector<float>{0, 2, 0, 4, 0, 6}));
  ASSERT_EQ(net.output_blobs().size(), 1u);
  EXPECT_EQ(net.output_blobs()[0], &data);
}

TEST(Net, DeprecatedInputFieldsBecomeAnInputLayer) {
  Net net(NetFromText(R"(
    input: 'data' input_dim: 2 input_dim: 3 input_dim: 5 input_dim: 7
    layer { name: 'relu' type: 'ReLU' bottom: 'data' top: 'out' })"),
          TestContext());
  EXPECT_EQ(net.blob_by_name("data")->shape(), (std::vector<int>{2, 3, 5, 7}));
  EXPECT_EQ(net.input_blobs().size(), 1u);
}

// x feeds two InnerProducts whose outputs go to two losses: x's gradient is
// the sum of both paths (through the inserted Split layer).
TEST(Net, FanOutAccumulatesGradients) {
  const int N = 3, D = 5, O1 = 2, O2 = 4;
  Net net(NetFromText(R"(
    force_backward: true
    layer { name: 'in' type: 'Input' top: 'x' top: 't1' top: 't2'
            input_param { shape { dim: 3 dim: 5 } shape { dim: 3 dim: 2 } shape { dim: 3 dim: 4 } } }
    layer { name: 'ip1' type: 'InnerProduct' bottom: 'x' top: 'y1'
            inner_product_param { num_output: 2 weight_filler { type: 'gaussian' std: 1 }
                                  bias_filler { type: 'gaussian' std: 1 } } }
    layer { name: 'ip2' type: 'InnerProduct' bottom: 'x' top: 'y2'
            inner_product_param { num_output: 4 weight_filler { type: 'gaussian' std: 1 } } }
    layer { name: 'loss1' type: 'EuclideanLoss' bottom: 'y1' bottom: 't1' top: 'l1' }
    layer { name: 'loss2' type: 'EuclideanLoss' bottom: 'y2' bottom: 't2' top: 'l2'
            loss_weight: 0.5 })"),
          TestContext());
  bool has_split = false;
  for (const auto& name : net.layer_names()) has_split |= name.find("_split") != std::string::npos;
  EXPECT_TRUE(has_split);

  FillGaussian(net.blob_by_name("x").get(), 0, 1, 1);
  FillGaussian(net.blob_by_name("t1").get(), 0, 1, 2);
  FillGaussian(net.blob_by_name("t2").get(), 0, 1, 3);
  const float loss = net.ForwardBackward();

  std::vector<float> x = net.blob_by_name("x")->ReadData();
  std::vector<float> t1 = net.blob_by_name("t1")->ReadData();
  std::vector<float> t2 = net.blob_by_name("t2")->ReadData();
  std::vector<float> W1 = net.layer_by_name("ip1")->blobs()[0]->ReadData();
  std::vector<float> b1 = net.layer_by_name("ip1")->blobs()[1]->ReadData();
  std::vector<float> W2 = net.layer_by_name("ip2")->blobs()[0]->ReadData();
  std::vector<float> b2 = net.layer_by_name("ip2")->blobs()[1]->ReadData();
  std::vector<float> y1 = Affine(W1, b1, x, N, D, O1), y2 = Affine(W2, b2, x, N, D, O2);
  double expected_loss = 0;
  std::vector<double> dx(N * D, 0.0);
  for (int r = 0; r < N; ++r) {
    for (int o = 0; o < O1; ++o) {
      const double d = y1[r * O1 + o] - t1[r * O1 + o];
      expected_loss += d * d / (2.0 * N);
      for (int i = 0; i < D; ++i) dx[r * D + i] += d / N * W1[o * D + i];
    }
    for (int o = 0; o < O2; ++o) {
      const double d = y2[r * O2 + o] - t2[r * O2 + o];
      expected_loss += 0.5 * d * d / (2.0 * N);
      for (int i = 0; i < D; ++i) dx[r * D + i] += 0.5 * d / N * W2[o * D + i];
    }
  }
  EXPECT_NEAR(loss, expected_loss, 1e-4 * std::max(1.0, expected_loss));
  std::vector<float> got = net.blob_by_name("x")->ReadDiff();
  for (int i = 0; i < N * D; ++i) EXPECT_NEAR(got[i], dx[i], 1e-4) << "element " << i;
}

// A layer + the in-place ReLU after it run as one kernel: the top must equal
// max(0, layer output) (what a pass ending at the layer computes) and the
// gradients must equal those of the separate layers. The producer is layer 1
// of `text`, named `producer`, with two parameter blobs.
void CheckReluFusion(const std::string& text, const std::string& producer) {
  SCOPED_TRACE(producer);
  Net fused(NetFromText(text), TestContext());
  SetTestOption("fusion", "off");
  Net separate(NetFromText(text), TestContext());
  ResetTestOption("fusion");
  ASSERT_TRUE(fused.plan().fuses_relu_after(1));
  ASSERT_FALSE(separate.plan().fuses_relu_after(1));
  for (int p = 0; p < 2; ++p)
    separate.layer_by_name(producer)->blobs()[p]->WriteData(
        fused.layer_by_name(producer)->blobs()[p]->ReadData());
  for (Net* net : {&fused, &separate}) {
    FillGaussian(net->blob_by_name("x").get(), 0, 1, 7);
    FillGaussian(net->blob_by_name("t").get(), 0, 1, 8);
  }

  fused.ForwardFromTo(0, 1);  // the producer alone
  const std::vector<float> pre_relu = fused.blob_by_name("y")->ReadData();
  const float loss = fused.ForwardBackward();
  const std::vector<float> y = fused.blob_by_name("y")->ReadData();
  int negatives = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    negatives += pre_relu[i] < 0;
    ASSERT_EQ(y[i], std::max(pre_relu[i], 0.f)) << "element " << i;
  }
  EXPECT_GT(negatives, 10);  // the clamp had work to do

  EXPECT_NEAR(separate.ForwardBackward(), loss, 1e-5 * std::max(1.f, loss));
  const std::vector<float> dx = fused.blob_by_name("x")->ReadDiff(),
                           dx_ref = separate.blob_by_name("x")->ReadDiff();
  for (size_t i = 0; i < dx.size(); ++i) EXPECT_NEAR(dx[i], dx_ref[i], 1e-5) << "x diff " << i;
  for (int p = 0; p < 2; ++p) {
    const std::vector<float> dw = fused.layer_by_name(producer)->blobs()[p]->ReadDiff(),
                             dw_ref = separate.layer_by_name(producer)->blobs()[p]->ReadDiff();
    for (size_t i = 0; i < dw.size(); ++i)
      EXPECT_NEAR(dw[i], dw_ref[i], 1e-4) << "param " << p << " diff " << i;
  }
}

TEST(Net, ConvolutionFusesTheInPlaceReluAfterIt) {
  CheckReluFusion(R"(
    force_backward: true
    layer { name: 'in' type: 'Input' top: 'x' top: 't'
            input_param { shape { dim: 2 dim: 3 dim: 5 dim: 7 } shape { dim: 2 dim: 4 dim: 5 dim: 7 } } }
    layer { name: 'conv' type: 'Convolution' bottom: 'x' top: 'y'
            convolution_param { num_output: 4 kernel_size: 3 pad: 1
                                weight_filler { type: 'gaussian' std: 0.5 }
                                bias_filler { type: 'gaussian' std: 0.5 } } }
    layer { name: 'relu' type: 'ReLU' bottom: 'y' top: 'y' }
    layer { name: 'loss' type: 'EuclideanLoss' bottom: 'y' bottom: 't' top: 'l' })",
                  "conv");
}

// ResNet's BatchNorm -> Scale -> ReLU: the Scale (in place, with its bias)
// applies the ReLU.
TEST(Net, ScaleFusesTheInPlaceReluAfterIt) {
  CheckReluFusion(R"(
    force_backward: true
    layer { name: 'in' type: 'Input' top: 'x' top: 't'
            input_param { shape { dim: 3 dim: 4 dim: 5 dim: 3 } shape { dim: 3 dim: 4 dim: 5 dim: 3 } } }
    layer { name: 'scale' type: 'Scale' bottom: 'x' top: 'y'
            scale_param { bias_term: true filler { type: 'gaussian' std: 1 }
                          bias_filler { type: 'gaussian' std: 1 } } }
    layer { name: 'relu' type: 'ReLU' bottom: 'y' top: 'y' }
    layer { name: 'loss' type: 'EuclideanLoss' bottom: 'y' bottom: 't' top: 'l' })",
                  "scale");
}

// ResNet's residual sum and the ReLU after it.
TEST(Net, EltwiseSumFusesTheInPlaceReluAfterIt) {
  const std::string text = R"(
    force_backward: true
    layer { name: 'in' type: 'Input' top: 'a' top: 'b' top: 't'
            input_param { shape { dim: 3 dim: 4 dim: 5 dim: 3 } shape { dim: 3 dim: 4 dim: 5 dim: 3 }
                          shape { dim: 3 dim: 4 dim: 5 dim: 3 } } }
    layer { name: 'sum' type: 'Eltwise' bottom: 'a' bottom: 'b' top: 'y'
            eltwise_param { coeff: 1 coeff: -0.5 } }
    layer { name: 'relu' type: 'ReLU' bottom: 'y' top: 'y' }
    layer { name: 'loss' type: 'EuclideanLoss' bottom: 'y' bottom: 't' top: 'l' })";
  Net fused(NetFromText(text), TestContext());
  SetTestOption("fusion", "off");
  Net separate(NetFromText(text), TestContext());
  ResetTestOption("fusion");
  ASSERT_TRUE(fused.plan().fuses_relu_after(1));
  ASSERT_FALSE(separate.plan().fuses_relu_after(1));
  for (Net* net : {&fused, &separate}) {
    FillGaussian(net->blob_by_name("a").get(), 0, 1, 7);
    FillGaussian(net->blob_by_name("b").get(), 0, 1, 9);
    FillGaussian(net->blob_by_name("t").get(), 0, 1, 8);
  }
  const std::vector<float> a = fused.blob_by_name("a")->ReadData(),
                           b = fused.blob_by_name("b")->ReadData();
  const float loss = fused.ForwardBackward();
  EXPECT_NEAR(separate.ForwardBackward(), loss, 1e-5 * std::max(1.f, loss));
  const std::vector<float> y = fused.blob_by_name("y")->ReadData();
  int clamped = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const float sum = a[i] - 0.5f * b[i];
    clamped += sum <= 0.f;
    ASSERT_FLOAT_EQ(y[i], std::max(sum, 0.f)) << "element " << i;
  }
  EXPECT_GT(clamped, 20);
  for (const char* blob : {"a", "b", "y"}) {
    const std::vector<float> d = fused.blob_by_name(blob)->ReadDiff(),
                             d_ref = separate.blob_by_name(blob)->ReadDiff();
    for (size_t i = 0; i < d.size(); ++i) ASSERT_EQ(d[i], d_ref[i]) << blob << " diff " << i;
  }
}

// Inference: a Convolution absorbs the BatchNorm (stored statistics) and
// Scale in place after it, and the ReLU after those, as one per-channel
// affine in its GEMM. Compared with the same net run layer by layer
// (DLCAFFE_FUSION=off), over the whole net and over ranges that end inside
// the chain, and again after the statistics change.
const char* kConvBatchNormNet = R"(
    layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 2 dim: 3 dim: 7 dim: 5 } } }
    layer { name: 'conv' type: 'Convolution' bottom: 'x' top: 'y'
            convolution_param { num_output: 5 kernel_size: 3 pad: 1 BIAS
                                weight_filler { type: 'gaussian' std: 0.5 }
                                bias_filler { type: 'gaussian' std: 0.5 } } }
    layer { name: 'bn' type: 'BatchNorm' bottom: 'y' top: 'y' batch_norm_param { eps: 0.5 BN } }
    SCALE
    layer { name: 'relu' type: 'ReLU' bottom: 'y' top: 'y' }
    layer { name: 'pool' type: 'Pooling' bottom: 'y' top: 'p'
            pooling_param { pool: AVE kernel_size: 2 stride: 2 } })";

std::string ConvBatchNormNet(const std::string& bias, const std::string& bn,
                             const std::string& scale) {
  std::string text = kConvBatchNormNet;
  for (const auto& r : {std::make_pair(std::string("BIAS"), bias), std::make_pair(std::string("BN"), bn),
                        std::make_pair(std::string("SCALE"), scale)})
    text.replace(text.find(r.first), r.first.size(), r.second);
  return text;
}

// Random statistics (factor 0.5 and eps 0.5, so that both matter) and Scale
// parameters, the same in both nets.
void RandomizeParameters(Net* folded, Net* separate, unsigned seed) {
  for (const auto& name : {"conv", "bn", "scale"}) {
    if (!folded->has_layer(name)) continue;
    auto& blobs = folded->layer_by_name(name)->blobs();
    for (size_t p = 0; p < blobs.size(); ++p) {
      if (std::string(name) == "bn") {
        if (p == 1) FillUniform(blobs[p].get(), 0.1f, 2.f, seed + p);
        else if (p == 0) FillGaussian(blobs[p].get(), 0, 1, seed + p);
        else blobs[p]->WriteData(std::vector<float>{0.5f});
      } else {
        FillGaussian(blobs[p].get(), 0, 1, seed + 10 * p);
      }
      separate->layer_by_name(name)->blobs()[p]->WriteData(blobs[p]->ReadData());
    }
  }
}

void ExpectSameBlob(Net& a, Net& b, const std::string& name) {
  const std::vector<float> x = a.blob_by_name(name)->ReadData(), y = b.blob_by_name(name)->ReadData();
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_NEAR(x[i], y[i], 2e-5 * (1 + std::fabs(y[i]))) << name << " element " << i;
}

void CheckChannelAffineFold(const std::string& text, int absorbed, bool relu) {
  Net folded(NetFromText(text, caffe::TEST), TestContext());
  SetTestOption("fusion", "off");
  Net separate(NetFromText(text, caffe::TEST), TestContext());
  ResetTestOption("fusion");
  ASSERT_EQ(folded.plan().absorbs_after(1), absorbed);
  ASSERT_EQ(separate.plan().absorbs_after(1), 0);
  for (Net* net : {&folded, &separate}) FillGaussian(net->blob_by_name("x").get(), 0, 1, 7);
  const int last = static_cast<int>(folded.layers().size()) - 1;
  for (unsigned round = 0; round < 2; ++round) {  // the statistics change in between
    RandomizeParameters(&folded, &separate, 100 * round + 1);
    folded.ForwardFromTo(0, last);
    separate.ForwardFromTo(0, last);
    ExpectSameBlob(folded, separate, "p");
    ExpectSameBlob(folded, separate, "y");
    if (relu) {
      int negatives = 0;
      for (float v : separate.blob_by_name("y")->ReadData()) negatives += v == 0.f;
      EXPECT_GT(negatives, 5);  // the clamp had work to do
    }
  }
  // Ranges ending inside the chain run the layers as written.
  for (int end = 1; end <= 1 + absorbed; ++end) {
    SCOPED_TRACE("forward to layer " + std::to_string(end));
    folded.ForwardFromTo(0, end);
    separate.ForwardFromTo(0, end);
    ExpectSameBlob(folded, separate, "y");
  }
}

TEST(Net, InferenceFoldsBatchNormScaleAndReluIntoTheConvolution) {
  CheckChannelAffineFold(
      ConvBatchNormNet("", "", R"(layer { name: 'scale' type: 'Scale' bottom: 'y' top: 'y'
                                       scale_param { bias_term: true } })"),
      2, true);
}

TEST(Net, InferenceFoldsIntoAWinogradConvolution) {
  SetTestOption("winograd", "on");  // read at each Reshape
  CheckChannelAffineFold(
      ConvBatchNormNet("", "", R"(layer { name: 'scale' type: 'Scale' bottom: 'y' top: 'y'
                                       scale_param { bias_term: true } })"),
      2, true);
  ResetTestOption("winograd");
}

TEST(Net, InferenceFoldsABatchNormWithoutScaleIntoAConvolutionWithoutBias) {
  CheckChannelAffineFold(ConvBatchNormNet("bias_term: false", "", ""), 1, true);
}

TEST(Net, InferenceFoldsAScaleWithoutBias) {
  CheckChannelAffineFold(
      ConvBatchNormNet("", "", R"(layer { name: 'scale' type: 'Scale' bottom: 'y' top: 'y' })"), 2,
      true);
}

TEST(Net, NoFoldWhereTheBatchNormUsesBatchStatisticsOrBackwardRuns) {
  const std::string scale = R"(layer { name: 'scale' type: 'Scale' bottom: 'y' top: 'y' })";
  Net batch_stats(NetFromText(ConvBatchNormNet("", "use_global_stats: false", scale),
                              caffe::TEST),
                  TestContext());
  EXPECT_EQ(batch_stats.plan().absorbs_after(1), 0);
  Net training(NetFromText(ConvBatchNormNet("", "", scale), caffe::TRAIN), TestContext());
  EXPECT_EQ(training.plan().absorbs_after(1), 0);
  Net backward(NetFromText("force_backward: true " + ConvBatchNormNet("", "", scale), caffe::TEST),
               TestContext());
  EXPECT_EQ(backward.plan().absorbs_after(1), 0);
}

// Training: a BatchNorm (batch statistics) absorbs the Scale in place after
// it (and clamps for the ReLU after that): same loss, tops, gradients of the
// input, the convolution and the Scale, and running statistics as the layers
// run one by one (DLCAFFE_FUSION=off).
void CheckScaleAbsorption(const std::string& text, bool relu, int absorbed = 1) {
  Net fused(NetFromText(text), TestContext());
  SetTestOption("fusion", "off");
  Net separate(NetFromText(text), TestContext());
  ResetTestOption("fusion");
  ASSERT_EQ(fused.plan().absorbs_after(2), absorbed);
  ASSERT_EQ(separate.plan().absorbs_after(2), 0);
  for (const char* name : {"conv", "scale"}) {
    auto& blobs = fused.layer_by_name(name)->blobs();
    for (size_t p = 0; p < blobs.size(); ++p) {
      FillGaussian(blobs[p].get(), 0.5f, 1, 31 + p);
      separate.layer_by_name(name)->blobs()[p]->WriteData(blobs[p]->ReadData());
    }
  }
  for (Net* net : {&fused, &separate}) {
    FillGaussian(net->blob_by_name("x").get(), 0, 1, 7);
    FillGaussian(net->blob_by_name("t").get(), 0, 1, 8);
  }
  for (int pass = 0; pass < 2; ++pass) {  // the running statistics accumulate
    for (Net* net : {&fused, &separate}) net->ClearParamDiffs();
    const float loss = fused.ForwardBackward();
    EXPECT_NEAR(separate.ForwardBackward(), loss, 1e-5 * std::max(1.f, loss));
    ExpectSameBlob(fused, separate, "z");
    EXPECT_EQ(fused.plan().masks_relu_diff_after(2), relu && absorbed > 0);
    if (relu) {
      int zeros = 0;
      for (float v : fused.blob_by_name("z")->ReadData()) zeros += v == 0.f;
      EXPECT_GT(zeros, 5);  // the clamp had work to do
    }
    // Every blob's diff, the chain's included, ends as in the unfused net
    // (the inputs take none).
    for (const std::string& blob : fused.blob_names()) {
      if (blob == "x" || blob == "t") continue;
      const std::vector<float> d = fused.blob_by_name(blob)->ReadDiff(),
                               d_ref = separate.blob_by_name(blob)->ReadDiff();
      for (size_t i = 0; i < d.size(); ++i)
        ASSERT_NEAR(d[i], d_ref[i], 1e-4 * (1 + std::fabs(d_ref[i]))) << blob << " diff " << i;
    }
    for (const char* name : {"conv", "scale", "bn"}) {
      const auto& a = fused.layer_by_name(name)->blobs();
      const auto& b = separate.layer_by_name(name)->blobs();
      for (size_t p = 0; p < a.size(); ++p) {
        const std::vector<float> da = a[p]->ReadDiff(), db = b[p]->ReadDiff(),
                                 va = a[p]->ReadData(), vb = b[p]->ReadData();
        for (size_t i = 0; i < da.size(); ++i) {
          ASSERT_NEAR(da[i], db[i], 1e-4 * (1 + std::fabs(db[i])))
              << name << " param " << p << " diff " << i;
          ASSERT_NEAR(va[i], vb[i], 1e-5 * (1 + std::fabs(vb[i])))
              << name << " param " << p << " data " << i;
        }
      }
    }
  }
}

std::string TrainingBatchNormNet(const std::string& bn_top, const std::string& scale_param,
                                 const std::string& relu) {
  return R"(
    layer { name: 'in' type: 'Input' top: 'x' top: 't'
            input_param { shape { dim: 3 dim: 2 dim: 5 dim: 7 } shape { dim: 3 dim: 5 dim: 5 dim: 7 } } }
    layer { name: 'conv' type: 'Convolution' bottom: 'x' top: 'y'
            convolution_param { num_output: 5 kernel_size: 3 pad: 1 } }
    layer { name: 'bn' type: 'BatchNorm' bottom: 'y' top: ')" + bn_top + R"(' }
    layer { name: 'scale' type: 'Scale' bottom: ')" + bn_top + R"(' top: ')" + bn_top + R"(' )" +
         scale_param + R"( }
    )" + relu + R"(
    layer { name: 'out' type: 'Power' bottom: ')" + bn_top + R"(' top: 'z' }
    layer { name: 'loss' type: 'EuclideanLoss' bottom: 'z' bottom: 't' top: 'l' })";
}

TEST(Net, TrainingBatchNormAbsorbsTheScaleAndRelu) {
  CheckScaleAbsorption(
      TrainingBatchNormNet("y", "scale_param { bias_term: true }",
                           "layer { name: 'relu' type: 'ReLU' bottom: 'y' top: 'y' }"),
      true);
}

TEST(Net, TrainingBatchNormAbsorbsAScaleWithoutBiasOrRelu) {
  CheckScaleAbsorption(TrainingBatchNormNet("y", "", ""), false);
}

TEST(Net, TrainingBatchNormAbsorbsAFrozenScale) {
  CheckScaleAbsorption(
      TrainingBatchNormNet("y", "param { lr_mult: 0 } param { lr_mult: 1 } "
                                "scale_param { bias_term: true }",
                           "layer { name: 'relu' type: 'ReLU' bottom: 'y' top: 'y' }"),
      true);
}

// Out of place, the BatchNorm's top would keep the Scale's input gradient as
// its diff in the unfused net: no absorption there.
TEST(Net, TrainingBatchNormOutOfPlaceKeepsItsScale) {
  CheckScaleAbsorption(
      TrainingBatchNormNet("n", "scale_param { bias_term: true }",
                           "layer { name: 'relu' type: 'ReLU' bottom: 'n' top: 'n' }"),
      true, 0);
}

// A BatchNorm in place with an in-place ReLU after it (no Scale) masks the
// ReLU's gradient in its own backward, with batch or stored statistics; the
// ReLU's backward runs only in backward passes that leave the BatchNorm out,
// and the BatchNorm masks only in passes that include the ReLU.
void CheckBatchNormMasksReluDiff(const std::string& bn_param) {
  SCOPED_TRACE(bn_param);
  const std::string text = R"(
    force_backward: true
    layer { name: 'in' type: 'Input' top: 'x' top: 't'
            input_param { shape { dim: 3 dim: 2 dim: 5 dim: 7 } shape { dim: 3 dim: 4 dim: 5 dim: 7 } } }
    layer { name: 'conv' type: 'Convolution' bottom: 'x' top: 'y'
            convolution_param { num_output: 4 kernel_size: 3 pad: 1
                                weight_filler { type: 'gaussian' std: 0.5 }
                                bias_filler { type: 'gaussian' std: 0.5 } } }
    layer { name: 'bn' type: 'BatchNorm' bottom: 'y' top: 'y' )" + bn_param + R"( }
    layer { name: 'relu' type: 'ReLU' bottom: 'y' top: 'y' }
    layer { name: 'out' type: 'Power' bottom: 'y' top: 'z' power_param { scale: 2 } }
    layer { name: 'loss' type: 'EuclideanLoss' bottom: 'z' bottom: 't' top: 'l' })";
  Net fused(NetFromText(text), TestContext());
  SetTestOption("fusion", "off");
  Net separate(NetFromText(text), TestContext());
  ResetTestOption("fusion");
  for (int p = 0; p < 2; ++p)
    separate.layer_by_name("conv")->blobs()[p]->WriteData(
        fused.layer_by_name("conv")->blobs()[p]->ReadData());
  for (Net* net : {&fused, &separate}) {
    FillGaussian(net->blob_by_name("x").get(), 0, 1, 7);
    FillGaussian(net->blob_by_name("t").get(), 0, 1, 8);
  }
  const auto expect_same_diff = [&](const std::string& blob) {
    const std::vector<float> d = fused.blob_by_name(blob)->ReadDiff(),
                             d_ref = separate.blob_by_name(blob)->ReadDiff();
    ASSERT_EQ(d.size(), d_ref.size());
    for (size_t i = 0; i < d.size(); ++i)
      ASSERT_NEAR(d[i], d_ref[i], 1e-5 * (1 + std::fabs(d_ref[i]))) << blob << " diff " << i;
  };
  // The whole pass.
  const float loss = fused.ForwardBackward();
  EXPECT_NEAR(separate.ForwardBackward(), loss, 1e-5 * std::max(1.f, loss));
  EXPECT_TRUE(fused.plan().masks_relu_diff_after(2));
  EXPECT_FALSE(separate.plan().masks_relu_diff_after(2));
  int zeros = 0;
  for (float v : fused.blob_by_name("y")->ReadData()) zeros += v == 0.f;
  EXPECT_GT(zeros, 20);  // the mask had work to do
  expect_same_diff("x");
  expect_same_diff("y");
  // Backward in two ranges split between the ReLU (3) and the BatchNorm (2).
  for (Net* net : {&fused, &separate}) {
    net->ClearParamDiffs();
    net->Forward();
    net->BackwardFromTo(5, 3);
  }
  expect_same_diff("y");  // the ReLU's own backward ran
  for (Net* net : {&fused, &separate}) net->BackwardFromTo(2, 0);
  expect_same_diff("x");  // and the BatchNorm did not mask again
  for (int p = 0; p < 2; ++p) {
    const std::vector<float> dw = fused.layer_by_name("conv")->blobs()[p]->ReadDiff(),
                             dw_ref = separate.layer_by_name("conv")->blobs()[p]->ReadDiff();
    for (size_t i = 0; i < dw.size(); ++i)
      EXPECT_NEAR(dw[i], dw_ref[i], 1e-4 * (1 + std::fabs(dw_ref[i]))) << "conv " << p;
  }
}

TEST(Net, TrainingBatchNormMasksTheReluDiffItself) {
  CheckBatchNormMasksReluDiff("batch_norm_param { use_global_stats: false }");
}

TEST(Net, FrozenBatchNormMasksTheReluDiffItself) {
  CheckBatchNormMasksReluDiff("batch_norm_param { use_global_stats: true }");
}

TEST(Net, SharedParametersShareDataAndAccumulateDiffs) {
  Net net(NetFromText(R"(
    layer { name: 'in' type: 'Input' top: 'a' top: 'b' top: 't'
            input_param { shape { dim: 2 dim: 3 } shape { dim: 2 dim: 3 } shape { dim: 2 dim: 2 } } }
    layer { name: 'ipa' type: 'InnerProduct' bottom: 'a' top: 'ya'
            param { name: 'w' } inner_product_param { num_output: 2 bias_term: false
            weight_filler { type: 'gaussian' std: 1 } } }
    layer { name: 'ipb' type: 'InnerProduct' bottom: 'b' top: 'yb'
            param { name: 'w' } inner_product_param { num_output: 2 bias_term: false
            weight_filler { type: 'gaussian' std: 1 } } }
    layer { name: 'la' type: 'EuclideanLoss' bottom: 'ya' bottom: 't' top: 'loss_a' }
    layer { name: 'lb' type: 'EuclideanLoss' bottom: 'yb' bottom: 't' top: 'loss_b' })"),
          TestContext());
  ASSERT_EQ(net.params().size(), 2u);
  ASSERT_EQ(net.learnable_params().size(), 1u);
  EXPECT_EQ(net.param_owners()[1], 0);
  Blob& wa = *net.layer_by_name("ipa")->blobs()[0];
  Blob& wb = *net.layer_by_name("ipb")->blobs()[0];
  EXPECT_EQ(wa.data(), wb.data());
  EXPECT_EQ(wa.diff(), wb.diff());

  FillGaussian(net.blob_by_name("a").get(), 0, 1, 4);
  FillGaussian(net.blob_by_name("b").get(), 0, 1, 5);
  FillGaussian(net.blob_by_name("t").get(), 0, 1, 6);
  net.ClearParamDiffs();
  net.ForwardBackward();
  std::vector<float> W = wa.ReadData(), a = net.blob_by_name("a")->ReadData(),
                     b = net.blob_by_name("b")->ReadData(), t = net.blob_by_name("t")->ReadData();
  std::vector<float> ya = Affine(W, {}, a, 2, 3, 2), yb = Affine(W, {}, b, 2, 3, 2);
  std::vector<double> dW(6, 0.0);
  for (int r = 0; r < 2; ++r)
    for (int o = 0; o < 2; ++o)
      for (int i = 0; i < 3; ++i)
        dW[o * 3 + i] += (ya[r * 2 + o] - t[r * 2 + o]) / 2.0 * a[r * 3 + i] +
                         (yb[r * 2 + o] - t[r * 2 + o]) / 2.0 * b[r * 3 + i];
  std::vector<float> got = wa.ReadDiff();
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(got[i], dW[i], 1e-4) << "element " << i;
}

TEST(Net, SharedParameterShapeMismatchIsAClearError) {
  const std::string what = ErrorOf([] {
    Net net(NetFromText(R"(
      layer { name: 'in' type: 'Input' top: 'a' input_param { shape { dim: 2 dim: 3 } } }
      layer { name: 'ip1' type: 'InnerProduct' bottom: 'a' top: 'y1' param { name: 'w' }
              inner_product_param { num_output: 2 bias_term: false } }
      layer { name: 'ip2' type: 'InnerProduct' bottom: 'a' top: 'y2' param { name: 'w' }
              inner_product_param { num_output: 3 bias_term: false } })"),
            TestContext());
  });
  EXPECT_NE(what.find("'ip2'"), std::string::npos) << what;
  EXPECT_NE(what.find("'w'"), std::string::npos) << what;
}

TEST(Net, LayersBelowNoLossSkipBackward) {
  Net net(NetFromText(R"(
    layer { name: 'in' type: 'Input' top: 'a' top: 't'
            input_param { shape { dim: 2 dim: 3 } shape { dim: 2 dim: 2 } } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'a' top: 'y'
            inner_product_param { num_output: 2 } }
    layer { name: 'side' type: 'InnerProduct' bottom: 'a' top: 'unused'
            inner_product_param { num_output: 2 } }
    layer { name: 'loss' type: 'EuclideanLoss' bottom: 'y' bottom: 't' top: 'l' })"),
          TestContext());
  const auto& need = net.layer_need_backward();
  auto index = [&](const std::string& name) {
    for (size_t i = 0; i < net.layer_names().size(); ++i)
      if (net.layer_names()[i] == name) return static_cast<int>(i);
    return -1;
  };
  EXPECT_TRUE(need[index("ip")]);
  EXPECT_FALSE(need[index("side")]);
  EXPECT_TRUE(need[index("loss")]);
  // Input blobs need no gradient without force_backward.
  EXPECT_FALSE(net.bottom_need_backward()[index("ip")][0]);
}

TEST(Net, ParamSpecsAddedBySetUpAreHonoured) {
  // BatchNorm fixes lr_mult 0 on its statistics in SetUp, as in Caffe.
  Net net(NetFromText(R"(
    layer { name: 'in' type: 'Input' top: 'a' input_param { shape { dim: 4 dim: 3 } } }
    layer { name: 'bn' type: 'BatchNorm' bottom: 'a' top: 'b' }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'b' top: 'y'
            inner_product_param { num_output: 2 } })"),
          TestContext());
  ASSERT_EQ(net.params_lr().size(), 5u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(net.params_lr()[i], 0.f) << "BatchNorm blob " << i;
  EXPECT_EQ(net.params_lr()[3], 1.f);
  EXPECT_FALSE(net.layer_by_name("bn")->param_propagate_down(0));
}

TEST(Net, CaffemodelRoundTrip) {
  const std::string text = R"(
    name: 'roundtrip'
    layer { name: 'in' type: 'Input' top: 'a' input_param { shape { dim: 2 dim: 3 } } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'a' top: 'y'
            inner_product_param { num_output: 4 weight_filler { type: 'gaussian' std: 1 }
                                  bias_filler { type: 'gaussian' std: 1 } } })";
  Net source(NetFromText(text), TestContext());
  caffe::NetParameter weights;
  source.ToProto(&weights);
  const std::string path = TempDir() + "/roundtrip.caffemodel";
  WriteProtoToBinaryFile(weights, path);

  TestContext().Seed(99);  // different random initial weights
  Net target(NetFromText(text), TestContext());
  EXPECT_NE(target.layer_by_name("ip")->blobs()[0]->ReadData(),
            source.layer_by_name("ip")->blobs()[0]->ReadData());
  target.CopyTrainedLayersFrom(path);
  for (int j = 0; j < 2; ++j)
    EXPECT_EQ(target.layer_by_name("ip")->blobs()[j]->ReadData(),
              source.layer_by_name("ip")->blobs()[j]->ReadData());
  // The file is plain Caffe: layer names, types and blob shapes as Caffe writes them.
  caffe::NetParameter reread;
  ReadProtoFromBinaryFile(path, &reread);
  ASSERT_EQ(reread.layer_size(), 2);
  EXPECT_EQ(reread.layer(1).name(), "ip");
  EXPECT_EQ(reread.layer(1).type(), "InnerProduct");
  ASSERT_EQ(reread.layer(1).blobs_size(), 2);
  EXPECT_EQ(reread.layer(1).blobs(0).shape().dim_size(), 2);
  EXPECT_EQ(reread.layer(1).blobs(0).shape().dim(0), 4);
  EXPECT_EQ(reread.layer(1).blobs(0).shape().dim(1), 3);
  EXPECT_EQ(reread.layer(1).blobs(0).data_size(), 12);
}

TEST(Net, LegacyFourDimensionalBlobsLoad) {
  // Old Caffe models store shapes as num/channels/height/width.
  Net net(NetFromText(R"(
    layer { name: 'in' type: 'Input' top: 'a' input_param { shape { dim: 1 dim: 3 } } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'a' top: 'y'
            inner_product_param { num_output: 2 bias_term: false } })"),
          TestContext());
  caffe::NetParameter weights;
  caffe::LayerParameter* layer = weights.add_layer();
  layer->set_name("ip");
  caffe::BlobProto* blob = layer->add_blobs();
  blob->set_num(1);
  blob->set_channels(1);
  blob->set_height(2);
  blob->set_width(3);
  for (int i = 0; i < 6; ++i) blob->add_data(static_cast<float>(i));
  net.CopyTrainedLayersFrom(weights);
  EXPECT_EQ(net.layer_by_name("ip")->blobs()[0]->ReadData(),
            (std::vector<float>{0, 1, 2, 3, 4, 5}));
}

TEST(Net, WeightShapeMismatchNamesLayerAndShapes) {
  Net net(NetFromText(R"(
    layer { name: 'in' type: 'Input' top: 'a' input_param { shape { dim: 1 dim: 3 } } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'a' top: 'y'
            inner_product_param { num_output: 2 bias_term: false } })"),
          TestContext());
  caffe::NetParameter weights;
  caffe::LayerParameter* layer = weights.add_layer();
  layer->set_name("ip");
  caffe::BlobProto* blob = layer->add_blobs();
  blob->mutable_shape()->add_dim(5);
  blob->mutable_shape()->add_dim(3);
  for (int i = 0; i < 15; ++i) blob->add_data(0.f);
  const std::string what = ErrorOf([&] { net.CopyTrainedLayersFrom(weights); });
  EXPECT_NE(what.find("'ip'"), std::string::npos) << what;
  EXPECT_NE(what.find("5 3"), std::string::npos) << what;
  EXPECT_NE(what.find("2 3"), std::string::npos) << what;
}

TEST(Net, TruncatedCaffemodelIsAClearError) {
  const std::string path = TempDir() + "/truncated.caffemodel";
  caffe::NetParameter weights;
  caffe::BlobProto* blob = weights.add_layer()->add_blobs();
  for (int i = 0; i < 100; ++i) blob->add_data(1.f);
  std::string bytes;
  weights.SerializeToString(&bytes);
  WriteFileAtomically(path, bytes.substr(0, bytes.size() / 2));
  Net net(NetFromText("layer { name: 'in' type: 'Input' top: 'a' input_param { shape { dim: 1 } } }"),
          TestContext());
  const std::string what = ErrorOf([&] { net.CopyTrainedLayersFrom(path); });
  EXPECT_NE(what.find(path), std::string::npos) << what;
  EXPECT_NE(ErrorOf([&] { net.CopyTrainedLayersFrom(path + ".missing"); }).find(".missing"),
            std::string::npos);
}

}  // namespace test
}  // namespace dlcaffe
