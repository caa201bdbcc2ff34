// Winograd F(4x4, 3x3) convolution (src/core/winograd.*), through the
// Convolution layer with DLCAFFE_CONV_WINOGRAD=on: forward and data gradient
// against direct convolutions in double, fused ReLU, chunks of images,
// numerical gradients, and the shapes it must leave to im2col + GEMM.
//
// Tolerance. The references are computed in double, so their own error
// (about 1e-16 of the magnitudes involved) is negligible: what the test sees
// is the float error of the path under test. Winograd transforms a whole
// 6x6 input tile and 3x3 filter together, with constants up to 5 (B^T) and 8
// (A^T), and each output is a difference of those larger sums; so an
// output's rounding error follows its tile's magnitude
//   T = |bias| + sum over input channels c of
//       (sum of |input| over the tile's 6x6 patch) * (sum of |filter[o][c]|)
// (TileScales), not its own 3x3 window's. Measured on these cases: max
// |error| / T = 7e-8 (1.2 float epsilons; im2col + GEMM on the same shape:
// 1.4e-8), max |error| about 10x im2col's (2.3e-5 against 2.2e-6: about 3
// bits lost). The bound, 1e-6 * T, is 14x the worst case seen; a transform
// coefficient off by one (B^T's 5 -> 4) errs by 4e-4 * T, and one off by
// 0.1% still fails the test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "dlcaffe/error.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

constexpr double kTolerance = 1e-6;  // of the tile scale T; see the top of the file

struct Shape3x3 {
  int num, channels, height, width, num_output;
  int pad_h = 1, pad_w = 1;
  bool bias = true;

  std::string Prototxt() const {
    return "name: 'conv' type: 'Convolution' convolution_param { num_output: " +
           std::to_string(num_output) + " kernel_size: 3 pad_h: " + std::to_string(pad_h) +
           " pad_w: " + std::to_string(pad_w) + " bias_term: " + (bias ? "true" : "false") +
           " weight_filler { type: 'gaussian' std: 0.5 }"
           " bias_filler { type: 'uniform' min: -1 max: 1 } }";
  }
  int out_h() const { return height + 2 * pad_h - 2; }
  int out_w() const { return width + 2 * pad_w - 2; }
  std::string Name() const {
    return std::to_string(num) + "x" + std::to_string(channels) + "x" +
           std::to_string(height) + "x" + std::to_string(width) + " -> " +
           std::to_string(num_output) + ", pad " + std::to_string(pad_h) + "," +
           std::to_string(pad_w) + (bias ? "" : ", no bias");
  }
};

Shape3x3 Make(int num, int channels, int height, int width, int num_output, int pad_h,
              int pad_w, bool bias = true) {
  Shape3x3 s{num, channels, height, width, num_output, pad_h, pad_w, bias};
  return s;
}

// A value and the scale of its rounding error (see the top of the file).
struct Expected {
  std::vector<double> value, scale;
};

// The error scale of each output of a 3x3 stride-1 convolution computed by
// Winograd F(4x4, 3x3): |bias| plus, over input channels c, the sum of
// |input| over the 6x6 input patch of the output's 4x4 tile times the sum
// of |filter[o][c]| (filter_abs[o * in_channels + c]). Every value of the
// tile goes through the transforms together, so an output's error follows
// the tile's magnitude, not only its own 3x3 window's.
std::vector<double> TileScales(int num, int in_channels, int out_channels, int height,
                               int width, int pad_h, int pad_w,
                               const std::vector<float>& input,
                               const std::vector<double>& filter_abs,
                               const std::vector<float>& bias) {
  const int out_h = height + 2 * pad_h - 2, out_w = width + 2 * pad_w - 2;
  const int tiles_h = (out_h + 3) / 4, tiles_w = (out_w + 3) / 4;
  std::vector<double> scale(size_t(num) * out_channels * out_h * out_w, 0.0);
  std::vector<double> patch(size_t(tiles_h) * tiles_w);
  for (int n = 0; n < num; ++n)
    for (int c = 0; c < in_channels; ++c) {
      const float* plane = &input[(size_t(n) * in_channels + c) * height * width];
      for (int ty = 0; ty < tiles_h; ++ty)
        for (int tx = 0; tx < tiles_w; ++tx) {
          double sum = 0;
          for (int y = 4 * ty - pad_h; y < 4 * ty - pad_h + 6; ++y)
            for (int x = 4 * tx - pad_w; x < 4 * tx - pad_w + 6; ++x)
              if (y >= 0 && y < height && x >= 0 && x < width)
                sum += std::fabs(plane[y * width + x]);
          patch[ty * tiles_w + tx] = sum;
        }
      for (int o = 0; o < out_channels; ++o)
        for (int oh = 0; oh < out_h; ++oh)
          for (int ow = 0; ow < out_w; ++ow)
            scale[((size_t(n) * out_channels + o) * out_h + oh) * out_w + ow] +=
                patch[(oh / 4) * tiles_w + ow / 4] * filter_abs[o * in_channels + c];
    }
  for (size_t i = 0; i < scale.size() && !bias.empty(); ++i)
    scale[i] += std::fabs(bias[(i / (out_h * out_w)) % out_channels]);
  return scale;
}

