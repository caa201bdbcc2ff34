// The benchmark nets of models/bench/ (the PyTorch speed comparison): each is
// torchvision's architecture, so each deploy net must have torchvision's
// published parameter count, its feature-map sizes (pooling rounded down as in
// PyTorch) and a 1000-way Softmax; each training net the same parameters and a
// scalar loss. The files declare batch 16; the nets are built here at batch 1
// (parameter counts and spatial sizes do not depend on the batch, and VGG-16 at
// batch 16 would allocate gigabytes), and never run: `dlcaffe time` does that.
#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "dlcaffe/io.hpp"
#include "dlcaffe/net.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

struct BenchNet {
  std::string name;  // models/bench/<name>_{deploy,train}.prototxt
  // torchvision's published count: weights, biases and BatchNorm's affine
  // weight and bias (here the Scale layers' blobs).
  long long learnable;
  // BatchNorm's running mean and variance (2 x channels) and Caffe's scale
  // factor (1) per BatchNorm layer: lr_mult 0, not counted by torchvision.
  long long frozen;
  // Blobs whose N x C x H x W at batch 1 pin the architecture's strides,
  // paddings and pooling rounding; the last one is the feature map that the
  // classifier (after global pooling, where there is one) reads.
  std::vector<std::pair<std::string, std::vector<int>>> feature_maps;
};

const std::vector<BenchNet>& BenchNets() {
  static const std::vector<BenchNet> nets = {
      // conv 11x11/4 pad 2: 224 -> 55, max pools 3x3/2 -> 27, 13, 6 (AdaptiveAvgPool2d((6, 6))
      // is the identity there and is left out of the file).
      {"alexnet",
       61100840,
       0,
       {{"features.0", {1, 64, 55, 55}},
        {"features.2", {1, 64, 27, 27}},
        {"features.5", {1, 192, 13, 13}},
        {"features.12", {1, 256, 6, 6}}}},
      // conv1 7x7/2: 112, max pool 3x3/2 pad 1 rounded down: 56 (57 if rounded up), stages
      // 56, 28, 14, 7. BatchNorm: 20 layers, 4,800 channels.
      {"resnet18",
       11689512,
       2 * 4800 + 20,
       {{"conv1", {1, 64, 112, 112}},
        {"maxpool", {1, 64, 56, 56}},
        {"layer1.1", {1, 64, 56, 56}},
        {"layer2.0", {1, 128, 28, 28}},
        {"layer3.0", {1, 256, 14, 14}},
        {"layer4.1", {1, 512, 7, 7}}}},
      // As ResNet-18, with the stride on each stage's first 3x3 conv (v1.5): layer2.0.conv1
      // still at 56, its conv2 at 28. BatchNorm: 53 layers, 26,560 channels.
      {"resnet50",
       25557032,
       2 * 26560 + 53,
       {{"conv1", {1, 64, 112, 112}},
        {"maxpool", {1, 64, 56, 56}},
        {"layer1.2", {1, 256, 56, 56}},
        {"layer2.0.conv1", {1, 128, 56, 56}},
        {"layer2.0.conv2", {1, 128, 28, 28}},
        {"layer3.5", {1, 1024, 14, 14}},
        {"layer4.2", {1, 2048, 7, 7}}}},
      // Five 2x2/2 max pools: 224 -> 112, 56, 28, 14, 7 (AdaptiveAvgPool2d((7, 7)) left out).
      {"vgg16",
       138357544,
       0,
       {{"features.4", {1, 64, 112, 112}},
        {"features.16", {1, 256, 28, 28}},
        {"features.30", {1, 512, 7, 7}}}},
      // Stride-2 stem and four stride-2 depthwise convolutions: 112, 56, 28, 14, 7.
      // BatchNorm: 52 layers, 17,056 channels.
      {"mobilenet_v2",
       3504872,
       2 * 17056 + 52,
       {{"features.0.2", {1, 32, 112, 112}},
        {"features.2.conv.0.2", {1, 96, 112, 112}},
        {"features.2.conv.1.2", {1, 96, 56, 56}},
        {"features.3", {1, 24, 56, 56}},
        {"features.17.conv.2", {1, 320, 7, 7}},
        {"features.18.2", {1, 1280, 7, 7}}}},
  };
  return nets;
}

// gtest names a failing case by this rather than by the struct's bytes.
void PrintTo(const BenchNet& net, std::ostream* os) { *os << net.name; }

std::string ShapeString(const std::vector<int>& shape) {
  std::string s;
  for (int d : shape) s += (s.empty() ? "" : " ") + std::to_string(d);
  return s;
}

caffe::NetParameter ReadBenchNet(const std::string& name, const std::string& role) {
  caffe::NetParameter param;
  ReadProtoFromTextFile(SourceDir() + "/models/bench/" + name + "_" + role + ".prototxt",
                        &param);
  return param;
}

// The shapes the first (Input) layer declares, e.g. {"16 3 224 224", "16"}.
std::vector<std::string> DeclaredInputShapes(const caffe::NetParameter& param) {
  std::vector<std::string> shapes;
  if (param.layer_size() == 0 || param.layer(0).type() != "Input") return shapes;
  for (const auto& shape : param.layer(0).input_param().shape())
    shapes.push_back(ShapeString({shape.dim().begin(), shape.dim().end()}));
  return shapes;
}

