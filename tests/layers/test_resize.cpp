#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

struct Options {
  bool linear = false;
  std::string transform = "HALF_PIXEL";
  std::string nearest = "ROUND_PREFER_FLOOR";
  std::vector<int> size;
  std::vector<float> scale;
};

std::string ResizeText(const Options& o) {
  std::string s = std::string("type: 'Resize' resize_param { mode: ") +
                  (o.linear ? "LINEAR" : "NEAREST") + " coordinate_transform: " + o.transform +
                  " nearest_mode: " + o.nearest;
  for (int v : o.size) s += " size: " + std::to_string(v);
  for (float v : o.scale) {
    char text[32];  // every digit the float needs
    std::snprintf(text, sizeof(text), "%.9g", v);
    s += std::string(" scale: ") + text;
  }
  return s + " }";
}

// One axis of ONNX's reference implementation (onnx/reference/ops/op_resize.py,
// _interpolate_1d_with_x): the input coordinate, the two nearest indices of
// the edge-padded input (ties to the lower), and the mode's coefficients on
// them; `ratio` is 1 where the coordinate is a whole number (the right
// neighbour is then the coordinate itself).
std::vector<double> Resize1D(const std::vector<double>& in, int out_len, double scale,
                             const Options& o) {
  const int in_len = static_cast<int>(in.size());
  std::vector<double> out(out_len);
  for (int x = 0; x < out_len; ++x) {
    double x_ori;
    if (o.transform == "ALIGN_CORNERS")
      x_ori = out_len == 1 ? 0.0 : x * double(in_len - 1) / (out_len - 1);
    else if (o.transform == "ASYMMETRIC")
      x_ori = x / scale;
    else if (o.transform == "PYTORCH_HALF_PIXEL")
      x_ori = out_len == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
    else if (o.transform == "HALF_PIXEL_SYMMETRIC")
      x_ori = in_len / 2.0 * (1 - out_len / (scale * in_len)) + (x + 0.5) / scale - 0.5;
    else
      x_ori = (x + 0.5) / scale - 0.5;
    const double x_int = std::floor(x_ori);
    const double ratio = x_ori == x_int ? 1.0 : x_ori - x_int;
    double c0, c1;
    if (o.linear) {
      c0 = 1 - ratio;
      c1 = ratio;
    } else if (ratio == 1.0) {
      c0 = 0;
      c1 = 1;
    } else if (o.nearest == "ROUND_PREFER_FLOOR") {
      c0 = ratio <= 0.5;
      c1 = ratio > 0.5;
    } else if (o.nearest == "ROUND_PREFER_CEIL") {
      c0 = ratio < 0.5;
      c1 = ratio >= 0.5;
    } else if (o.nearest == "FLOOR") {
      c0 = 1;
      c1 = 0;
    } else {
      c0 = 0;
      c1 = 1;
    }
    // The neighbours: x_int and x_int + 1, or x_int - 1 and x_int at a whole
    // coordinate; indices outside the input read its edge.
    const int left = static_cast<int>(ratio == 1.0 ? x_int - 1 : x_int);
    const auto at = [&](int i) { return in[std::min(std::max(i, 0), in_len - 1)]; };
    out[x] = c0 * at(left) + c1 * at(left + 1);
  }
  return out;
}

// The ONNX resize of an N x C x spatial... blob, one spatial axis at a time.
std::vector<double> ReferenceResize(const std::vector<float>& x, const std::vector<int>& shape,
                                    const Options& o, std::vector<int>* out_shape) {
  std::vector<double> data(x.begin(), x.end());
  std::vector<int> cur = shape;
  for (size_t axis = 2; axis < shape.size(); ++axis) {
    const size_t s = axis - 2;
    const int in_len = cur[axis];
    int out_len;
    double scale;
    if (!o.size.empty()) {
      // A scale given too maps the coordinates (keep_aspect_ratio_policy).
      out_len = o.size[s];
      scale = o.scale.empty() ? double(out_len) / in_len : double(o.scale[s]);
    } else {
      out_len = static_cast<int>(std::floor(in_len * double(o.scale[s])));
      scale = o.scale[s];
    }
    int outer = 1, inner = 1;
    for (size_t i = 0; i < axis; ++i) outer *= cur[i];
    for (size_t i = axis + 1; i < cur.size(); ++i) inner *= cur[i];
    std::vector<double> next(size_t(outer) * out_len * inner);
    for (int a = 0; a < outer; ++a)
      for (int b = 0; b < inner; ++b) {
        std::vector<double> line(in_len);
        for (int i = 0; i < in_len; ++i) line[i] = data[(size_t(a) * in_len + i) * inner + b];
        const std::vector<double> r = Resize1D(line, out_len, scale, o);
        for (int i = 0; i < out_len; ++i) next[(size_t(a) * out_len + i) * inner + b] = r[i];
      }
    data.swap(next);
    cur[axis] = out_len;
  }
  *out_shape = cur;
  return data;
}