// sum over k of |w[o][c][k]|, indexed [o][c], or [c][o] when transposed.
std::vector<double> FilterAbsSums(const Shape3x3& c, const std::vector<float>& w,
                                  bool transposed) {
  std::vector<double> sums(size_t(c.num_output) * c.channels, 0.0);
  for (int o = 0; o < c.num_output; ++o)
    for (int ci = 0; ci < c.channels; ++ci)
      for (int k = 0; k < 9; ++k)
        sums[transposed ? ci * c.num_output + o : o * c.channels + ci] +=
            std::fabs(w[(size_t(o) * c.channels + ci) * 9 + k]);
  return sums;
}

// Direct 3x3 stride-1 correlation in double.
Expected ReferenceForward(const Shape3x3& c, const std::vector<float>& x,
                          const std::vector<float>& w, const std::vector<float>& b) {
  const int oh_n = c.out_h(), ow_n = c.out_w();
  Expected e;
  e.value.resize(size_t(c.num) * c.num_output * oh_n * ow_n);
  for (int n = 0; n < c.num; ++n)
    for (int o = 0; o < c.num_output; ++o)
      for (int oh = 0; oh < oh_n; ++oh)
        for (int ow = 0; ow < ow_n; ++ow) {
          double sum = c.bias ? b[o] : 0.0;
          for (int ci = 0; ci < c.channels; ++ci)
            for (int ki = 0; ki < 3; ++ki)
              for (int kj = 0; kj < 3; ++kj) {
                const int h = oh - c.pad_h + ki, wi = ow - c.pad_w + kj;
                if (h < 0 || h >= c.height || wi < 0 || wi >= c.width) continue;
                sum += double(x[((size_t(n) * c.channels + ci) * c.height + h) * c.width + wi]) *
                       w[((size_t(o) * c.channels + ci) * 3 + ki) * 3 + kj];
              }
          e.value[((size_t(n) * c.num_output + o) * oh_n + oh) * ow_n + ow] = sum;
        }
  e.scale = TileScales(c.num, c.channels, c.num_output, c.height, c.width, c.pad_h, c.pad_w, x,
                       FilterAbsSums(c, w, false), b);
  return e;
}

// The bottom diff, straight from the definition: each top diff element
// scattered back over its window. (Winograd computes it as a convolution of
// the top diff with pad 2 - pad: its error scale is that convolution's.)
Expected ReferenceDataGradient(const Shape3x3& c, const std::vector<float>& dy,
                               const std::vector<float>& w) {
  const int oh_n = c.out_h(), ow_n = c.out_w();
  Expected e;
  e.value.assign(size_t(c.num) * c.channels * c.height * c.width, 0.0);
  for (int n = 0; n < c.num; ++n)
    for (int o = 0; o < c.num_output; ++o)
      for (int oh = 0; oh < oh_n; ++oh)
        for (int ow = 0; ow < ow_n; ++ow)
          for (int ci = 0; ci < c.channels; ++ci)
            for (int ki = 0; ki < 3; ++ki)
              for (int kj = 0; kj < 3; ++kj) {
                const int h = oh - c.pad_h + ki, wi = ow - c.pad_w + kj;
                if (h < 0 || h >= c.height || wi < 0 || wi >= c.width) continue;
                e.value[((size_t(n) * c.channels + ci) * c.height + h) * c.width + wi] +=
                    double(dy[((size_t(n) * c.num_output + o) * oh_n + oh) * ow_n + ow]) *
                    w[((size_t(o) * c.channels + ci) * 3 + ki) * 3 + kj];
              }
  e.scale = TileScales(c.num, c.num_output, c.channels, oh_n, ow_n, 2 - c.pad_h, 2 - c.pad_w,
                       dy, FilterAbsSums(c, w, true), {});
  return e;
}

void ExpectClose(const std::vector<float>& got, const Expected& want, bool relu = false) {
  ASSERT_EQ(got.size(), want.value.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double expected = relu ? std::max(want.value[i], 0.0) : want.value[i];
    ASSERT_NEAR(got[i], expected, kTolerance * want.scale[i]) << "element " << i;
  }
}

