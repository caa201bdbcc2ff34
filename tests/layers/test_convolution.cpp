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

struct ConvCase {
  int num, channels, height, width;
  int num_output, kernel_h, kernel_w;
  int stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  int dilation_h = 1, dilation_w = 1, group = 1;
  bool bias = true;

  // The prototxt, spelling the geometry the way Caffe users do: one value,
  // _h/_w pairs, or repeated fields.
  std::string Prototxt() const {
    std::string s = "name: 'conv' type: 'Convolution' convolution_param { num_output: " +
                    std::to_string(num_output);
    if (kernel_h == kernel_w) s += " kernel_size: " + std::to_string(kernel_h);
    else s += " kernel_h: " + std::to_string(kernel_h) + " kernel_w: " + std::to_string(kernel_w);
    if (stride_h == stride_w) s += " stride: " + std::to_string(stride_h);
    else s += " stride_h: " + std::to_string(stride_h) + " stride_w: " + std::to_string(stride_w);
    if (pad_h == pad_w) s += " pad: " + std::to_string(pad_h);
    else s += " pad_h: " + std::to_string(pad_h) + " pad_w: " + std::to_string(pad_w);
    if (dilation_h == dilation_w) s += " dilation: " + std::to_string(dilation_h);
    else s += " dilation: " + std::to_string(dilation_h) + " dilation: " + std::to_string(dilation_w);
    s += " group: " + std::to_string(group);
    s += std::string(" bias_term: ") + (bias ? "true" : "false");
    s += " weight_filler { type: 'gaussian' std: 0.5 }";
    s += " bias_filler { type: 'uniform' min: -1 max: 1 } }";
    return s;
  }
  int out_h() const { return (height + 2 * pad_h - (dilation_h * (kernel_h - 1) + 1)) / stride_h + 1; }
  int out_w() const { return (width + 2 * pad_w - (dilation_w * (kernel_w - 1) + 1)) / stride_w + 1; }
};

// Direct convolution in double precision, straight from the definition.
std::vector<float> ReferenceConvolution(const ConvCase& c, const std::vector<float>& x,
                                        const std::vector<float>& w,
                                        const std::vector<float>& b) {
  const int oh_n = c.out_h(), ow_n = c.out_w();
  const int cin_g = c.channels / c.group, cout_g = c.num_output / c.group;
  std::vector<float> y(size_t(c.num) * c.num_output * oh_n * ow_n);
  for (int n = 0; n < c.num; ++n)
    for (int o = 0; o < c.num_output; ++o)
      for (int oh = 0; oh < oh_n; ++oh)
        for (int ow = 0; ow < ow_n; ++ow) {
          const int g = o / cout_g;
          double sum = c.bias ? b[o] : 0.0;
          for (int ci = 0; ci < cin_g; ++ci)
            for (int ki = 0; ki < c.kernel_h; ++ki)
              for (int kj = 0; kj < c.kernel_w; ++kj) {
                const int h = oh * c.stride_h - c.pad_h + ki * c.dilation_h;
                const int wi = ow * c.stride_w - c.pad_w + kj * c.dilation_w;
                if (h < 0 || h >= c.height || wi < 0 || wi >= c.width) continue;
                const int channel = g * cin_g + ci;
                sum += double(x[((size_t(n) * c.channels + channel) * c.height + h) * c.width + wi]) *
                       w[((size_t(o) * cin_g + ci) * c.kernel_h + ki) * c.kernel_w + kj];
              }
          y[((size_t(n) * c.num_output + o) * oh_n + oh) * ow_n + ow] = static_cast<float>(sum);
        }
  return y;
}

// Under DLCAFFE_NIGHTLY=1 every test runs on every convolution path
// (util/convolution_paths.hpp). The implicit GEMM's windows and the depthwise
// kernels are compiled for each geometry, so CI runs each test on one kernel
// shape: ConvolutionTest's on planes (the CPU shape, which CI's CPU devices
// also take by default), ConvolutionGpuShapeTest's on the GPU shape's two
// paths, "elements" and "elements_im2col".
class ConvolutionTest : public ConvolutionPathTest {};

