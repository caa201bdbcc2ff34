#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "util/error_of.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

struct NormalizeCase {
  bool across_spatial, channel_shared;
};

std::string LayerText(const NormalizeCase& c, float eps = 1e-10f) {
  return std::string("type: 'Normalize' norm_param { across_spatial: ") +
         (c.across_spatial ? "true" : "false") + " channel_shared: " +
         (c.channel_shared ? "true" : "false") + " eps: " + std::to_string(eps) +
         " scale_filler { type: 'gaussian' mean: 1 std: 0.5 } }";
}

// scale * x / sqrt(sum x^2 + eps) over each sample or each position, in double.
std::vector<double> Reference(const NormalizeCase& c, const std::vector<float>& x,
                              const std::vector<float>& scale, int N, int C, int inner, double eps) {
  std::vector<double> y(x.size());
  for (int n = 0; n < N; ++n)
    for (int s = 0; s < (c.across_spatial ? 1 : inner); ++s) {
      double sum = 0;
      for (int ch = 0; ch < C; ++ch)
        for (int t = c.across_spatial ? 0 : s; t < (c.across_spatial ? inner : s + 1); ++t) {
          const double v = x[(size_t(n) * C + ch) * inner + t];
          sum += v * v;
        }
      const double r = std::sqrt(sum + eps);
      for (int ch = 0; ch < C; ++ch)
        for (int t = c.across_spatial ? 0 : s; t < (c.across_spatial ? inner : s + 1); ++t) {
          const size_t i = (size_t(n) * C + ch) * inner + t;
          y[i] = scale[c.channel_shared ? 0 : ch] * x[i] / r;
        }
    }
  return y;
}

const NormalizeCase kCases[] = {{true, true}, {true, false}, {false, true}, {false, false}};

}  // namespace

class NormalizeTest : public ::testing::TestWithParam<std::vector<int>> {};

TEST_P(NormalizeTest, ForwardMatchesReference) {
  const std::vector<int>& shape = GetParam();
  const int N = shape[0], C = shape[1];
  const int inner = static_cast<int>(Blob(TestContext(), shape).count() / (N * C));
  for (const NormalizeCase& c : kCases) {
    SCOPED_TRACE(LayerText(c));
    Blob x(TestContext(), shape), y(TestContext());
    FillGaussian(&x, 0.f, 1.f, 3);
    auto layer = MakeLayer(LayerText(c));
    layer->SetUp({&x}, {&y});
    ASSERT_EQ(layer->blobs()[0]->count(), c.channel_shared ? 1 : C);
    layer->Forward({&x}, {&y});
    const std::vector<double> expected =
        Reference(c, x.ReadData(), layer->blobs()[0]->ReadData(), N, C, inner, 1e-10);
    const std::vector<float> got = y.ReadData();
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], expected[i], 2e-6 * (1 + std::fabs(expected[i]))) << i;
  }
}

// The input's and the scale's gradients, with an eps that matters.
TEST_P(NormalizeTest, GradientMatchesNumeric) {
  for (const NormalizeCase& c : kCases) {
    SCOPED_TRACE(LayerText(c, 0.5f));
    Blob x(TestContext(), GetParam()), y(TestContext());
    FillGaussian(&x, 0.f, 1.f, 5);
    auto layer = MakeLayer(LayerText(c, 0.5f));
    layer->SetUp({&x}, {&y});
    CheckGradient(*layer, {&x}, {&y});
  }
}

INSTANTIATE_TEST_SUITE_P(OddShapes, NormalizeTest,
                         ::testing::Values(std::vector<int>{2, 3, 5, 7}, std::vector<int>{1, 5, 1, 1},
                                           std::vector<int>{3, 1, 4, 3}, std::vector<int>{2, 7, 13}));

// SSD's conv4_3_norm: per position, one scale per channel, 20 at start.
TEST(Normalize, DefaultScaleIsOneAndFillerSetsIt) {
  Blob x(TestContext(), {1, 4, 2, 3}), y(TestContext());
  FillGaussian(&x, 0.f, 1.f, 7);
  auto plain = MakeLayer("type: 'Normalize'");
  plain->SetUp({&x}, {&y});
  EXPECT_EQ(plain->blobs()[0]->ReadData(), std::vector<float>({1.f}));
  auto ssd = MakeLayer("type: 'Normalize' norm_param { across_spatial: false channel_shared: false "
                       "scale_filler { type: 'constant' value: 20 } }");
  ssd->SetUp({&x}, {&y});
  EXPECT_EQ(ssd->blobs()[0]->ReadData(), std::vector<float>(4, 20.f));
}

TEST(Normalize, InPlaceAndMismatchedScalesAreRefused) {
  Blob x(TestContext(), {1, 4, 2, 3}), y(TestContext());
  EXPECT_NE(ErrorOf([&] { MakeLayer("type: 'Normalize'")->SetUp({&x}, {&x}); }).find("in place"),
            std::string::npos);
  auto layer = MakeLayer("type: 'Normalize' norm_param { channel_shared: false }");
  layer->SetUp({&x}, {&y});
  Blob wider(TestContext(), {1, 6, 2, 3});
  EXPECT_NE(ErrorOf([&] { layer->Reshape({&wider}, {&y}); }).find("4 channel scales for an input of 6"),
            std::string::npos);
}

}  // namespace test
}  // namespace dlcaffe