struct Case {
  std::vector<int> shape;
  Options options;
};

Options Linear(const std::string& transform, std::vector<int> size, std::vector<float> scale) {
  Options o;
  o.linear = true;
  o.transform = transform;
  o.size = size;
  o.scale = scale;
  return o;
}
Options Nearest(const std::string& transform, const std::string& nearest,
                std::vector<int> size, std::vector<float> scale) {
  Options o;
  o.transform = transform;
  o.nearest = nearest;
  o.size = size;
  o.scale = scale;
  return o;
}

std::string Describe(const Case& c) {
  std::string s = "shape";
  for (int d : c.shape) s += " " + std::to_string(d);
  return s + ", " + ResizeText(c.options);
}

// gtest names a failing case by this.
void PrintTo(const Case& c, std::ostream* os) { *os << Describe(c); }

// Runs the layer on `x` (of `shape`) and returns the top.
std::vector<float> RunResize(const std::vector<float>& x, const std::vector<int>& shape,
                             const Options& o, std::vector<int>* top_shape) {
  Blob bottom(TestContext(), shape), top(TestContext());
  bottom.WriteData(x);
  auto layer = MakeLayer(ResizeText(o));
  layer->SetUp({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  *top_shape = top.shape();
  return top.ReadData();
}

}  // namespace

class ResizeTest : public ::testing::TestWithParam<Case> {};

TEST_P(ResizeTest, ForwardMatchesOnnxReference) {
  const Case& c = GetParam();
  Blob bottom(TestContext(), c.shape);
  FillGaussian(&bottom, 0.f, 1.f, 7);
  std::vector<int> shape, expected_shape;
  const std::vector<float> y = RunResize(bottom.ReadData(), c.shape, c.options, &shape);
  const std::vector<double> expected =
      ReferenceResize(bottom.ReadData(), c.shape, c.options, &expected_shape);
  ASSERT_EQ(shape, expected_shape) << Describe(c);
  // Nearest copies; linear is a convex mix of at most 8 values of size ~1
  // (float weights and sums): 1e-6.
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(y[i], expected[i], c.options.linear ? 1e-6 : 0.0)
        << Describe(c) << ", element " << i;
}

TEST_P(ResizeTest, GradientMatchesNumeric) {
  const Case& c = GetParam();
  SCOPED_TRACE(Describe(c));
  Blob bottom(TestContext(), c.shape), top(TestContext());
  FillGaussian(&bottom, 0.f, 1.f, 11);
  auto layer = MakeLayer(ResizeText(c.options));
  layer->SetUp({&bottom}, {&top});
  CheckGradient(*layer, {&bottom}, {&top});
}

INSTANTIATE_TEST_SUITE_P(
    Modes, ResizeTest,
    ::testing::Values(
        Case{{1, 1, 3}, Linear("HALF_PIXEL", {}, {2.f})},
        Case{{2, 3, 5, 7}, Linear("ALIGN_CORNERS", {13, 3}, {})},
        Case{{1, 2, 3, 4, 5}, Linear("PYTORCH_HALF_PIXEL", {}, {2.f, 1.5f, 0.5f})},
        Case{{2, 1, 5, 13}, Linear("ASYMMETRIC", {}, {1.7f, 0.6f})},
        Case{{2, 1, 1, 4}, Linear("PYTORCH_HALF_PIXEL", {1, 1}, {})},
        Case{{2, 3, 5, 7}, Nearest("HALF_PIXEL", "ROUND_PREFER_CEIL", {}, {0.6f, 1.7f})},
        Case{{1, 3, 4, 5}, Nearest("ASYMMETRIC", "FLOOR", {}, {3.f, 2.f})},
        Case{{1, 1, 3, 3, 3}, Nearest("ALIGN_CORNERS", "ROUND_PREFER_FLOOR", {5, 1, 7}, {})},
        Case{{1, 2, 13}, Nearest("PYTORCH_HALF_PIXEL", "CEIL", {5}, {})},
        Case{{1, 2, 4, 4}, Nearest("ASYMMETRIC", "ROUND_PREFER_FLOOR", {}, {1.5f, 2.5f})},
        Case{{1, 2, 4, 4}, Nearest("ASYMMETRIC", "ROUND_PREFER_CEIL", {}, {1.5f, 2.5f})},
        Case{{1, 2, 2, 4}, Linear("HALF_PIXEL_SYMMETRIC", {}, {2.3f, 0.6f})},
        Case{{2, 1, 5, 3}, Nearest("HALF_PIXEL_SYMMETRIC", "ROUND_PREFER_FLOOR", {}, {0.7f, 2.94f})},
        Case{{1, 1, 2, 4}, Linear("HALF_PIXEL_SYMMETRIC", {5, 9}, {2.2f, 2.2f})},
        Case{{1, 3, 2, 2}, Nearest("HALF_PIXEL", "ROUND_PREFER_FLOOR", {7, 7}, {3.5f, 3.5f})}));

// Cases from the ONNX operator documentation (Resize's test cases), with
// their expected outputs written out by hand.
TEST(Resize, OnnxDocumentationCases) {
  const std::vector<float> x22{1, 2, 3, 4};
  std::vector<int> shape;
  {  // resize_upsample_scales_nearest: scales 2 x 3, half_pixel, round_prefer_floor.
    const std::vector<float> y = RunResize(x22, {1, 1, 2, 2},
                                           Nearest("HALF_PIXEL", "ROUND_PREFER_FLOOR", {}, {2, 3}),
                                           &shape);
    EXPECT_EQ(shape, (std::vector<int>{1, 1, 4, 6}));
    EXPECT_EQ(y, (std::vector<float>{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                                     3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}));
  }
  {  // resize_upsample_scales_linear: scale 2, half_pixel.
    const std::vector<float> y =
        RunResize(x22, {1, 1, 2, 2}, Linear("HALF_PIXEL", {}, {2, 2}), &shape);
    const std::vector<float> expected{1,   1.25, 1.75, 2,   1.5, 1.75, 2.25, 2.5,
                                      2.5, 2.75, 3.25, 3.5, 3,   3.25, 3.75, 4};
    ASSERT_EQ(y.size(), expected.size());
    for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], expected[i], 1e-6) << i;
  }
  {  // resize_upsample_scales_linear_align_corners: scale 2.
    const std::vector<float> y =
        RunResize(x22, {1, 1, 2, 2}, Linear("ALIGN_CORNERS", {}, {2, 2}), &shape);
    const double t = 1.0 / 3;
    const std::vector<double> expected{1,         1 + t,     1 + 2 * t, 2,         1 + 2 * t, 2,
                                       2 + t,     2 + 2 * t, 2 + t,     2 + 2 * t, 3,
                                       3 + t,     3,         3 + t,     3 + 2 * t, 4};
    ASSERT_EQ(y.size(), expected.size());
    for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], expected[i], 1e-6) << i;
  }
  const std::vector<float> x24{1, 2, 3, 4, 5, 6, 7, 8};
  {  // resize_downsample_scales_linear: scale 0.6 (2 x 4 -> 1 x 2).
    const std::vector<float> y =
        RunResize(x24, {1, 1, 2, 4}, Linear("HALF_PIXEL", {}, {0.6f, 0.6f}), &shape);
    EXPECT_EQ(shape, (std::vector<int>{1, 1, 1, 2}));
    EXPECT_NEAR(y[0], 2.6666665, 1e-6);
    EXPECT_NEAR(y[1], 4.3333331, 1e-6);
  }
  {  // resize_downsample_scales_nearest: scale 0.6.
    const std::vector<float> y = RunResize(
        x24, {1, 1, 2, 4}, Nearest("HALF_PIXEL", "ROUND_PREFER_FLOOR", {}, {0.6f, 0.6f}), &shape);
    EXPECT_EQ(y, (std::vector<float>{1, 3}));
  }
  {  // Upsample (opset 9) nearest, scale 2: asymmetric and floor.
    const std::vector<float> y = RunResize({1, 2, 3}, {1, 1, 3},
                                           Nearest("ASYMMETRIC", "FLOOR", {}, {2}), &shape);
    EXPECT_EQ(y, (std::vector<float>{1, 1, 2, 2, 3, 3}));
  }
  {  // Scale 2 nearest, asymmetric: the halves 0.5, 1.5 round by nearest_mode.
    EXPECT_EQ(RunResize({1, 2, 3}, {1, 1, 3},
                        Nearest("ASYMMETRIC", "ROUND_PREFER_FLOOR", {}, {2}), &shape),
              (std::vector<float>{1, 1, 2, 2, 3, 3}));
    EXPECT_EQ(RunResize({1, 2, 3}, {1, 1, 3},
                        Nearest("ASYMMETRIC", "ROUND_PREFER_CEIL", {}, {2}), &shape),
              (std::vector<float>{1, 2, 2, 3, 3, 3}));
  }
  {  // floor(in * scale) in double, as ONNX's reference: 5 * 1.4f is
     // 6.99999988, so 6 outputs (float arithmetic would round it to 7).
    RunResize({1, 2, 3, 4, 5}, {1, 1, 5}, Nearest("ASYMMETRIC", "FLOOR", {}, {1.4f}), &shape);
    EXPECT_EQ(shape, (std::vector<int>{1, 1, 6}));
  }
  {  // One output: pytorch_half_pixel reads coordinate 0, half_pixel the middle.
    EXPECT_EQ(RunResize({1, 2, 3, 4}, {1, 1, 4}, Linear("PYTORCH_HALF_PIXEL", {1}, {}), &shape),
              (std::vector<float>{1}));
    EXPECT_EQ(RunResize({1, 2, 3, 4}, {1, 1, 4}, Linear("HALF_PIXEL", {1}, {}), &shape),
              (std::vector<float>{2.5}));
  }
}