// What the GPU shape does its own way: its implicit GEMM ("elements") reads
// windows of the bottom in place of im2col's columns, for the forward and
// weight gradient (here up to the padded input's edges) and for a stride-1
// data gradient; and on both of its paths a 1x1 kernel's GEMMs read and
// write the blobs in place.
class ConvolutionGpuShapeTest : public ConvolutionPathTest {};

void CheckForward(const ConvCase& c) {
  SCOPED_TRACE(c.Prototxt() + " on " + std::to_string(c.num) + "x" +
               std::to_string(c.channels) + "x" + std::to_string(c.height) + "x" +
               std::to_string(c.width));
  Blob bottom(TestContext(), {c.num, c.channels, c.height, c.width}), top(TestContext());
  FillUniform(&bottom, -1.f, 1.f, 3 + c.height);
  auto layer = MakeLayer(c.Prototxt());
  layer->SetUp({&bottom}, {&top});
  ASSERT_EQ(top.shape(), (std::vector<int>{c.num, c.num_output, c.out_h(), c.out_w()}));
  ASSERT_EQ(layer->blobs().size(), c.bias ? 2u : 1u);
  ASSERT_EQ(layer->blobs()[0]->shape(),
            (std::vector<int>{c.num_output, c.channels / c.group, c.kernel_h, c.kernel_w}));
  if (c.bias) {
    ASSERT_EQ(layer->blobs()[1]->shape(), (std::vector<int>{c.num_output}));
  }
  layer->Forward({&bottom}, {&top});
  const std::vector<float> expected = ReferenceConvolution(
      c, bottom.ReadData(), layer->blobs()[0]->ReadData(),
      c.bias ? layer->blobs()[1]->ReadData() : std::vector<float>());
  const std::vector<float> y = top.ReadData();
  ASSERT_EQ(y.size(), expected.size());
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(y[i], expected[i], 1e-4f * (1.f + std::fabs(expected[i]))) << "element " << i;
}

ConvCase Case(int num, int channels, int height, int width, int num_output, int kernel) {
  ConvCase c{num, channels, height, width, num_output, kernel, kernel};
  return c;
}

TEST_P(ConvolutionTest, ForwardPlain) {
  CheckForward(Case(1, 1, 1, 1, 1, 1));
  CheckForward(Case(3, 3, 13, 11, 5, 3));
  CheckForward(Case(1, 1, 28, 28, 20, 5));  // LeNet conv1 on one image
}

TEST_P(ConvolutionGpuShapeTest, ForwardPadStrideRectangular) {
  ConvCase c = Case(3, 4, 13, 13, 6, 3);
  c.kernel_w = 5;
  c.stride_h = 2;
  c.stride_w = 3;
  c.pad_h = 2;
  c.pad_w = 1;
  CheckForward(c);
  ConvCase d = Case(1, 3, 7, 9, 2, 7);  // kernel as large as the padded input
  d.pad_h = d.pad_w = 0;
  d.kernel_w = 9;
  CheckForward(d);
}

TEST_P(ConvolutionTest, ForwardDilation) {
  ConvCase c = Case(3, 3, 13, 14, 4, 3);
  c.dilation_h = 2;
  c.dilation_w = 3;
  c.pad_h = 2;
  c.pad_w = 1;
  CheckForward(c);
}

TEST_P(ConvolutionTest, ForwardGroups) {
  ConvCase c = Case(3, 6, 9, 7, 4, 3);
  c.group = 2;
  c.pad_h = c.pad_w = 1;
  CheckForward(c);
  ConvCase depthwise = Case(1, 3, 13, 5, 3, 3);
  depthwise.group = 3;
  depthwise.bias = false;
  depthwise.stride_h = depthwise.stride_w = 2;
  CheckForward(depthwise);
}

