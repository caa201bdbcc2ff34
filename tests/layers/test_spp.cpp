#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "dlcaffe/error.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

// Caffe's pooling of one plane with the given geometry (CEIL rounding, the
// last window dropped if it starts in the padding; AVE divides by the window
// clipped to the padded image, MAX takes the window clipped to the image).
std::vector<double> PoolPlane(const float* x, int height, int width, int kernel_h,
                              int kernel_w, int pad_h, int pad_w, bool max) {
  auto pooled_size = [](int size, int kernel, int pad) {
    int pooled = static_cast<int>(std::ceil(double(size + 2 * pad - kernel) / kernel)) + 1;
    if (pad > 0 && (pooled - 1) * kernel >= size + pad) --pooled;
    return pooled;
  };
  const int ph_n = pooled_size(height, kernel_h, pad_h), pw_n = pooled_size(width, kernel_w, pad_w);
  std::vector<double> out;
  for (int ph = 0; ph < ph_n; ++ph)
    for (int pw = 0; pw < pw_n; ++pw) {
      int hs = ph * kernel_h - pad_h, ws = pw * kernel_w - pad_w;
      int he = std::min(hs + kernel_h, height + pad_h), we = std::min(ws + kernel_w, width + pad_w);
      const int pool_size = (he - hs) * (we - ws);
      hs = std::max(hs, 0);
      ws = std::max(ws, 0);
      he = std::min(he, height);
      we = std::min(we, width);
      double value = max ? -1e30 : 0.0;
      for (int h = hs; h < he; ++h)
        for (int w = ws; w < we; ++w)
          value = max ? std::max(value, double(x[h * width + w])) : value + x[h * width + w];
      out.push_back(max ? value : value / pool_size);
    }
  return out;
}

// The SPP top: per image, level by level, C x bins x bins.
std::vector<float> ReferenceSpp(const std::vector<float>& x, int num, int channels, int height,
                                int width, int pyramid_height, bool max) {
  std::vector<float> y;
  for (int n = 0; n < num; ++n)
    for (int l = 0; l < pyramid_height; ++l) {
      const int bins = 1 << l;
      const int kh = (height + bins - 1) / bins, kw = (width + bins - 1) / bins;
      const int pad_h = (kh * bins - height + 1) / 2, pad_w = (kw * bins - width + 1) / 2;
      for (int c = 0; c < channels; ++c) {
        const std::vector<double> plane =
            PoolPlane(&x[(size_t(n) * channels + c) * height * width], height, width, kh, kw,
                      pad_h, pad_w, max);
        EXPECT_EQ(plane.size(), size_t(bins * bins)) << "level " << l;
        for (double v : plane) y.push_back(static_cast<float>(v));
      }
    }
  return y;
}

// Distinct values 0.1 apart in random order, so the gradient checker's step
// never changes a max window's winner.
void FillDistinct(Blob* blob, unsigned seed) {
  std::vector<float> values(blob->count());
  std::iota(values.begin(), values.end(), 0.f);
  std::shuffle(values.begin(), values.end(), std::mt19937(seed));
  for (float& v : values) v = 0.1f * (v - blob->count() / 2);
  blob->WriteData(values);
}

std::string Spp(int pyramid_height, const char* pool) {
  return "name: 'spp' type: 'SPP' spp_param { pyramid_height: " +
         std::to_string(pyramid_height) + " pool: " + pool + " }";
}

void CheckSpp(int num, int channels, int height, int width, int pyramid_height, bool max) {
  SCOPED_TRACE(std::to_string(height) + " x " + std::to_string(width) + " pyramid " +
               std::to_string(pyramid_height) + (max ? " MAX" : " AVE"));
  Blob bottom(TestContext(), {num, channels, height, width}), top(TestContext());
  FillDistinct(&bottom, 3 + height);
  auto layer = MakeLayer(Spp(pyramid_height, max ? "MAX" : "AVE"));
  layer->SetUp({&bottom}, {&top});
  const int bins = ((1 << (2 * pyramid_height)) - 1) / 3;  // 1 + 4 + 16 + ...
  const std::vector<int> expected_shape =
      pyramid_height == 1 ? std::vector<int>{num, channels, 1, 1}
                          : std::vector<int>{num, channels * bins};
  ASSERT_EQ(top.shape(), expected_shape);
  layer->Forward({&bottom}, {&top});
  const std::vector<float> expected =
      ReferenceSpp(bottom.ReadData(), num, channels, height, width, pyramid_height, max);
  const std::vector<float> y = top.ReadData();
  ASSERT_EQ(y.size(), expected.size());
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(y[i], expected[i], 1e-4f * (1.f + std::fabs(expected[i]))) << "element " << i;
  GradientCheckOptions options;
  options.max_checks_per_blob = 120;
  CheckGradient(*layer, {&bottom}, {&top}, {}, options);
}

TEST(SPP, MaxThreeLevels) { CheckSpp(2, 3, 9, 7, 3, true); }

TEST(SPP, AveThreeLevels) { CheckSpp(2, 2, 13, 6, 3, false); }

TEST(SPP, TwoLevelsOddSizes) {
  CheckSpp(1, 3, 3, 5, 2, true);
  CheckSpp(3, 1, 5, 3, 2, false);
}

// pyramid_height 1 is a single global pooling with Caffe's 4-D top.
TEST(SPP, OneLevelKeepsPoolingShape) { CheckSpp(2, 3, 5, 4, 1, true); }

// A new bottom size re-derives every level's kernel and pad.
TEST(SPP, ReshapeToAnotherSize) {
  Blob bottom(TestContext(), {2, 2, 9, 7}), top(TestContext());
  auto layer = MakeLayer(Spp(3, "MAX"));
  layer->SetUp({&bottom}, {&top});
  bottom.Reshape({1, 2, 13, 6});
  FillDistinct(&bottom, 5);
  layer->Reshape({&bottom}, {&top});
  ASSERT_EQ(top.shape(), (std::vector<int>{1, 2 * 21}));
  layer->Forward({&bottom}, {&top});
  const std::vector<float> expected = ReferenceSpp(bottom.ReadData(), 1, 2, 13, 6, 3, true);
  const std::vector<float> y = top.ReadData();
  for (size_t i = 0; i < y.size(); ++i) ASSERT_FLOAT_EQ(y[i], expected[i]) << "element " << i;
}

TEST(SPP, ClearErrors) {
  auto expect_error = [](const std::string& text, const std::vector<int>& shape,
                         const std::string& fragment) {
    Blob bottom(TestContext(), shape), top(TestContext());
    try {
      auto layer = MakeLayer(text);
      layer->SetUp({&bottom}, {&top});
      ADD_FAILURE() << "no error for " << text;
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("spp"), std::string::npos) << message;
      EXPECT_NE(message.find(fragment), std::string::npos) << message;
    }
  };
  expect_error("name: 'spp' type: 'SPP' spp_param { }", {1, 2, 5, 5}, "pyramid_height");
  expect_error(Spp(3, "MAX"), {1, 2, 5, 5}, "pyramid level 2: a 5 x 5 input is too small");
  expect_error(Spp(2, "MAX"), {2, 5, 5}, "4 axes");
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