// Builds `param` in `phase` at batch 1. The fillers are cleared (constant 0):
// only shapes are checked, and drawing VGG-16's 138 million random weights
// would dominate the run time.
std::unique_ptr<Net> BuildAtBatchOne(caffe::NetParameter param, caffe::Phase phase) {
  for (auto& shape : *param.mutable_layer(0)->mutable_input_param()->mutable_shape())
    shape.set_dim(0, 1);
  for (auto& layer : *param.mutable_layer()) {
    if (layer.has_convolution_param()) {
      layer.mutable_convolution_param()->clear_weight_filler();
      layer.mutable_convolution_param()->clear_bias_filler();
    }
    if (layer.has_inner_product_param()) {
      layer.mutable_inner_product_param()->clear_weight_filler();
      layer.mutable_inner_product_param()->clear_bias_filler();
    }
  }
  param.mutable_state()->set_phase(phase);
  return std::make_unique<Net>(param, TestContext());
}

struct ParamCounts {
  long long learnable = 0, frozen = 0;
};

ParamCounts CountParams(const Net& net) {
  ParamCounts counts;
  for (size_t i = 0; i < net.learnable_params().size(); ++i)
    (net.params_lr()[i] != 0.f ? counts.learnable : counts.frozen) +=
        net.learnable_params()[i]->count();
  return counts;
}

// "layer name, blob index: shape" for every parameter blob, in net order.
std::vector<std::string> ParamShapes(const Net& net) {
  std::vector<std::string> shapes;
  for (size_t i = 0; i < net.layers().size(); ++i) {
    const auto& blobs = net.layers()[i]->blobs();
    for (size_t b = 0; b < blobs.size(); ++b)
      shapes.push_back(net.layer_names()[i] + " " + std::to_string(b) + ": " +
                       blobs[b]->shape_string());
  }
  return shapes;
}

class BenchNetsTest : public ::testing::TestWithParam<BenchNet> {};

TEST_P(BenchNetsTest, DeployAndTrainNetsAreTorchvisionsArchitecture) {
  const BenchNet& expected = GetParam();

  // Deploy net, TEST phase: batch 16 declared, N x 1000 probabilities.
  const caffe::NetParameter deploy_param = ReadBenchNet(expected.name, "deploy");
  EXPECT_EQ(DeclaredInputShapes(deploy_param), std::vector<std::string>({"16 3 224 224"}));
  std::vector<std::string> deploy_shapes;
  {
    std::unique_ptr<Net> deploy;
    ASSERT_NO_THROW(deploy = BuildAtBatchOne(deploy_param, caffe::TEST));
    ASSERT_EQ(deploy->output_blobs().size(), 1u);
    EXPECT_EQ(deploy->blob_names()[deploy->output_blob_indices()[0]], "prob");
    EXPECT_EQ(ShapeString(deploy->output_blobs()[0]->shape()), "1 1000");
    for (const auto& [blob, shape] : expected.feature_maps) {
      ASSERT_TRUE(deploy->has_blob(blob)) << "no blob '" << blob << "'";
      EXPECT_EQ(ShapeString(deploy->blob_by_name(blob)->shape()), ShapeString(shape))
          << "blob '" << blob << "'";
    }
    const ParamCounts counts = CountParams(*deploy);
    EXPECT_EQ(counts.learnable, expected.learnable);
    EXPECT_EQ(counts.frozen, expected.frozen);
    deploy_shapes = ParamShapes(*deploy);
  }  // one net alive at a time: VGG-16's weights and diffs alone take 1.1 GB

  // Training net, TRAIN phase: data 16 x 3 x 224 x 224 and label 16 declared, a
  // scalar loss, and exactly the deploy net's parameters.
  const caffe::NetParameter train_param = ReadBenchNet(expected.name, "train");
  EXPECT_EQ(DeclaredInputShapes(train_param),
            std::vector<std::string>({"16 3 224 224", "16"}));
  std::unique_ptr<Net> train;
  ASSERT_NO_THROW(train = BuildAtBatchOne(train_param, caffe::TRAIN));
  ASSERT_EQ(train->output_blobs().size(), 1u);
  EXPECT_EQ(train->blob_names()[train->output_blob_indices()[0]], "loss");
  EXPECT_EQ(train->output_blobs()[0]->num_axes(), 0);
  EXPECT_EQ(train->blob_loss_weights()[train->output_blob_indices()[0]], 1.f);
  const ParamCounts counts = CountParams(*train);
  EXPECT_EQ(counts.learnable, expected.learnable);
  EXPECT_EQ(counts.frozen, expected.frozen);
  const std::vector<std::string> train_shapes = ParamShapes(*train);
  ASSERT_EQ(train_shapes.size(), deploy_shapes.size()) << "parameter blobs, train vs deploy";
  for (size_t i = 0; i < train_shapes.size(); ++i)
    EXPECT_EQ(train_shapes[i], deploy_shapes[i]) << "parameter blob " << i;
}

INSTANTIATE_TEST_SUITE_P(Torchvision, BenchNetsTest, ::testing::ValuesIn(BenchNets()),
                         [](const ::testing::TestParamInfo<BenchNet>& info) {
                           return info.param.name;
                         });

}  // namespace

}  // namespace test
}  // namespace dlcaffe
