// Convolution with 16-bit bottom and top (mixed precision). The kernels
// widen each value on load, sum in float as the float32 layer does, and
// round once on store; the weights and their gradients stay float. So on
// inputs the type holds exactly, the 16-bit layer's top and bottom gradient
// are the roundings of the float32 layer's, and its weight and bias
// gradients equal the float32 layer's, bit for bit, on every path: the
// implicit GEMM, im2col + GEMM, the data gradient by implicit GEMM or by
// col2im (both kernel shapes, and the one that rounds per plane), 1x1 in
// place, groups, dilation, depthwise, three spatial axes and a batch split
// into chunks, with Winograd off in both; and by Winograd (forward and data
// gradient), on in both. Deconvolution runs the same
// kernels the other way round, its bias added to each sum before the top is
// stored (by col2im, or by the GEMM of a 1x1 kernel writing the top in
// place): the same holds for it on the same paths. Every case in both types
// on every path under DLCAFFE_NIGHTLY=1; CI runs each path in one of the
// types (Shape::ci_type).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../../src/passes/net_pass.hpp"
#include "dlcaffe/net.hpp"
#include "util/layer_test_util.hpp"
#include "util/storage_layer_run.hpp"
#include "util/storage_values.hpp"
#include "util/test_context.hpp"
#include "util/test_depth.hpp"

