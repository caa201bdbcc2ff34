#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

struct Im2colCase {
  int num, channels;
  std::vector<int> input, kernel, stride, pad, dilation;

  // 2-D cases spell the geometry with _h/_w, others per axis.
  std::string Prototxt(bool force_nd = false) const {
    std::string s = "name: 'im2col' type: 'Im2col' convolution_param {";
    if (input.size() == 2) {
      s += " kernel_h: " + std::to_string(kernel[0]) + " kernel_w: " + std::to_string(kernel[1]);
      s += " stride_h: " + std::to_string(stride[0]) + " stride_w: " + std::to_string(stride[1]);
      s += " pad_h: " + std::to_string(pad[0]) + " pad_w: " + std::to_string(pad[1]);
      s += " dilation: " + std::to_string(dilation[0]) + " dilation: " +
           std::to_string(dilation[1]);
    } else {
      for (size_t d = 0; d < input.size(); ++d)
        s += " kernel_size: " + std::to_string(kernel[d]) + " stride: " +
             std::to_string(stride[d]) + " pad: " + std::to_string(pad[d]) +
             " dilation: " + std::to_string(dilation[d]);
    }
    if (force_nd) s += " force_nd_im2col: true";
    return s + " }";
  }
  std::vector<int> Output() const {
    std::vector<int> out(input.size());
    for (size_t d = 0; d < input.size(); ++d)
      out[d] = (input[d] + 2 * pad[d] - (dilation[d] * (kernel[d] - 1) + 1)) / stride[d] + 1;
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

// top[n][c * kernel_area + k][p] = the input under kernel tap k of window p,
// 0 in the padding.
std::vector<float> ReferenceIm2col(const Im2colCase& c, const std::vector<float>& x) {
  const std::vector<int> out = c.Output();
  const int in_area = Volume(c.input), out_area = Volume(out), k_area = Volume(c.kernel);
  std::vector<float> y(size_t(c.num) * c.channels * k_area * out_area);
  for (int n = 0; n < c.num; ++n)
    for (int ch = 0; ch < c.channels; ++ch)
      for (int k = 0; k < k_area; ++k)
        for (int p = 0; p < out_area; ++p) {
          const std::vector<int> kp = Unflatten(k, c.kernel), op = Unflatten(p, out);
          int flat = 0;
          bool inside = true;
          for (size_t d = 0; d < out.size(); ++d) {
            const int i = op[d] * c.stride[d] - c.pad[d] + kp[d] * c.dilation[d];
            inside = inside && i >= 0 && i < c.input[d];
            flat = flat * c.input[d] + i;
          }
          y[((size_t(n) * c.channels + ch) * k_area + k) * out_area + p] =
              inside ? x[(size_t(n) * c.channels + ch) * in_area + flat] : 0.f;
        }
  return y;
}

void CheckIm2col(const Im2colCase& c, bool force_nd = false) {
  SCOPED_TRACE(c.Prototxt(force_nd));
  std::vector<int> shape = {c.num, c.channels};
  shape.insert(shape.end(), c.input.begin(), c.input.end());
  Blob bottom(TestContext(), shape), top(TestContext());
  FillUniform(&bottom, -1.f, 1.f, 17);
  auto layer = MakeLayer(c.Prototxt(force_nd));
  layer->SetUp({&bottom}, {&top});
  EXPECT_TRUE(layer->blobs().empty());
  std::vector<int> top_shape = {c.num, c.channels * Volume(c.kernel)};
  for (int d : c.Output()) top_shape.push_back(d);
  ASSERT_EQ(top.shape(), top_shape);
  layer->Forward({&bottom}, {&top});
  EXPECT_EQ(top.ReadData(), ReferenceIm2col(c, bottom.ReadData()));
  GradientCheckOptions options;
  options.max_checks_per_blob = 100;
  CheckGradient(*layer, {&bottom}, {&top}, {}, options);
}

// Both shapes of the 2-D kernels, whatever this device would pick.
class Im2colTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { SetTestOption("kernel_shape", GetParam()); }
  void TearDown() override { ResetTestOption("kernel_shape"); }
};

TEST_P(Im2colTest, TwoAxesPadStrideDilation) {
  CheckIm2col({2, 3, {7, 6}, {3, 2}, {2, 1}, {1, 0}, {1, 2}});
  CheckIm2col({1, 1, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {1, 1}});
}

TEST_P(Im2colTest, TwoAxesForcedNd) {
  CheckIm2col({2, 3, {7, 6}, {3, 2}, {2, 1}, {1, 0}, {1, 2}}, true);
}

INSTANTIATE_TEST_SUITE_P(KernelShapes, Im2colTest, ::testing::Values("cpu", "gpu"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

TEST(Im2col, ThreeAxes) { CheckIm2col({2, 2, {4, 3, 5}, {2, 3, 2}, {1, 1, 2}, {0, 1, 1}, {2, 1, 1}}); }

TEST(Im2col, OneAxis) { CheckIm2col({3, 2, {13}, {3}, {2}, {1}, {1}}); }

}  // namespace
}  // namespace test
}  // namespace dlcaffe