// Backward by hand: nearest scale 2 (asymmetric, floor) sends each input the
// sum of its two outputs' gradients; linear half_pixel scale 2 on 1 x 1 x 2:
// outputs read x at 0, 0.25, 0.75, 1 (clamped: -0.25 -> 0, 1.25 -> 1).
TEST(Resize, BackwardByHand) {
  {
    Blob bottom(TestContext(), {1, 1, 3}), top(TestContext());
    auto layer = MakeLayer(ResizeText(Nearest("ASYMMETRIC", "FLOOR", {}, {2})));
    layer->SetUp({&bottom}, {&top});
    layer->Forward({&bottom}, {&top});
    top.WriteDiff(std::vector<float>{1, 2, 3, 4, 5, 6});
    bottom.SetDiff(100.f);  // overwritten, not added to
    layer->Backward({&top}, {true}, {&bottom});
    EXPECT_EQ(bottom.ReadDiff(), (std::vector<float>{3, 7, 11}));
  }
  {
    Blob bottom(TestContext(), {1, 1, 2}), top(TestContext());
    auto layer = MakeLayer(ResizeText(Linear("HALF_PIXEL", {}, {2})));
    layer->SetUp({&bottom}, {&top});
    layer->Forward({&bottom}, {&top});
    top.WriteDiff(std::vector<float>{1, 2, 3, 4});
    layer->Backward({&top}, {true}, {&bottom});
    // x0 gets 1 + 0.75 * 2 + 0.25 * 3, x1 gets 0.25 * 2 + 0.75 * 3 + 4.
    const std::vector<float> dx = bottom.ReadDiff();
    EXPECT_NEAR(dx[0], 3.25f, 1e-6);
    EXPECT_NEAR(dx[1], 6.75f, 1e-6);
  }
}