namespace dlcaffe {
namespace test {
namespace {

struct Inputs {
  std::vector<float> x, dy, weights, bias;
};

StorageRun RunConvolution(const std::string& param, StorageType type, const Inputs& in,
                          const std::vector<int>& shape) {
  StorageRunInputs run(shape, in.x, in.dy, in.weights);
  run.params.insert(run.params.end(), in.bias.begin(), in.bias.end());
  return RunLayerInStorage(param, type, run);
}

struct Case {
  const char* name;
  const char* convolution_param;
  std::vector<int> shape;  // the bottom's
  int weights, bias, top;  // counts
};

// Odd spatial shapes; 4 input channels so that 2 groups and depthwise fit.
const Case kCases[] = {
    {"3x3_pad1", "num_output: 5 kernel_size: 3 pad: 1", {2, 4, 9, 7}, 5 * 4 * 9, 5,
     2 * 5 * 9 * 7},
    {"3x3_stride2", "num_output: 5 kernel_size: 3 stride: 2 pad: 1", {2, 4, 9, 7}, 5 * 4 * 9,
     5, 2 * 5 * 5 * 4},
    {"1x1_no_bias", "num_output: 3 kernel_size: 1 bias_term: false", {2, 4, 9, 7}, 3 * 4, 0,
     2 * 3 * 9 * 7},
    {"groups_dilated", "num_output: 6 group: 2 kernel_h: 3 kernel_w: 2 dilation: 2 pad: 1",
     {2, 4, 9, 7}, 6 * 2 * 6, 6, 2 * 6 * 7 * 7},
    {"depthwise", "num_output: 4 group: 4 kernel_size: 3 stride: 2 pad: 1", {2, 4, 9, 7},
     4 * 9, 4, 2 * 4 * 5 * 4},
    {"three_axes", "num_output: 3 kernel_size: 2 pad: 1", {2, 4, 3, 5, 4}, 3 * 4 * 8, 3,
     2 * 3 * 4 * 6 * 5},
};

Inputs MakeInputs(const Case& c, StorageType type) {
  int bottom_count = 1;
  for (int d : c.shape) bottom_count *= d;
  const int activations = bottom_count + c.top;
  Blob source(TestContext(), {activations + c.weights + c.bias});
  FillUniform(&source, -1.f, 1.f, 17);
  const std::vector<float> all = source.ReadData();
  // The activations in the 16-bit type; the weights as float32 has them.
  const std::vector<float> rounded =
      RoundedTo(std::vector<float>(all.begin(), all.begin() + activations), type);
  Inputs in;
  in.x.assign(rounded.begin(), rounded.begin() + bottom_count);
  in.dy.assign(rounded.begin() + bottom_count, rounded.end());
  in.weights.assign(all.begin() + activations, all.begin() + activations + c.weights);
  in.bias.assign(all.begin() + activations + c.weights, all.end());
  return in;
}

struct Shape {
  const char* kernel_shape;
  const char* implicit_gemm;
  const char* column_floats;  // "" leaves the default
  StorageType ci_type;        // the 16-bit type CI checks here (nightly: both)
  bool Checks(StorageType type) const { return NightlyDepth() || type == ci_type; }
};

class ConvolutionStorage : public ::testing::TestWithParam<Shape> {
 protected:
  void SetUp() override {
    SetTestOption("kernel_shape", GetParam().kernel_shape);
    SetTestOption("implicit_gemm", GetParam().implicit_gemm);
    SetTestOption("winograd", "off");
    if (*GetParam().column_floats) SetTestOption("conv_column_floats", GetParam().column_floats);
  }
  void TearDown() override {
    for (const char* name : {"kernel_shape", "implicit_gemm", "winograd", "conv_column_floats"})
      ResetTestOption(name);
  }
};

TEST_P(ConvolutionStorage, SixteenBitLayerRoundsTheFloatLayer) {
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    if (!GetParam().Checks(type)) continue;
    for (const Case& c : kCases) {
      SCOPED_TRACE(std::string(StorageTypeName(type)) + " " + c.name);
      const std::string param = std::string("name: 'conv' type: 'Convolution' ") +
                                "convolution_param { " + c.convolution_param + " }";
      const Inputs in = MakeInputs(c, type);
      const StorageRun half = RunConvolution(param, type, in, c.shape);
      // A 16-bit depthwise layer takes the GPU shape's kernels on every
      // device (the CPU shape's vector loads read floats): so does its
      // reference, whose weight gradient would otherwise sum in another order.
      const bool depthwise = std::string(c.name) == "depthwise";
      if (depthwise) SetTestOption("kernel_shape", "gpu");
      const StorageRun full = RunConvolution(param, StorageType::kFloat32, in, c.shape);
      if (depthwise) SetTestOption("kernel_shape", GetParam().kernel_shape);
      ASSERT_EQ(half.top, RoundedTo(full.top, type));
      ASSERT_EQ(half.bottom_diff, RoundedTo(full.bottom_diff, type));
      ASSERT_EQ(half.param_diffs, full.param_diffs);  // weights, then the bias
      // Not all zero: the comparisons above can fail.
      ASSERT_EQ(full.param_diffs.size(), c.bias ? 2u : 1u);
      for (const std::vector<float>* v : {&full.top, &full.bottom_diff, &full.param_diffs[0]})
        ASSERT_NE(*v, std::vector<float>(v->size(), 0.f));
    }
  }
}

// Winograd F(4x4, 3x3) forward and data gradient: the 16-bit transforms
// widen the input and round the output once, so the 16-bit layer gives the
// roundings of the float32 Winograd layer (pads 0, 1 and 2; odd sizes leave
// partial 4x4 tiles at the edges).
TEST(ConvolutionStorage, WinogradRoundsTheFloatWinograd) {
  SetTestOption("winograd", "on");
  const Case cases[] = {
      {"pad1", "num_output: 5 kernel_size: 3 pad: 1", {2, 4, 9, 7}, 5 * 4 * 9, 5, 2 * 5 * 9 * 7},
      {"pad0", "num_output: 3 kernel_size: 3", {1, 5, 7, 10}, 3 * 5 * 9, 3, 3 * 5 * 8},
      {"pad2", "num_output: 2 kernel_size: 3 pad: 2 bias_term: false", {2, 3, 5, 6}, 2 * 3 * 9,
       0, 2 * 2 * 7 * 8},
  };
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(StorageTypeName(type)) + " " + c.name);
      const std::string param = std::string("name: 'conv' type: 'Convolution' ") +
                                "convolution_param { " + c.convolution_param + " }";
      const Inputs in = MakeInputs(c, type);
      const StorageRun half = RunConvolution(param, type, in, c.shape);
      const StorageRun full = RunConvolution(param, StorageType::kFloat32, in, c.shape);
      ASSERT_EQ(half.top, RoundedTo(full.top, type));
      ASSERT_EQ(half.bottom_diff, RoundedTo(full.bottom_diff, type));
      ASSERT_EQ(half.param_diffs, full.param_diffs);
      ASSERT_NE(full.bottom_diff, std::vector<float>(full.bottom_diff.size(), 0.f));
    }
  }
  // Winograd rounds otherwise than the direct sum: the paths above differ
  // from the GEMMs' (so Winograd did run).
  const Case& c = cases[0];
  const std::string param = std::string("name: 'conv' type: 'Convolution' convolution_param { ") +
                            c.convolution_param + " }";
  const Inputs in = MakeInputs(c, StorageType::kFloat32);
  const StorageRun winograd = RunConvolution(param, StorageType::kFloat32, in, c.shape);
  SetTestOption("winograd", "off");
  const StorageRun direct = RunConvolution(param, StorageType::kFloat32, in, c.shape);
  ResetTestOption("winograd");
  EXPECT_NE(winograd.bottom_diff, direct.bottom_diff);
}

