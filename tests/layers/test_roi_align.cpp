// RoiAlign against torchvision's roi_align written out (bilinear samples,
// bins, the sampling grid, regions at least 1 x 1 unless half_pixel) on odd
// shapes: several images, regions partly outside the map, fixed and
// adaptive sampling, both coordinate modes, a spatial scale; an image index
// out of range gives NaN; a gradient asked for the features is an error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "util/error_of.hpp"
#include "util/layer_test_util.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

float Bilinear(const float* x, int height, int width, float y, float xx) {
  if (y < -1.f || y > height || xx < -1.f || xx > width) return 0.f;
  y = std::max(y, 0.f);
  xx = std::max(xx, 0.f);
  int y_low = static_cast<int>(y), x_low = static_cast<int>(xx), y_high, x_high;
  if (y_low >= height - 1) {
    y_high = y_low = height - 1;
    y = static_cast<float>(y_low);
  } else {
    y_high = y_low + 1;
  }
  if (x_low >= width - 1) {
    x_high = x_low = width - 1;
    xx = static_cast<float>(x_low);
  } else {
    x_high = x_low + 1;
  }
  const float ly = y - y_low, lx = xx - x_low, hy = 1.f - ly, hx = 1.f - lx;
  return hy * hx * x[y_low * width + x_low] + hy * lx * x[y_low * width + x_high] +
         ly * hx * x[y_high * width + x_low] + ly * lx * x[y_high * width + x_high];
}

struct Settings {
  int pooled_h, pooled_w, sampling;
  float scale;
  bool half_pixel;
};

std::vector<float> Reference(const std::vector<float>& x, const std::vector<int>& shape,
                             const std::vector<float>& rois, const std::vector<float>& images,
                             const Settings& s) {
  const int channels = shape[1], height = shape[2], width = shape[3];
  std::vector<float> out;
  for (size_t r = 0; r < images.size(); ++r) {
    const float* roi = &rois[4 * r];
    const float offset = s.half_pixel ? 0.5f : 0.f;
    const float sw = roi[0] * s.scale - offset, sh = roi[1] * s.scale - offset;
    float rw = roi[2] * s.scale - offset - sw, rh = roi[3] * s.scale - offset - sh;
    if (!s.half_pixel) rw = std::max(rw, 1.f), rh = std::max(rh, 1.f);
    const float bh = rh / s.pooled_h, bw = rw / s.pooled_w;
    const int gh = s.sampling > 0 ? s.sampling : static_cast<int>(std::ceil(rh / s.pooled_h));
    const int gw = s.sampling > 0 ? s.sampling : static_cast<int>(std::ceil(rw / s.pooled_w));
    for (int c = 0; c < channels; ++c) {
      const float* plane = &x[(static_cast<size_t>(images[r]) * channels + c) * height * width];
      for (int ph = 0; ph < s.pooled_h; ++ph)
        for (int pw = 0; pw < s.pooled_w; ++pw) {
          float sum = 0.f;
          for (int iy = 0; iy < gh; ++iy)
            for (int ix = 0; ix < gw; ++ix)
              sum += Bilinear(plane, height, width, sh + ph * bh + (iy + .5f) * bh / gh,
                              sw + pw * bw + (ix + .5f) * bw / gw);
          out.push_back(sum / std::max(gh * gw, 1));
        }
    }
  }
  return out;
}

std::string Layer(const Settings& s) {
  return "type: 'RoiAlign' roi_align_param { output_height: " + std::to_string(s.pooled_h) +
         " output_width: " + std::to_string(s.pooled_w) +
         " sampling_ratio: " + std::to_string(s.sampling) +
         " spatial_scale: " + std::to_string(s.scale) +
         " half_pixel: " + (s.half_pixel ? "true" : "false") + " }";
}

}  // namespace

TEST(RoiAlign, MatchesTorchvisionsArithmetic) {
  const std::vector<int> shape = {2, 3, 9, 11};
  Blob x(TestContext(), shape), rois(TestContext(), {5, 4}), images(TestContext(), {5}),
      y(TestContext());
  FillGaussian(&x, 0.f, 1.f, 3);
  // A box inside, one crossing the edge, a thin one, one past the map, one
  // smaller than a pixel.
  const std::vector<float> r = {2, 1, 15, 12,  -4, -3, 8, 6,  5, 5, 19, 6,  18, 14, 30, 25,
                                7.2f, 3.1f, 7.4f, 3.3f};
  const std::vector<float> im = {0, 1, 1, 0, 1};
  rois.WriteData(r);
  images.WriteData(im);
  for (const Settings& s : std::vector<Settings>{{7, 7, 2, 0.5f, false},
                                                 {3, 5, 0, 0.5f, false},
                                                 {4, 2, 0, 0.5f, true},
                                                 {2, 2, 1, 1.f, false}}) {
    SCOPED_TRACE(Layer(s));
    auto layer = MakeLayer(Layer(s));
    layer->SetUp({&x, &rois, &images}, {&y});
    ASSERT_EQ(y.shape(), (std::vector<int>{5, 3, s.pooled_h, s.pooled_w}));
    layer->Forward({&x, &rois, &images}, {&y});
    const std::vector<float> got = y.ReadData(), want = Reference(x.ReadData(), shape, r, im, s);
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5f) << i;
  }
}

TEST(RoiAlign, ImageOutOfRangeAndFeatureGradientAreReported) {
  Blob x(TestContext(), {1, 2, 4, 4}), rois(TestContext(), {1, 4}), images(TestContext(), {1}),
      y(TestContext());
  FillGaussian(&x, 0.f, 1.f, 4);
  rois.WriteData({0, 0, 3, 3});
  images.WriteData({1});
  const Settings s{2, 2, 1, 1.f, false};
  auto layer = MakeLayer(Layer(s));
  layer->SetUp({&x, &rois, &images}, {&y});
  layer->Forward({&x, &rois, &images}, {&y});
  for (float v : y.ReadData()) EXPECT_TRUE(std::isnan(v));
  const std::string e =
      ErrorOf([&] { layer->Backward({&y}, {true, false, false}, {&x, &rois, &images}); });
  EXPECT_TRUE(Contains(e, "has no gradient for the features")) << e;
}

}  // namespace test
}  // namespace dlcaffe