// A layer with its bottom and top, set up (the variable is read by Reshape).
struct ConvRun {
  Blob bottom, top;
  std::unique_ptr<Layer> layer;
  explicit ConvRun(const Shape3x3& c, unsigned seed = 3)
      : bottom(TestContext(), {c.num, c.channels, c.height, c.width}), top(TestContext()) {
    FillUniform(&bottom, -1.f, 1.f, seed);
    layer = MakeLayer(c.Prototxt());
    layer->SetUp({&bottom}, {&top});
  }
  std::vector<float> Weights() const { return layer->blobs()[0]->ReadData(); }
  std::vector<float> Bias() const {
    return layer->blobs().size() > 1 ? layer->blobs()[1]->ReadData() : std::vector<float>();
  }
  // Backward with a random top diff; returns the bottom diff.
  std::vector<float> Backward(unsigned seed) {
    Blob random(TestContext(), top.shape());
    FillUniform(&random, -1.f, 1.f, seed);
    top.WriteDiff(random.ReadData());
    bottom.SetDiff(123.f);  // overwritten (=), never accumulated into
    layer->Backward({&top}, {true}, {&bottom});
    return bottom.ReadDiff();
  }
};

// Forward and data gradient of `c` against the references.
void CheckForwardAndDataGradient(const Shape3x3& c, bool relu = false) {
  SCOPED_TRACE(c.Name() + (relu ? ", fused ReLU" : ""));
  ConvRun run(c);
  ASSERT_EQ(run.top.shape(), (std::vector<int>{c.num, c.num_output, c.out_h(), c.out_w()}));
  LayerEpilogue epilogue;
  epilogue.relu = relu;
  run.layer->set_epilogue(epilogue);
  run.layer->Forward({&run.bottom}, {&run.top});
  ExpectClose(run.top.ReadData(),
              ReferenceForward(c, run.bottom.ReadData(), run.Weights(), run.Bias()), relu);
  if (relu) return;  // the ReLU layer owns its backward
  const std::vector<float> dx = run.Backward(7);
  ExpectClose(dx, ReferenceDataGradient(c, run.top.ReadDiff(), run.Weights()));
}

class WinogradTest : public ::testing::Test {
 protected:
  void SetUp() override { SetTestOption("winograd", "on"); }
  void TearDown() override {
    ResetTestOption("winograd");
    ResetTestOption("conv_column_floats");
  }
};

// Outputs that are not multiples of 4 (partial edge tiles), a 1x1 image,
// every pad on each axis, channel counts that fit no vector width.
TEST_F(WinogradTest, ForwardAndDataGradientOddShapes) {
  CheckForwardAndDataGradient(Make(3, 5, 13, 9, 7, 1, 1));
  CheckForwardAndDataGradient(Make(1, 1, 1, 1, 1, 1, 1));
  CheckForwardAndDataGradient(Make(2, 3, 4, 4, 5, 0, 0));          // one partial tile
  CheckForwardAndDataGradient(Make(1, 4, 6, 11, 3, 2, 2, false));  // pad 2: 8 x 13 out
  CheckForwardAndDataGradient(Make(2, 3, 10, 10, 4, 0, 0));        // exactly 2 x 2 tiles
  CheckForwardAndDataGradient(Make(1, 2, 7, 5, 3, 2, 0));
  CheckForwardAndDataGradient(Make(2, 17, 5, 6, 13, 0, 1, false));
}

TEST_F(WinogradTest, FusedRelu) {
  CheckForwardAndDataGradient(Make(3, 5, 13, 9, 7, 1, 1), true);
  CheckForwardAndDataGradient(Make(1, 3, 6, 11, 4, 0, 2, false), true);
}

// V and M limited to about two images: the batch of 5 runs as chunks of 2,
// 2 and 1, forward and data gradient.
TEST_F(WinogradTest, SeveralChunks) {
  const Shape3x3 c = Make(5, 3, 9, 7, 4, 1, 1);
  const long long tiles = ((c.out_h() + 3) / 4) * ((c.out_w() + 3) / 4);
  const long long per_image = 36LL * std::max(c.channels, c.num_output) * tiles;
  SetTestOption("conv_column_floats", std::to_string(2 * per_image + 1).c_str());
  CheckForwardAndDataGradient(c);
  SetTestOption("conv_column_floats", "1");  // below one image: one per chunk
  CheckForwardAndDataGradient(c);
}