// cpu: planes, im2col and column-order copies, col2im per plane; gpu: the
// GEMMs in place, implicit windows or (off) im2col + col2im per pixel;
// 400 floats per chunk split the batch of the im2col rounds image by image.
// Deconvolution's cases: its bottom is the column side, its top the image
// side (top spatial = stride * (in - 1) + dilation * (kernel - 1) + 1 - 2 pad).
const Case kDeconvolutionCases[] = {
    {"3x3_stride2_pad1", "num_output: 5 kernel_size: 3 stride: 2 pad: 1", {2, 4, 5, 4},
     4 * 5 * 9, 5, 2 * 5 * 9 * 7},
    {"3x3_no_bias", "num_output: 3 kernel_size: 3 bias_term: false", {2, 4, 5, 4}, 4 * 3 * 9,
     0, 2 * 3 * 7 * 6},
    {"1x1_groups", "num_output: 6 group: 2 kernel_size: 1", {2, 4, 9, 7}, 4 * 3, 6,
     2 * 6 * 9 * 7},
    {"groups_dilated", "num_output: 6 group: 2 kernel_h: 3 kernel_w: 2 dilation: 2 pad: 1",
     {2, 4, 5, 4}, 4 * 3 * 6, 6, 2 * 6 * 7 * 4},
    {"three_axes", "num_output: 3 kernel_size: 2 stride: 2", {2, 4, 3, 2, 3}, 4 * 3 * 8, 3,
     2 * 3 * 6 * 4 * 6},
};

TEST_P(ConvolutionStorage, SixteenBitDeconvolutionRoundsTheFloatLayer) {
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    if (!GetParam().Checks(type)) continue;
    for (const Case& c : kDeconvolutionCases) {
      SCOPED_TRACE(std::string(StorageTypeName(type)) + " " + c.name);
      const std::string param = std::string("name: 'deconv' type: 'Deconvolution' ") +
                                "convolution_param { " + c.convolution_param + " }";
      const Inputs in = MakeInputs(c, type);
      const StorageRun half = RunConvolution(param, type, in, c.shape);
      const StorageRun full = RunConvolution(param, StorageType::kFloat32, in, c.shape);
      ASSERT_EQ(half.top.size(), static_cast<size_t>(c.top));
      ASSERT_EQ(half.top, RoundedTo(full.top, type));
      ASSERT_EQ(half.bottom_diff, RoundedTo(full.bottom_diff, type));
      ASSERT_EQ(half.param_diffs, full.param_diffs);  // weights, then the bias
      ASSERT_EQ(full.param_diffs.size(), c.bias ? 2u : 1u);
      for (const std::vector<float>* v : {&full.top, &full.bottom_diff, &full.param_diffs[0]})
        ASSERT_NE(*v, std::vector<float>(v->size(), 0.f));
    }
  }
}

// Each 16-bit type compiles its own copy of a shape's kernels. CI checks
// every case on every path, but each path in one type: the CPU shape's two
// paths in BFLOAT16, the GPU shape's three in FLOAT16. So each shape compiles
// its typed kernels once, and every case still meets both types (and the
// Winograd test above runs the device's own shape, the CPU shape on CI's
// CPU devices, in both). DLCAFFE_NIGHTLY=1 checks both types on every path.
INSTANTIATE_TEST_SUITE_P(Paths, ConvolutionStorage,
                         ::testing::Values(Shape{"cpu", "auto", "", StorageType::kBFloat16},
                                           Shape{"gpu", "auto", "", StorageType::kFloat16},
                                           Shape{"gpu", "off", "", StorageType::kFloat16},
                                           Shape{"gpu", "off", "400", StorageType::kFloat16},
                                           Shape{"cpu", "auto", "400", StorageType::kBFloat16}),
                         [](const ::testing::TestParamInfo<Shape>& info) {
                           return std::string(info.param.kernel_shape) + "_implicit_" +
                                  info.param.implicit_gemm +
                                  (*info.param.column_floats ? "_chunked" : "");
                         });

TEST(ConvolutionStorage, ANetStoresItsConvolutionsInSixteenBits) {
  caffe::NetParameter net = NetFromText(R"(
    default_forward_type: BFLOAT16
    layer { name: 'x' type: 'Input' top: 'x' input_param { shape { dim: 1 dim: 2 dim: 5 dim: 5 } } }
    layer { name: 'conv' type: 'Convolution' bottom: 'x' top: 'y'
            convolution_param { num_output: 3 kernel_size: 3 } }
  )");
  caffe::NetParameter typed;
  AssignStorageTypes(net, TestContext(), &typed);
  bool seen = false;
  for (const auto& layer : typed.layer()) {
    if (layer.name() != "conv") continue;
    seen = true;
    EXPECT_EQ(layer.forward_type(), caffe::BFLOAT16);
  }
  EXPECT_TRUE(seen);
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
