#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "dlcaffe/error.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/convolution_paths.hpp"
#include "util/test_context.hpp"
#include "util/test_depth.hpp"

namespace dlcaffe {
namespace test {
namespace {

struct DeconvCase {
  int num, channels, height, width;
  int num_output, kernel_h, kernel_w;
  int stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  int dilation_h = 1, dilation_w = 1, group = 1;
  bool bias = true;

  std::string Prototxt() const {
    std::string s = "name: 'deconv' type: 'Deconvolution' convolution_param { num_output: " +
                    std::to_string(num_output);
    s += " kernel_h: " + std::to_string(kernel_h) + " kernel_w: " + std::to_string(kernel_w);
    s += " stride_h: " + std::to_string(stride_h) + " stride_w: " + std::to_string(stride_w);
    s += " pad_h: " + std::to_string(pad_h) + " pad_w: " + std::to_string(pad_w);
    s += " dilation: " + std::to_string(dilation_h) + " dilation: " + std::to_string(dilation_w);
    s += " group: " + std::to_string(group);
    s += std::string(" bias_term: ") + (bias ? "true" : "false");
    s += " weight_filler { type: 'gaussian' std: 0.5 }";
    s += " bias_filler { type: 'uniform' min: -1 max: 1 } }";
    return s;
  }
  int out_h() const { return stride_h * (height - 1) + dilation_h * (kernel_h - 1) + 1 - 2 * pad_h; }
  int out_w() const { return stride_w * (width - 1) + dilation_w * (kernel_w - 1) + 1 - 2 * pad_w; }
};

// Transposed convolution by scattering: every input pixel adds its weighted
// kernel into the output, in double precision.
std::vector<float> ReferenceDeconvolution(const DeconvCase& c, const std::vector<float>& x,
                                          const std::vector<float>& w,
                                          const std::vector<float>& b) {
  const int oh_n = c.out_h(), ow_n = c.out_w();
  const int cin_g = c.channels / c.group, cout_g = c.num_output / c.group;
  std::vector<double> y(size_t(c.num) * c.num_output * oh_n * ow_n, 0.0);
  for (int n = 0; n < c.num; ++n)
    for (int ch = 0; ch < c.channels; ++ch)
      for (int i = 0; i < c.height; ++i)
        for (int j = 0; j < c.width; ++j) {
          const double v = x[((size_t(n) * c.channels + ch) * c.height + i) * c.width + j];
          const int g = ch / cin_g;
          for (int ol = 0; ol < cout_g; ++ol)
            for (int ki = 0; ki < c.kernel_h; ++ki)
              for (int kj = 0; kj < c.kernel_w; ++kj) {
                const int h = i * c.stride_h - c.pad_h + ki * c.dilation_h;
                const int wo = j * c.stride_w - c.pad_w + kj * c.dilation_w;
                if (h < 0 || h >= oh_n || wo < 0 || wo >= ow_n) continue;
                const int o = g * cout_g + ol;
                y[((size_t(n) * c.num_output + o) * oh_n + h) * ow_n + wo] +=
                    v * w[((size_t(ch) * cout_g + ol) * c.kernel_h + ki) * c.kernel_w + kj];
              }
        }
  std::vector<float> out(y.size());
  const int area = oh_n * ow_n;
  for (size_t i = 0; i < y.size(); ++i)
    out[i] = static_cast<float>(y[i] + (c.bias ? b[(i / area) % c.num_output] : 0.0));
  return out;
}

// Under DLCAFFE_NIGHTLY=1 every test runs on every convolution path
// (util/convolution_paths.hpp). The implicit GEMM's windows are compiled for
// each geometry, so CI runs each test on one kernel shape: DeconvolutionTest's
// on planes (the CPU shape, which CI's CPU devices also take by default),
// DeconvolutionGpuShapeTest's on the GPU shape's two paths, "elements" and
// "elements_im2col".
class DeconvolutionTest : public ConvolutionPathTest {};

// What the GPU shape does its own way: col2im gathers per pixel (here with
// strides past the kernel, whose gaps get only the bias), its implicit GEMM
// ("elements") reads windows of the top's gradient for the data gradient (a
// convolution) in place of im2col's columns, and a 1x1 kernel's GEMMs use
// the blobs in place.
class DeconvolutionGpuShapeTest : public ConvolutionPathTest {};

DeconvCase Case(int num, int channels, int height, int width, int num_output, int kernel) {
  DeconvCase c{num, channels, height, width, num_output, kernel, kernel};
  return c;
}

void CheckForward(const DeconvCase& c) {
  SCOPED_TRACE(c.Prototxt() + " on " + std::to_string(c.num) + "x" +
               std::to_string(c.channels) + "x" + std::to_string(c.height) + "x" +
               std::to_string(c.width));
  Blob bottom(TestContext(), {c.num, c.channels, c.height, c.width}), top(TestContext());
  FillUniform(&bottom, -1.f, 1.f, 7 + c.height);
  auto layer = MakeLayer(c.Prototxt());
  layer->SetUp({&bottom}, {&top});
  ASSERT_EQ(top.shape(), (std::vector<int>{c.num, c.num_output, c.out_h(), c.out_w()}));
  ASSERT_EQ(layer->blobs().size(), c.bias ? 2u : 1u);
  // Caffe's layout: C_in x num_output / group x kh x kw.
  ASSERT_EQ(layer->blobs()[0]->shape(),
            (std::vector<int>{c.channels, c.num_output / c.group, c.kernel_h, c.kernel_w}));
  if (c.bias) {
    ASSERT_EQ(layer->blobs()[1]->shape(), (std::vector<int>{c.num_output}));
  }
  layer->Forward({&bottom}, {&top});
  const std::vector<float> expected = ReferenceDeconvolution(
      c, bottom.ReadData(), layer->blobs()[0]->ReadData(),
      c.bias ? layer->blobs()[1]->ReadData() : std::vector<float>());
  const std::vector<float> y = top.ReadData();
  ASSERT_EQ(y.size(), expected.size());
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(y[i], expected[i], 1e-4f * (1.f + std::fabs(expected[i]))) << "element " << i;
}

void CheckDeconvGradient(const DeconvCase& c) {
  SCOPED_TRACE(c.Prototxt());
  Blob bottom(TestContext(), {c.num, c.channels, c.height, c.width}), top(TestContext());
  FillUniform(&bottom, -1.f, 1.f, 5);
  auto layer = MakeLayer(c.Prototxt());
  layer->SetUp({&bottom}, {&top});
  GradientCheckOptions options;
  options.max_checks_per_blob = 120;
  CheckGradient(*layer, {&bottom}, {&top}, {}, options);
}

TEST_P(DeconvolutionTest, ForwardPlain) {
  CheckForward(Case(1, 1, 1, 1, 1, 1));
  CheckForward(Case(3, 3, 5, 7, 4, 3));
  CheckForward(Case(2, 5, 1, 13, 3, 2));
}

// 1x1 unpadded stride 1: on the GPU shape the GEMMs use the blobs in place.
TEST_P(DeconvolutionGpuShapeTest, PointwiseForwardAndGradient) {
  DeconvCase c = Case(3, 4, 5, 3, 6, 1);
  c.group = 2;
  CheckForward(c);
  CheckDeconvGradient(c);
}

TEST_P(DeconvolutionGpuShapeTest, ForwardStridePadRectangular) {
  DeconvCase c = Case(3, 4, 5, 6, 3, 4);  // FCN-style 2x upsampling
  c.stride_h = c.stride_w = 2;
  c.pad_h = c.pad_w = 1;
  CheckForward(c);
  DeconvCase d = Case(2, 3, 7, 4, 5, 3);
  d.kernel_w = 5;
  d.stride_h = 3;
  d.stride_w = 2;
  d.pad_h = 2;
  d.pad_w = 0;
  CheckForward(d);
  DeconvCase e = Case(1, 2, 3, 3, 2, 1);  // stride past the kernel: gaps stay 0 + bias
  e.stride_h = e.stride_w = 3;
  CheckForward(e);
}

TEST_P(DeconvolutionTest, ForwardDilationGroups) {
  DeconvCase c = Case(2, 6, 5, 4, 4, 3);
  c.group = 2;
  c.dilation_h = 2;
  c.dilation_w = 3;
  c.pad_h = 1;
  c.stride_w = 2;
  CheckForward(c);
  DeconvCase depthwise = Case(1, 3, 6, 5, 3, 3);
  depthwise.group = 3;
  depthwise.bias = false;
  depthwise.stride_h = depthwise.stride_w = 2;
  CheckForward(depthwise);
}

TEST_P(DeconvolutionGpuShapeTest, GradientStridePad) {
  DeconvCase c = Case(2, 3, 4, 3, 2, 3);
  c.stride_h = 2;
  c.pad_h = c.pad_w = 1;
  CheckDeconvGradient(c);
}

TEST_P(DeconvolutionTest, GradientGroupsDilationNoBias) {
  DeconvCase c = Case(2, 4, 3, 4, 6, 2);
  c.kernel_w = 3;
  c.group = 2;
  c.dilation_h = 2;
  c.stride_w = 2;
  c.pad_w = 1;
  c.bias = false;
  CheckDeconvGradient(c);
}

// The column buffer limited to two images' worth: the batch of 3 runs as
// chunks of 2 and 1, forward and backward.
TEST_P(DeconvolutionTest, SeveralChunks) {
  DeconvCase c = Case(3, 4, 4, 3, 4, 3);
  c.group = 2;
  c.stride_h = 2;
  const long long per_image = 1LL * c.num_output * 9 * c.height * c.width;
  SetTestOption("conv_column_floats", std::to_string(2 * per_image).c_str());
  CheckForward(c);
  Blob bottom(TestContext(), {c.num, c.channels, c.height, c.width}), top(TestContext());
  FillUniform(&bottom, -1.f, 1.f, 9);
  auto layer = MakeLayer(c.Prototxt());
  layer->SetUp({&bottom}, {&top});
  GradientCheckOptions options;
  options.max_checks_per_blob = 60;
  CheckGradient(*layer, {&bottom}, {&top}, {}, options);
  ResetTestOption("conv_column_floats");
}

// Parameter diffs accumulate (the solver clears them); the bottom diff is
// written; the bias gradient is the top diff summed over batch and positions.
TEST_P(DeconvolutionTest, BackwardAccumulatesParameterDiffs) {
  DeconvCase c = Case(2, 3, 4, 5, 4, 3);
  c.stride_h = c.stride_w = 2;
  Blob bottom(TestContext(), {c.num, c.channels, c.height, c.width}), top(TestContext());
  FillUniform(&bottom, -1.f, 1.f, 1);
  auto layer = MakeLayer(c.Prototxt());
  layer->SetUp({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  FillUniform(&top, -1.f, 1.f, 2);
  top.WriteDiff(top.ReadData());
  for (auto& p : layer->blobs()) p->SetDiff(0.f);
  bottom.SetDiff(0.f);
  layer->Backward({&top}, {true}, {&bottom});
  const std::vector<float> dw1 = layer->blobs()[0]->ReadDiff(),
                           db1 = layer->blobs()[1]->ReadDiff(), dx1 = bottom.ReadDiff();
  layer->Backward({&top}, {true}, {&bottom});
  const std::vector<float> dw2 = layer->blobs()[0]->ReadDiff(),
                           db2 = layer->blobs()[1]->ReadDiff(), dx2 = bottom.ReadDiff();
  for (size_t i = 0; i < dw1.size(); ++i) EXPECT_FLOAT_EQ(dw2[i], 2 * dw1[i]);
  for (size_t i = 0; i < db1.size(); ++i) EXPECT_FLOAT_EQ(db2[i], 2 * db1[i]);
  for (size_t i = 0; i < dx1.size(); ++i) EXPECT_FLOAT_EQ(dx2[i], dx1[i]);
  const std::vector<float> dy = top.ReadDiff();
  const int area = c.out_h() * c.out_w();
  for (int o = 0; o < c.num_output; ++o) {
    double sum = 0;
    for (int n = 0; n < c.num; ++n)
      for (int p = 0; p < area; ++p) sum += dy[(n * c.num_output + o) * area + p];
    EXPECT_NEAR(db1[o], sum, 1e-4);
  }
}

// FCN-style 2x upsampling: one group per channel with Caffe's bilinear
// filler. The kernels sum to one at every interior output, so a constant
// input comes out constant there.
TEST_P(DeconvolutionTest, BilinearUpsampling) {
  DeconvCase c = Case(2, 3, 5, 4, 3, 4);
  c.group = 3;
  c.stride_h = c.stride_w = 2;
  c.pad_h = c.pad_w = 1;
  c.bias = false;
  std::string text = c.Prototxt();
  text.replace(text.find("type: 'gaussian' std: 0.5"), 25, "type: 'bilinear'");
  Blob bottom(TestContext(), {c.num, c.channels, c.height, c.width}), top(TestContext());
  bottom.SetData(2.5f);
  auto layer = MakeLayer(text);
  layer->SetUp({&bottom}, {&top});
  ASSERT_EQ(top.shape(), (std::vector<int>{2, 3, 10, 8}));
  layer->Forward({&bottom}, {&top});
  const std::vector<float> y = top.ReadData();
  const std::vector<float> expected =
      ReferenceDeconvolution(c, bottom.ReadData(), layer->blobs()[0]->ReadData(), {});
  ASSERT_EQ(y.size(), expected.size());
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], expected[i], 1e-5f) << "element " << i;
  for (int plane = 0; plane < 6; ++plane)
    for (int h = 1; h < 9; ++h)
      for (int w = 1; w < 7; ++w) EXPECT_NEAR(y[(plane * 10 + h) * 8 + w], 2.5f, 1e-5f);
}

// propagate_down false leaves the bottom diff alone; the parameters still
// get their gradients.
TEST_P(DeconvolutionTest, NoPropagateDown) {
  DeconvCase c = Case(2, 3, 4, 3, 2, 3);
  Blob bottom(TestContext(), {c.num, c.channels, c.height, c.width}), top(TestContext());
  FillUniform(&bottom, -1.f, 1.f, 4);
  auto layer = MakeLayer(c.Prototxt());
  layer->SetUp({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  top.SetDiff(1.f);
  bottom.SetDiff(7.f);
  for (auto& p : layer->blobs()) p->SetDiff(0.f);
  layer->Backward({&top}, {false}, {&bottom});
  for (float v : bottom.ReadDiff()) ASSERT_EQ(v, 7.f);
  const float area = float(c.out_h() * c.out_w() * c.num);
  for (float v : layer->blobs()[1]->ReadDiff()) EXPECT_NEAR(v, area, 1e-3f);
  float weight_diff = 0.f;
  for (float v : layer->blobs()[0]->ReadDiff()) weight_diff += std::fabs(v);
  EXPECT_GT(weight_diff, 0.f);
}

INSTANTIATE_TEST_SUITE_P(KernelShapes, DeconvolutionTest,
                         ::testing::ValuesIn(SampledPaths({"planes"})), PathName);
INSTANTIATE_TEST_SUITE_P(KernelShapes, DeconvolutionGpuShapeTest,
                         ::testing::ValuesIn(SampledPaths({"elements", "elements_im2col"})),
                         PathName);

// N spatial axes: geometry per axis, reference by scattering.
struct NdCase {
  int num, channels, num_output;
  std::vector<int> input, kernel, stride, pad, dilation;
  int group = 1;

  std::string Prototxt() const {
    std::string s = "name: 'deconv_nd' type: 'Deconvolution' convolution_param { "
                    "num_output: " + std::to_string(num_output) + " group: " +
                    std::to_string(group);
    for (size_t d = 0; d < input.size(); ++d)
      s += " kernel_size: " + std::to_string(kernel[d]) + " stride: " +
           std::to_string(stride[d]) + " pad: " + std::to_string(pad[d]) +
           " dilation: " + std::to_string(dilation[d]);
    s += " weight_filler { type: 'gaussian' std: 0.5 }";
    s += " bias_filler { type: 'uniform' min: -1 max: 1 } }";
    return s;
  }
  std::vector<int> Output() const {
    std::vector<int> out(input.size());
    for (size_t d = 0; d < input.size(); ++d)
      out[d] = stride[d] * (input[d] - 1) + dilation[d] * (kernel[d] - 1) + 1 - 2 * pad[d];
    return out;
  }
};

int Volume(const std::vector<int>& shape) {
  int v = 1;
  for (int d : shape) v *= d;
  return v;
}

std::vector<int> Unflatten(int flat, const std::vector<int>& shape) {
  std::vector<int> index(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

std::vector<float> ReferenceDeconvolutionNd(const NdCase& c, const std::vector<float>& x,
                                            const std::vector<float>& w,
                                            const std::vector<float>& b) {
  const std::vector<int> out = c.Output();
  const int in_area = Volume(c.input), out_area = Volume(out), k_area = Volume(c.kernel);
  const int cin_g = c.channels / c.group, cout_g = c.num_output / c.group;
  std::vector<double> y(size_t(c.num) * c.num_output * out_area, 0.0);
  for (int n = 0; n < c.num; ++n)
    for (int ch = 0; ch < c.channels; ++ch)
      for (int p = 0; p < in_area; ++p) {
        const std::vector<int> ip = Unflatten(p, c.input);
        const double v = x[(size_t(n) * c.channels + ch) * in_area + p];
        for (int ol = 0; ol < cout_g; ++ol)
          for (int k = 0; k < k_area; ++k) {
            const std::vector<int> kp = Unflatten(k, c.kernel);
            int out_flat = 0;
            bool inside = true;
            for (size_t d = 0; d < out.size(); ++d) {
              const int o = ip[d] * c.stride[d] - c.pad[d] + kp[d] * c.dilation[d];
              inside = inside && o >= 0 && o < out[d];
              out_flat = out_flat * out[d] + o;
            }
            if (!inside) continue;
            const int o = ch / cin_g * cout_g + ol;
            y[(size_t(n) * c.num_output + o) * out_area + out_flat] +=
                v * w[(size_t(ch) * cout_g + ol) * k_area + k];
          }
      }
  std::vector<float> result(y.size());
  for (size_t i = 0; i < y.size(); ++i)
    result[i] = static_cast<float>(y[i] + b[(i / out_area) % c.num_output]);
  return result;
}

void CheckNd(const NdCase& c) {
  SCOPED_TRACE(c.Prototxt());
  std::vector<int> shape = {c.num, c.channels};
  shape.insert(shape.end(), c.input.begin(), c.input.end());
  Blob bottom(TestContext(), shape), top(TestContext());
  FillUniform(&bottom, -1.f, 1.f, 13);
  auto layer = MakeLayer(c.Prototxt());
  layer->SetUp({&bottom}, {&top});
  std::vector<int> top_shape = {c.num, c.num_output};
  for (int d : c.Output()) top_shape.push_back(d);
  ASSERT_EQ(top.shape(), top_shape);
  std::vector<int> weight_shape = {c.channels, c.num_output / c.group};
  weight_shape.insert(weight_shape.end(), c.kernel.begin(), c.kernel.end());
  ASSERT_EQ(layer->blobs()[0]->shape(), weight_shape);
  layer->Forward({&bottom}, {&top});
  const std::vector<float> expected = ReferenceDeconvolutionNd(
      c, bottom.ReadData(), layer->blobs()[0]->ReadData(), layer->blobs()[1]->ReadData());
  const std::vector<float> y = top.ReadData();
  ASSERT_EQ(y.size(), expected.size());
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(y[i], expected[i], 1e-4f * (1.f + std::fabs(expected[i]))) << "element " << i;
  GradientCheckOptions options;
  options.max_checks_per_blob = 100;
  CheckGradient(*layer, {&bottom}, {&top}, {}, options);
}

TEST(DeconvolutionNd, ThreeSpatialAxes) {
  CheckNd({2, 3, 2, {3, 2, 4}, {3, 2, 2}, {2, 1, 2}, {1, 0, 1}, {1, 2, 1}});
}

TEST(DeconvolutionNd, OneSpatialAxisWithGroups) {
  NdCase c{3, 4, 6, {7}, {3}, {2}, {1}, {2}};
  c.group = 2;
  CheckNd(c);
}

TEST(Deconvolution, ClearErrors) {
  const std::string head =
      "name: 'up9' type: 'Deconvolution' convolution_param { num_output: 4 ";
  auto expect_error = [&](const std::string& rest, const std::vector<int>& shape,
                          const std::vector<std::string>& fragments) {
    Blob bottom(TestContext(), shape), top(TestContext());
    try {
      auto layer = MakeLayer(head + rest);
      layer->SetUp({&bottom}, {&top});
      ADD_FAILURE() << "no error for " << rest;
    } catch (const Error& e) {
      const std::string message = e.what();
      for (const std::string& f : fragments)
        EXPECT_NE(message.find(f), std::string::npos)
            << "'" << message << "' does not mention '" << f << "'";
    }
  };
  expect_error("kernel_size: 3 group: 2 }", {1, 3, 5, 5}, {"up9", "group 2", "3 input"});
  expect_error("kernel_size: 1 pad: 1 }", {1, 2, 1, 1}, {"up9", "1 2 1 1", "empty output"});
  expect_error("kernel_size: 1 kernel_size: 1 pad: 1 }", {1, 2, 3, 1}, {"up9", "empty output 1 x -1"});
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