// Two bottom/top pairs share the weights.
TEST_F(WinogradTest, TwoBottoms) {
  const Shape3x3 c = Make(2, 3, 7, 6, 4, 1, 1);
  Blob b0(TestContext(), {c.num, c.channels, c.height, c.width}), t0(TestContext());
  Blob b1(TestContext(), b0.shape()), t1(TestContext());
  FillUniform(&b0, -1.f, 1.f, 11);
  FillUniform(&b1, -1.f, 1.f, 12);
  auto layer = MakeLayer(c.Prototxt());
  layer->SetUp({&b0, &b1}, {&t0, &t1});
  layer->Forward({&b0, &b1}, {&t0, &t1});
  const std::vector<float> w = layer->blobs()[0]->ReadData(), b = layer->blobs()[1]->ReadData();
  ExpectClose(t0.ReadData(), ReferenceForward(c, b0.ReadData(), w, b));
  ExpectClose(t1.ReadData(), ReferenceForward(c, b1.ReadData(), w, b));
}

// Numerical gradients: the bottom (Winograd's data gradient) and the
// weights and bias (im2col + GEMM, unchanged).
TEST_F(WinogradTest, Gradients) {
  for (const Shape3x3& c : {Make(2, 3, 6, 5, 4, 1, 1), Make(1, 2, 5, 7, 3, 0, 2, false),
                            Make(2, 2, 4, 3, 2, 2, 0)}) {
    SCOPED_TRACE(c.Name());
    ConvRun run(c, 5);
    GradientCheckOptions options;
    options.max_checks_per_blob = 100;
    CheckGradient(*run.layer, {&run.bottom}, {&run.top}, {}, options);
  }
}

// With Winograd off in the layer's choices (what the plan hands it), the
// same shape takes im2col + GEMM at its next Reshape; the two paths round
// differently, which shows that "on" did take the Winograd path (the
// reference checks above could not tell).
TEST_F(WinogradTest, OnAndOffTakeDifferentPaths) {
  const Shape3x3 c = Make(2, 8, 13, 9, 6, 1, 1);
  ConvRun on(c);
  on.layer->Forward({&on.bottom}, {&on.top});
  const std::vector<float> y_on = on.top.ReadData(), dx_on = on.Backward(4);
  LayerChoices off = on.layer->choices();
  off.winograd = RunOptions::Choice::kOff;
  on.layer->set_choices(off);
  on.layer->Reshape({&on.bottom}, {&on.top});
  on.layer->Forward({&on.bottom}, {&on.top});
  const std::vector<float> y_off = on.top.ReadData(), dx_off = on.Backward(4);
  EXPECT_NE(y_on, y_off);
  EXPECT_NE(dx_on, dx_off);
  const Expected y = ReferenceForward(c, on.bottom.ReadData(), on.Weights(), on.Bias());
  ExpectClose(y_on, y);
  ExpectClose(y_off, y);
}

// Shapes Winograd cannot compute take the usual path with the variable on:
// results bit for bit those of "off", forward and backward.
TEST_F(WinogradTest, LeavesOtherShapesAlone) {
  const std::string base = "name: 'conv' type: 'Convolution' convolution_param { num_output: 4 "
                           "weight_filler { type: 'gaussian' std: 0.5 } "
                           "bias_filler { type: 'uniform' min: -1 max: 1 } ";
  for (const std::string& geometry :
       {std::string("kernel_size: 3 pad: 1 stride: 2"), std::string("kernel_size: 5 pad: 2"),
        std::string("kernel_size: 3 pad: 2 dilation: 2"),
        std::string("kernel_size: 3 pad: 1 group: 2"), std::string("kernel_size: 3 pad: 3"),
        std::string("kernel_h: 3 kernel_w: 1 pad_h: 1")}) {
    SCOPED_TRACE(geometry);
    std::vector<float> results[2][3];  // [off, on][top, bottom diff, weight diff]
    for (int on = 0; on < 2; ++on) {
      SetTestOption("winograd", on ? "on" : "off");
      Blob bottom(TestContext(), {2, 4, 9, 7}), top(TestContext());
      FillUniform(&bottom, -1.f, 1.f, 8);
      TestContext().Seed(99);  // the same weights both times
      auto layer = MakeLayer(base + geometry + " }");
      layer->SetUp({&bottom}, {&top});
      layer->Forward({&bottom}, {&top});
      Blob random(TestContext(), top.shape());
      FillUniform(&random, -1.f, 1.f, 9);
      top.WriteDiff(random.ReadData());
      for (auto& p : layer->blobs()) p->SetDiff(0.f);
      layer->Backward({&top}, {true}, {&bottom});
      results[on][0] = top.ReadData();
      results[on][1] = bottom.ReadDiff();
      results[on][2] = layer->blobs()[0]->ReadDiff();
    }
    for (int k = 0; k < 3; ++k) EXPECT_EQ(results[0][k], results[1][k]) << "result " << k;
  }
}


}  // namespace
}  // namespace test
}  // namespace dlcaffe
