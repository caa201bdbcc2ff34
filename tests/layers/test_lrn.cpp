#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

struct LRNSettings {
  int size;
  float alpha, beta, k;
};

std::string LRNProto(const LRNSettings& s, bool within) {
  return "type: 'LRN' lrn_param { local_size: " + std::to_string(s.size) +
         " alpha: " + std::to_string(s.alpha) + " beta: " + std::to_string(s.beta) +
         " k: " + std::to_string(s.k) +
         (within ? " norm_region: WITHIN_CHANNEL" : " norm_region: ACROSS_CHANNELS") + " }";
}

// Caffe's LRNLayer::CrossChannelForward_cpu: a zero-padded window of `size`
// channels, scale = k + alpha / size * sum of squares.
std::vector<double> ReferenceAcross(const std::vector<float>& x, const std::vector<int>& shape,
                                    const LRNSettings& s) {
  const int N = shape[0], C = shape[1], HW = shape[2] * shape[3];
  const int pre = (s.size - 1) / 2;
  std::vector<double> y(x.size());
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c)
      for (int p = 0; p < HW; ++p) {
        double sum = 0;
        for (int cc = c - pre; cc <= c - pre + s.size - 1; ++cc) {
          if (cc < 0 || cc >= C) continue;
          const double v = x[(n * C + cc) * HW + p];
          sum += v * v;
        }
        const int i = (n * C + c) * HW + p;
        y[i] = x[i] * std::pow(s.k + s.alpha / s.size * sum, -double(s.beta));
      }
  return y;
}

// Caffe's WITHIN_CHANNEL net, layer by layer: square (Power), AVE pooling
// (pad (size-1)/2, stride 1, divisor from Caffe's clipped window), then
// Power(shift 1, scale alpha, power -beta) and the product with x.
std::vector<double> ReferenceWithin(const std::vector<float>& x, const std::vector<int>& shape,
                                    const LRNSettings& s) {
  const int planes = shape[0] * shape[1], H = shape[2], W = shape[3];
  const int pad = (s.size - 1) / 2;
  std::vector<double> y(x.size());
  for (int pl = 0; pl < planes; ++pl)
    for (int h = 0; h < H; ++h)
      for (int w = 0; w < W; ++w) {
        int hstart = h - pad, wstart = w - pad;
        int hend = std::min(hstart + s.size, H + pad), wend = std::min(wstart + s.size, W + pad);
        const int pool_size = (hend - hstart) * (wend - wstart);
        hstart = std::max(hstart, 0);
        wstart = std::max(wstart, 0);
        hend = std::min(hend, H);
        wend = std::min(wend, W);
        double sum = 0;
        for (int hh = hstart; hh < hend; ++hh)
          for (int ww = wstart; ww < wend; ++ww) {
            const double v = x[(pl * H + hh) * W + ww];
            sum += v * v;
          }
        const int i = (pl * H + h) * W + w;
        y[i] = x[i] * std::pow(1.0 + s.alpha * (sum / pool_size), -double(s.beta));
      }
  return y;
}

const LRNSettings kSettings[] = {
    {5, 1.f, 0.75f, 1.f},     // Caffe's defaults
    {3, 0.5f, 0.6f, 2.f},     // AlexNet-like k
    {1, 2.f, 1.5f, 0.5f},     // a window of one
    {7, 1e-4f * 49, 0.75f, 1.f},
};

const std::vector<int> kShapes[] = {{2, 7, 3, 5}, {1, 3, 13, 13}, {3, 1, 1, 1}, {1, 13, 2, 1}};

}  // namespace

TEST(LRN, AcrossChannelsForwardMatchesReference) {
  for (const auto& shape : kShapes)
    for (const LRNSettings& s : kSettings) {
      SCOPED_TRACE(LRNProto(s, false));
      Blob x(TestContext(), shape), y(TestContext());
      FillGaussian(&x, 0.f, 1.5f, 3);
      auto layer = MakeLayer(LRNProto(s, false));
      layer->SetUp({&x}, {&y});
      ASSERT_EQ(y.shape(), x.shape());
      layer->Forward({&x}, {&y});
      std::vector<double> expected = ReferenceAcross(x.ReadData(), shape, s);
      std::vector<float> got = y.ReadData();
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], expected[i], 1e-5 * std::max(1.0, std::fabs(expected[i]))) << i;
    }
}