TEST_P(ConvolutionTest, ForwardNoBiasOneByOne) {
  ConvCase c = Case(3, 5, 6, 5, 127, 1);
  c.bias = false;
  c.stride_h = c.stride_w = 2;
  CheckForward(c);
}

// The column buffer limited to two images' worth: the batch of 3 runs as
// chunks of 2 and 1, forward and backward.
TEST_P(ConvolutionTest, SeveralChunks) {
  ConvCase c = Case(3, 4, 7, 6, 4, 3);
  c.group = 2;
  c.pad_h = 1;
  const long long per_image = 1LL * c.channels * 9 * c.out_h() * c.out_w();
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

void CheckConvGradient(const ConvCase& c) {
  SCOPED_TRACE(c.Prototxt());
  Blob bottom(TestContext(), {c.num, c.channels, c.height, c.width}), top(TestContext());
  FillUniform(&bottom, -1.f, 1.f, 5);
  auto layer = MakeLayer(c.Prototxt());
  layer->SetUp({&bottom}, {&top});
  GradientCheckOptions options;
  options.max_checks_per_blob = 150;
  CheckGradient(*layer, {&bottom}, {&top}, {}, options);
}

TEST_P(ConvolutionTest, GradientPadStride) {
  ConvCase c = Case(2, 3, 6, 5, 4, 3);
  c.stride_h = 2;
  c.pad_h = c.pad_w = 1;
  CheckConvGradient(c);
}

TEST_P(ConvolutionTest, GradientGroupsDilationRectangular) {
  ConvCase c = Case(3, 4, 7, 8, 2, 2);
  c.kernel_w = 3;
  c.group = 2;
  c.dilation_h = 3;
  c.dilation_w = 2;
  c.pad_w = 1;
  c.stride_w = 2;
  CheckConvGradient(c);
}

// Stride 1: on the GPU shape ("elements") the data gradient is the top diff
// convolved with the flipped filters (an implicit GEMM), here with groups,
// dilation, a rectangular kernel and both pads; a pad past the dilated
// kernel's reach keeps col2im.
TEST_P(ConvolutionGpuShapeTest, GradientStrideOneGroupsDilation) {
  ConvCase c = Case(2, 4, 7, 6, 6, 3);
  c.kernel_w = 2;
  c.group = 2;
  c.dilation_h = 2;
  c.pad_h = 2;
  c.pad_w = 1;
  CheckConvGradient(c);
  c.pad_w = 2;
  CheckConvGradient(c);
}

// A 1x1 unpadded stride-1 kernel: on the GPU shape ("elements") the GEMMs
// read and write the blobs in place, with no im2col; grouped, over several
// images, and in chunks.
TEST_P(ConvolutionGpuShapeTest, PointwiseForwardAndGradient) {
  ConvCase c = Case(3, 6, 5, 7, 4, 1);
  c.group = 2;
  CheckForward(c);
  CheckConvGradient(c);
  ConvCase single = Case(2, 3, 1, 1, 5, 1);  // fully connected on 1x1 images
  CheckForward(single);
  CheckConvGradient(single);
  SetTestOption("conv_column_floats", std::to_string(2 * 6 * 5 * 7).c_str());
  CheckForward(c);
  CheckConvGradient(c);
  ResetTestOption("conv_column_floats");
}

// Depthwise (group == channels == num_output) runs as direct kernels.
TEST_P(ConvolutionTest, DepthwiseForwardAndGradient) {
  ConvCase c = Case(2, 5, 9, 7, 5, 3);
  c.group = 5;
  c.pad_h = 1;
  c.pad_w = 2;
  c.stride_h = 2;
  c.dilation_w = 2;
  CheckForward(c);
  CheckConvGradient(c);
  ConvCase rect = Case(3, 3, 13, 6, 3, 3);
  rect.kernel_w = 2;
  rect.group = 3;
  rect.bias = false;
  rect.stride_w = 3;
  CheckForward(rect);
  CheckConvGradient(rect);
  // The weight gradient accumulates: two backward passes give twice one.
  Blob bottom(TestContext(), {c.num, c.channels, c.height, c.width}), top(TestContext());
  FillUniform(&bottom, -1.f, 1.f, 21);
  auto layer = MakeLayer(c.Prototxt());
  layer->SetUp({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  FillUniform(&top, -1.f, 1.f, 22);
  top.WriteDiff(top.ReadData());
  layer->blobs()[0]->SetDiff(0.f);
  layer->Backward({&top}, {true}, {&bottom});
  const std::vector<float> once = layer->blobs()[0]->ReadDiff();
  layer->Backward({&top}, {true}, {&bottom});
  const std::vector<float> twice = layer->blobs()[0]->ReadDiff();
  for (size_t i = 0; i < once.size(); ++i) EXPECT_NEAR(twice[i], 2 * once[i], 1e-5) << i;
}

// Depthwise as MobileNets use it (stride 1, pad 1) on an odd shape, and rows
// wide enough for the CPU kernels' 16- and 8-wide column runs plus scalar
// edges and tails, at strides 1, 2 and 3 (each has its own vector loads).
TEST_P(ConvolutionTest, DepthwiseStridesAndWideRows) {
  ConvCase odd = Case(3, 4, 13, 7, 4, 3);
  odd.group = 4;
  odd.pad_h = odd.pad_w = 1;
  CheckForward(odd);
  CheckConvGradient(odd);
  ConvCase s1 = Case(3, 2, 7, 29, 2, 3);  // interior columns 1..27: 16 + 8 + 3
  s1.group = 2;
  s1.pad_h = s1.pad_w = 1;
  CheckForward(s1);
  CheckConvGradient(s1);
  ConvCase s1rows = s1;  // rows strided and dilated, columns stride 1
  s1rows.num = 2;
  s1rows.stride_h = 2;
  s1rows.dilation_h = 2;
  CheckForward(s1rows);
  CheckConvGradient(s1rows);
  ConvCase s2 = Case(2, 3, 5, 53, 3, 3);  // 27 outputs, interior 1..25: 16 + 8 + 1
  s2.group = 3;
  s2.pad_h = s2.pad_w = 1;
  s2.stride_h = s2.stride_w = 2;
  s2.bias = false;
  CheckForward(s2);
  CheckConvGradient(s2);
  // Backward-data columns at stride 2: input columns 1..26 are 16 + 8 + 2.
  ConvCase s2in = Case(1, 2, 4, 27, 2, 3);
  s2in.group = 2;
  s2in.pad_h = s2in.pad_w = 1;
  s2in.stride_h = s2in.stride_w = 2;
  CheckForward(s2in);
  CheckConvGradient(s2in);
  ConvCase s3 = Case(1, 2, 4, 80, 2, 3);  // 27 outputs, interior 1..25
  s3.group = 2;
  s3.pad_w = 2;
  s3.stride_w = 3;
  s3.dilation_w = 2;
  CheckForward(s3);
  CheckConvGradient(s3);
}

TEST_P(ConvolutionTest, GradientNoBias) {
  ConvCase c = Case(1, 2, 5, 5, 3, 3);
  c.bias = false;
  CheckConvGradient(c);
}

// Parameter diffs accumulate (the solver clears them); the bottom diff is
// written.
TEST_P(ConvolutionTest, BackwardAccumulatesParameterDiffs) {
  ConvCase c = Case(2, 3, 5, 6, 4, 3);
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
  // Bias gradient: the sum of the top diff over batch and positions.
  const std::vector<float> dy = top.ReadDiff();
  const int area = c.out_h() * c.out_w();
  for (int o = 0; o < c.num_output; ++o) {
    double sum = 0;
    for (int n = 0; n < c.num; ++n)
      for (int p = 0; p < area; ++p) sum += dy[(n * c.num_output + o) * area + p];
    EXPECT_NEAR(db1[o], sum, 1e-4);
  }
}

// Two bottom/top pairs share one set of weights, as in Caffe.
TEST_P(ConvolutionTest, SharedWeightsForSeveralBottoms) {
  ConvCase c = Case(2, 3, 6, 7, 3, 3);
  Blob b0(TestContext(), {2, 3, 6, 7}), b1(TestContext(), {2, 3, 6, 7});
  Blob t0(TestContext()), t1(TestContext());
  FillUniform(&b0, -1.f, 1.f, 1);
  FillUniform(&b1, -1.f, 1.f, 2);
  auto layer = MakeLayer(c.Prototxt());
  layer->SetUp({&b0, &b1}, {&t0, &t1});
  layer->Forward({&b0, &b1}, {&t0, &t1});
  const std::vector<float> w = layer->blobs()[0]->ReadData(), b = layer->blobs()[1]->ReadData();
  const std::vector<float> e0 = ReferenceConvolution(c, b0.ReadData(), w, b);
  const std::vector<float> e1 = ReferenceConvolution(c, b1.ReadData(), w, b);
  const std::vector<float> y0 = t0.ReadData(), y1 = t1.ReadData();
  for (size_t i = 0; i < e0.size(); ++i) {
    EXPECT_NEAR(y0[i], e0[i], 1e-4f * (1.f + std::fabs(e0[i])));
    EXPECT_NEAR(y1[i], e1[i], 1e-4f * (1.f + std::fabs(e1[i])));
  }
}

// The layer's setup throws dlcaffe::Error whose message contains every
// fragment (the layer name, the offending values and shapes).
void ExpectSetUpError(const std::string& prototxt, const std::vector<int>& shape,
                      const std::vector<std::string>& fragments) {
  Blob bottom(TestContext(), shape), top(TestContext());
  try {
    auto layer = MakeLayer(prototxt);
    layer->SetUp({&bottom}, {&top});
    ADD_FAILURE() << "no error for " << prototxt;
  } catch (const Error& e) {
    const std::string message = e.what();
    for (const std::string& f : fragments)
      EXPECT_NE(message.find(f), std::string::npos)
          << "'" << message << "' does not mention '" << f << "'";
  }
}

TEST(Convolution, ClearErrors) {
  const std::string head = "name: 'conv9' type: 'Convolution' convolution_param { num_output: 4 ";
  ExpectSetUpError(head + "kernel_size: 0 }", {1, 2, 5, 5}, {"conv9", "kernel 0 x 0"});
  ExpectSetUpError(head + "kernel_h: 3 }", {1, 2, 5, 5}, {"conv9", "kernel 3 x 0"});
  ExpectSetUpError(head + "}", {1, 2, 5, 5}, {"conv9", "kernel_size"});
  ExpectSetUpError(head + "kernel_size: 3 kernel_h: 3 kernel_w: 3 }", {1, 2, 5, 5},
                   {"conv9", "not both"});
  ExpectSetUpError(head + "kernel_size: 3 group: 2 }", {1, 3, 5, 5},
                   {"conv9", "group 2", "3 input channels", "1 3 5 5"});
  ExpectSetUpError(head + "kernel_size: 3 group: 3 }", {1, 3, 5, 5},
                   {"conv9", "group 3", "num_output 4"});
  ExpectSetUpError(head + "kernel_size: 5 pad: 1 }", {2, 2, 2, 9},
                   {"conv9", "2 2 2 9", "5 x 5 kernel"});
  ExpectSetUpError(head + "kernel_size: 3 dilation: 3 }", {1, 2, 6, 6},
                   {"conv9", "1 2 6 6", "dilated extent 7 x 7"});
  ExpectSetUpError(head + "kernel_h: 3 kernel_w: 3 }", {1, 2, 5, 5, 5},
                   {"conv9", "kernel_h/kernel_w need 2 spatial axes, not 3"});
  ExpectSetUpError(head + "kernel_size: 3 kernel_size: 3 kernel_size: 3 }", {1, 2, 5, 5},
                   {"conv9", "kernel given 3 times for 2 spatial axes"});
  ExpectSetUpError(head + "kernel_size: 3 pad: 1 pad: 1 }", {1, 2, 5, 5, 5},
                   {"conv9", "pad given 2 times for 3 spatial axes"});
  ExpectSetUpError(head + "kernel_size: 3 axis: 4 }", {1, 2, 5, 5},
                   {"conv9", "axis 4", "1 2 5 5"});
  ExpectSetUpError(head + "kernel_size: 3 axis: -1 }", {1, 2, 5, 5},
                   {"conv9", "no spatial axis"});
  ExpectSetUpError(head + "kernel_size: 3 kernel_size: 2 kernel_size: 3 }", {1, 2, 5, 1, 5},
                   {"conv9", "1 2 5 1 5", "3 x 2 x 3 kernel", "dilated extent 3 x 2 x 3"});
  ExpectSetUpError(head + "kernel_size: 3 stride: 0 }", {1, 2, 5, 5},
                   {"conv9", "stride 0 x 0"});
}

// N spatial axes (Caffe's im2col_nd path): geometry given per axis.
struct NdCase {
  int num, channels, num_output;
  std::vector<int> input, kernel, stride, pad, dilation;
  int group = 1;
  bool force_nd = false;

  std::string Prototxt() const {
    std::string s = "name: 'conv_nd' type: 'Convolution' convolution_param { num_output: " +
                    std::to_string(num_output) + " group: " + std::to_string(group);
    for (size_t d = 0; d < input.size(); ++d) {
      s += " kernel_size: " + std::to_string(kernel[d]) + " stride: " +
           std::to_string(stride[d]) + " pad: " + std::to_string(pad[d]) +
           " dilation: " + std::to_string(dilation[d]);
    }
    if (force_nd) s += " force_nd_im2col: true";
    s += " weight_filler { type: 'gaussian' std: 0.5 }";
    s += " bias_filler { type: 'uniform' min: -1 max: 1 } }";
    return s;
  }
  std::vector<int> Output() const {
    std::vector<int> out(input.size());
    for (size_t d = 0; d < input.size(); ++d)
      out[d] = (input[d] + 2 * pad[d] - (dilation[d] * (kernel[d] - 1) + 1)) / stride[d] + 1;
    return out;
  }
  std::vector<int> BottomShape() const {
    std::vector<int> shape = {num, channels};
    shape.insert(shape.end(), input.begin(), input.end());
    return shape;
  }
};

int Volume(const std::vector<int>& shape) {
  int v = 1;
  for (int d : shape) v *= d;
  return v;
}

// Multi-index of `flat` in `shape` (last axis fastest).
std::vector<int> Unflatten(int flat, const std::vector<int>& shape) {
  std::vector<int> index(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

// Direct N-d convolution from the definition, in double precision.
std::vector<float> ReferenceConvolutionNd(const NdCase& c, const std::vector<float>& x,
                                          const std::vector<float>& w,
                                          const std::vector<float>& b) {
  const std::vector<int> out = c.Output();
  const int in_area = Volume(c.input), out_area = Volume(out), k_area = Volume(c.kernel);
  const int cin_g = c.channels / c.group, cout_g = c.num_output / c.group;
  std::vector<float> y(size_t(c.num) * c.num_output * out_area);
  for (int n = 0; n < c.num; ++n)
    for (int o = 0; o < c.num_output; ++o)
      for (int p = 0; p < out_area; ++p) {
        const std::vector<int> op = Unflatten(p, out);
        double sum = b[o];
        for (int ci = 0; ci < cin_g; ++ci)
          for (int k = 0; k < k_area; ++k) {
            const std::vector<int> kp = Unflatten(k, c.kernel);
            int in_flat = 0;
            bool inside = true;
            for (size_t d = 0; d < out.size(); ++d) {
              const int i = op[d] * c.stride[d] - c.pad[d] + kp[d] * c.dilation[d];
              inside = inside && i >= 0 && i < c.input[d];
              in_flat = in_flat * c.input[d] + i;
            }
            if (!inside) continue;
            const int channel = o / cout_g * cin_g + ci;
            sum += double(x[(size_t(n) * c.channels + channel) * in_area + in_flat]) *
                   w[(size_t(o) * cin_g + ci) * k_area + k];
          }
        y[(size_t(n) * c.num_output + o) * out_area + p] = static_cast<float>(sum);
      }
  return y;
}

void CheckNd(const NdCase& c, bool gradient) {
  SCOPED_TRACE(c.Prototxt());
  Blob bottom(TestContext(), c.BottomShape()), top(TestContext());
  FillUniform(&bottom, -1.f, 1.f, 11);
  auto layer = MakeLayer(c.Prototxt());
  layer->SetUp({&bottom}, {&top});
  std::vector<int> top_shape = {c.num, c.num_output};
  for (int d : c.Output()) top_shape.push_back(d);
  ASSERT_EQ(top.shape(), top_shape);
  std::vector<int> weight_shape = {c.num_output, c.channels / c.group};
  weight_shape.insert(weight_shape.end(), c.kernel.begin(), c.kernel.end());
  ASSERT_EQ(layer->blobs()[0]->shape(), weight_shape);
  layer->Forward({&bottom}, {&top});
  const std::vector<float> expected = ReferenceConvolutionNd(
      c, bottom.ReadData(), layer->blobs()[0]->ReadData(), layer->blobs()[1]->ReadData());
  const std::vector<float> y = top.ReadData();
  ASSERT_EQ(y.size(), expected.size());
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(y[i], expected[i], 1e-4f * (1.f + std::fabs(expected[i]))) << "element " << i;
  if (!gradient) return;
  GradientCheckOptions options;
  options.max_checks_per_blob = 100;
  CheckGradient(*layer, {&bottom}, {&top}, {}, options);
}

TEST(ConvolutionNd, ThreeSpatialAxes) {
  CheckNd({2, 3, 4, {5, 4, 6}, {3, 2, 3}, {2, 1, 2}, {1, 0, 1}, {1, 2, 1}}, true);
  CheckNd({1, 2, 2, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}}, false);
}

TEST(ConvolutionNd, OneSpatialAxisWithGroups) {
  NdCase c{3, 4, 6, {13}, {3}, {2}, {1}, {2}};
  c.group = 2;
  CheckNd(c, true);
  CheckNd({2, 1, 3, {127}, {5}, {3}, {2}, {1}}, false);
}

TEST(ConvolutionNd, FourSpatialAxes) {
  CheckNd({1, 2, 3, {3, 4, 2, 5}, {2, 2, 1, 3}, {1, 2, 1, 1}, {0, 1, 0, 1}, {1, 1, 1, 2}},
          false);
}

// A new input size rewrites the N-d kernels' geometry on the device.
TEST(ConvolutionNd, ReshapeToAnotherSize) {
  NdCase c{2, 3, 4, {5, 4, 6}, {3, 2, 3}, {2, 1, 2}, {1, 0, 1}, {1, 2, 1}};
  Blob bottom(TestContext(), c.BottomShape()), top(TestContext());
  auto layer = MakeLayer(c.Prototxt());
  layer->SetUp({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  c.num = 1;
  c.input = {4, 7, 3};
  bottom.Reshape(c.BottomShape());
  FillUniform(&bottom, -1.f, 1.f, 21);
  layer->Reshape({&bottom}, {&top});
  ASSERT_EQ(top.shape(), (std::vector<int>{1, 4, 2, 5, 2}));
  layer->Forward({&bottom}, {&top});
  const std::vector<float> expected = ReferenceConvolutionNd(
      c, bottom.ReadData(), layer->blobs()[0]->ReadData(), layer->blobs()[1]->ReadData());
  const std::vector<float> y = top.ReadData();
  ASSERT_EQ(y.size(), expected.size());
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(y[i], expected[i], 1e-4f * (1.f + std::fabs(expected[i]))) << "element " << i;
}

// force_nd_im2col runs the N-d kernels on a 2-D case.
TEST(ConvolutionNd, ForcedNdOnTwoAxes) {
  NdCase c{2, 4, 6, {7, 9}, {3, 2}, {2, 1}, {1, 1}, {1, 3}};
  c.group = 2;
  c.force_nd = true;
  CheckNd(c, true);
}

// A channel axis other than 1: the axes before it are all images.
TEST(ConvolutionNd, ChannelAxisTwo) {
  Blob bottom(TestContext(), {2, 3, 4, 7}), top(TestContext());
  FillUniform(&bottom, -1.f, 1.f, 12);
  NdCase c{6, 4, 5, {7}, {3}, {1}, {1}, {1}};
  const std::string prototxt = c.Prototxt().substr(0, c.Prototxt().size() - 1) + " axis: 2 }";
  auto layer = MakeLayer(prototxt);
  layer->SetUp({&bottom}, {&top});
  ASSERT_EQ(top.shape(), (std::vector<int>{2, 3, 5, 7}));
  layer->Forward({&bottom}, {&top});
  const std::vector<float> expected = ReferenceConvolutionNd(
      c, bottom.ReadData(), layer->blobs()[0]->ReadData(), layer->blobs()[1]->ReadData());
  const std::vector<float> y = top.ReadData();
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(y[i], expected[i], 1e-4f * (1.f + std::fabs(expected[i]))) << "element " << i;
  GradientCheckOptions options;
  options.max_checks_per_blob = 60;
  CheckGradient(*layer, {&bottom}, {&top}, {}, options);
}

INSTANTIATE_TEST_SUITE_P(KernelShapes, ConvolutionTest,
                         ::testing::ValuesIn(SampledPaths({"planes"})), PathName);
INSTANTIATE_TEST_SUITE_P(KernelShapes, ConvolutionGpuShapeTest,
                         ::testing::ValuesIn(SampledPaths({"elements", "elements_im2col"})),
                         PathName);

}  // namespace
}  // namespace test
}  // namespace dlcaffe

namespace dlcaffe {
namespace test {
namespace {

// A TRAIN-phase convolution computes its forward values directly, never by
// Winograd F(4x4, 3x3), whose rounding flips ReLUs and moved googlenet's and
// inception_v3's gradients past their bounds on a GPU; inference keeps
// Winograd. The GPU shape (forced) takes Winograd from 16 channels.
TEST(Convolution, TrainingForwardIsDirectWhereInferenceTakesWinograd) {
  SetTestOption("kernel_shape", "gpu");
  const auto forward = [](const std::string& phase, const char* winograd) {
    if (winograd) SetTestOption("winograd", winograd);
    Blob bottom(TestContext(), {2, 16, 9, 11}), top(TestContext());
    FillUniform(&bottom, -1.f, 1.f, 5);
    auto layer = MakeLayer("type: 'Convolution' phase: " + phase +
                           " convolution_param { num_output: 17 kernel_size: 3 pad: 1 }");
    layer->SetUp({&bottom}, {&top});
    FillUniform(layer->blobs()[0].get(), -0.3f, 0.3f, 6);
    FillUniform(layer->blobs()[1].get(), -0.1f, 0.1f, 7);
    layer->Forward({&bottom}, {&top});
    ResetTestOption("winograd");
    return top.ReadData();
  };
  const std::vector<float> direct = forward("TRAIN", "off");
  EXPECT_EQ(forward("TRAIN", nullptr), direct);
  const std::vector<float> inference = forward("TEST", nullptr);
  EXPECT_EQ(inference, forward("TEST", "on"));
  EXPECT_NE(inference, direct);  // Winograd rounds otherwise: the two paths differ
  ResetTestOption("kernel_shape");
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