TEST(Resize, BadParametersAndShapesAreErrors) {
  struct ErrorCase {
    std::vector<int> shape;
    std::string param, message;
  };
  const std::vector<ErrorCase> cases = {
      {{1, 1, 4, 4}, "", "needs `size` or `scale`"},
      {{1, 1, 4, 4}, "size: 2 size: 2 scale: 2", "has 2 sizes but 1 scales"},
      {{1, 1, 4, 4}, "size: 8", "size has 1 value(s) for the 2 spatial axes"},
      {{1, 1, 4, 4}, "scale: 2 scale: -1", "scale 1 is -1; it must be positive"},
      {{1, 1, 4, 4}, "scale: 2 scale: 0.2", "leaves spatial axis 1 of the input"},
      {{1, 4}, "size: 2", "resizes 1 to 3 spatial axes"},
      {{1, 1, 2, 2, 2, 2}, "scale: 2 scale: 2 scale: 2 scale: 2", "resizes 1 to 3 spatial axes"},
      {{1, 1, 4}, "size: 0", "size 0 is 0; it must be positive"},
  };
  for (const ErrorCase& c : cases) {
    Blob x(TestContext(), c.shape), y(TestContext());
    try {
      MakeLayer("type: 'Resize' resize_param { " + c.param + " }")->SetUp({&x}, {&y});
      ADD_FAILURE() << c.param << " accepted";
    } catch (const Error& e) {
      const std::string error = e.what();
      EXPECT_NE(error.find("layer 'test_layer' (Resize)"), std::string::npos) << error;
      EXPECT_NE(error.find(c.message), std::string::npos) << c.param << ": " << error;
    }
  }
}

}  // namespace test
}  // namespace dlcaffe