TEST(LRN, WithinChannelForwardMatchesCaffesLayerComposition) {
  for (const auto& shape : kShapes)
    for (const LRNSettings& s : kSettings) {
      SCOPED_TRACE(LRNProto(s, true));
      Blob x(TestContext(), shape), y(TestContext());
      FillGaussian(&x, 0.f, 1.5f, 4);
      auto layer = MakeLayer(LRNProto(s, true));
      layer->SetUp({&x}, {&y});
      layer->Forward({&x}, {&y});
      std::vector<double> expected = ReferenceWithin(x.ReadData(), shape, s);
      std::vector<float> got = y.ReadData();
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], expected[i], 1e-5 * std::max(1.0, std::fabs(expected[i]))) << i;
    }
}

TEST(LRN, GradientMatchesNumeric) {
  const LRNSettings settings[] = {{3, 0.8f, 0.75f, 1.5f}, {5, 2.f, 0.6f, 1.f}};
  for (bool within : {false, true})
    for (const LRNSettings& s : settings) {
      SCOPED_TRACE(LRNProto(s, within));
      Blob x(TestContext(), {2, 6, 3, 4}), y(TestContext());
      FillGaussian(&x, 0.f, 1.f, 5);
      auto layer = MakeLayer(LRNProto(s, within));
      layer->SetUp({&x}, {&y});
      GradientCheckOptions options;
      options.max_checks_per_blob = 70;
      CheckGradient(*layer, {&x}, {&y}, {}, options);
    }
}

// In place, forward keeps the input for backward: results equal the
// out-of-place layer's.
TEST(LRN, InPlaceMatchesOutOfPlace) {
  for (bool within : {false, true}) {
    const LRNSettings s{3, 1.f, 0.75f, 2.f};
    Blob x(TestContext(), {2, 5, 3, 3}), y(TestContext()), inplace(TestContext(), {2, 5, 3, 3});
    FillGaussian(&x, 0.f, 1.f, 6);
    inplace.WriteData(x.ReadData());
    auto layer = MakeLayer(LRNProto(s, within));
    auto layer_in_place = MakeLayer(LRNProto(s, within));
    layer->SetUp({&x}, {&y});
    layer_in_place->SetUp({&inplace}, {&inplace});
    layer->Forward({&x}, {&y});
    layer_in_place->Forward({&inplace}, {&inplace});
    std::vector<float> dy(x.count());
    for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.1f * float(i % 11) - 0.5f;
    y.WriteDiff(dy);
    inplace.WriteDiff(dy);
    layer->Backward({&y}, {true}, {&x});
    layer_in_place->Backward({&inplace}, {true}, {&inplace});
    std::vector<float> y_out = y.ReadData(), y_in = inplace.ReadData();
    std::vector<float> dx_out = x.ReadDiff(), dx_in = inplace.ReadDiff();
    for (size_t i = 0; i < y_out.size(); ++i) {
      EXPECT_FLOAT_EQ(y_in[i], y_out[i]) << i;
      EXPECT_FLOAT_EQ(dx_in[i], dx_out[i]) << i;
    }
  }
}

TEST(LRN, ParameterErrors) {
  Blob x(TestContext(), {2, 3, 4, 4}), y(TestContext());
  EXPECT_THROW(MakeLayer("type: 'LRN' lrn_param { local_size: 4 }")->SetUp({&x}, {&y}), Error);
  Blob flat(TestContext(), {2, 3});
  EXPECT_THROW(MakeLayer("type: 'LRN'")->SetUp({&flat}, {&y}), Error);
}

}  // namespace test
}  // namespace dlcaffe
