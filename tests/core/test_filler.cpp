// Weight fillers (include/dlcaffe/filler.hpp, src/cl/filler.cl): the random
// ones are checked against their distributions' moments, proportions and
// independence on odd sizes, the deterministic ones against a plain formula
// here, and every fill against the seed that made it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "dlcaffe/error.hpp"
#include "dlcaffe/filler.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

caffe::FillerParameter Filler(const std::string& text_type) {
  caffe::FillerParameter filler;
  filler.set_type(text_type);
  return filler;
}

std::vector<float> Fill(const caffe::FillerParameter& filler, const std::vector<int>& shape,
                        uint64_t seed = 1701) {
  Context& ctx = TestContext();
  ctx.Seed(seed);
  Blob blob(ctx, shape);
  FillBlob(filler, &blob);
  return blob.ReadData();
}

struct Moments {
  double mean = 0, variance = 0, kurtosis = 0;
};
Moments MomentsOf(const std::vector<float>& v) {
  Moments m;
  for (float x : v) m.mean += x;
  m.mean /= v.size();
  double m2 = 0, m4 = 0;
  for (float x : v) {
    const double d = x - m.mean;
    m2 += d * d;
    m4 += d * d * d * d;
  }
  m.variance = m2 / v.size();
  m.kurtosis = (m4 / v.size()) / (m.variance * m.variance);
  return m;
}

// Pearson correlation of v[i] and v[i + lag].
double Correlation(const std::vector<float>& v, int lag) {
  const Moments m = MomentsOf(v);
  double c = 0;
  for (size_t i = 0; i + lag < v.size(); ++i) c += (v[i] - m.mean) * (v[i + lag] - m.mean);
  return c / (v.size() - lag) / m.variance;
}

double FractionWhere(const std::vector<float>& v, bool (*pred)(float)) {
  return static_cast<double>(std::count_if(v.begin(), v.end(), pred)) / v.size();
}

constexpr int kLarge = 200003;  // odd: the last Box-Muller pair is half used
// Five standard errors of a proportion p over kLarge draws.
double FiveSigma(double p) { return 5 * std::sqrt(p * (1 - p) / kLarge); }

}  // namespace

TEST(Filler, GaussianHasItsMeanStdAndNormalShape) {
  caffe::FillerParameter filler = Filler("gaussian");
  filler.set_mean(0.5f);
  filler.set_std(2.f);
  const std::vector<float> v = Fill(filler, {kLarge});
  const Moments m = MomentsOf(v);
  EXPECT_NEAR(m.mean, 0.5, 5 * 2 / std::sqrt(kLarge));
  EXPECT_NEAR(std::sqrt(m.variance), 2.0, 5 * 2 / std::sqrt(2.0 * kLarge));
  EXPECT_NEAR(m.kurtosis, 3.0, 5 * std::sqrt(24.0 / kLarge));
  // The normal's mass within one and two standard deviations.
  EXPECT_NEAR(FractionWhere(v, [](float x) { return std::fabs(x - 0.5f) < 2.f; }), 0.682689,
              FiveSigma(0.682689));
  EXPECT_NEAR(FractionWhere(v, [](float x) { return std::fabs(x - 0.5f) < 4.f; }), 0.954500,
              FiveSigma(0.954500));
  EXPECT_NEAR(FractionWhere(v, [](float x) { return x > 0.5f; }), 0.5, FiveSigma(0.5));
  // Neighbours (the two halves of a Box-Muller pair, and the next pair) are
  // uncorrelated, and so are their squares.
  for (int lag : {1, 2, 3}) {
    EXPECT_NEAR(Correlation(v, lag), 0.0, 5 / std::sqrt(kLarge)) << "lag " << lag;
    std::vector<float> squares(v.size());
    for (size_t i = 0; i < v.size(); ++i) squares[i] = (v[i] - 0.5f) * (v[i] - 0.5f);
    EXPECT_NEAR(Correlation(squares, lag), 0.0, 5 / std::sqrt(kLarge)) << "lag " << lag;
  }
}

TEST(Filler, UniformCoversItsRangeEvenly) {
  caffe::FillerParameter filler = Filler("uniform");
  filler.set_min(-3.f);
  filler.set_max(5.f);
  const std::vector<float> v = Fill(filler, {kLarge});
  const Moments m = MomentsOf(v);
  EXPECT_GE(*std::min_element(v.begin(), v.end()), -3.f);
  EXPECT_LE(*std::max_element(v.begin(), v.end()), 5.f);
  EXPECT_NEAR(m.mean, 1.0, 5 * 8 / std::sqrt(12.0 * kLarge));
  EXPECT_NEAR(m.variance, 64.0 / 12, 0.05 * 64 / 12);
  const int kBins = 16;
  std::vector<int> bins(kBins);
  for (float x : v) ++bins[std::min(kBins - 1, static_cast<int>((x + 3.f) / 8.f * kBins))];
  for (int b = 0; b < kBins; ++b)
    EXPECT_NEAR(bins[b] / static_cast<double>(kLarge), 1.0 / kBins, FiveSigma(1.0 / kBins))
        << "bin " << b;
  EXPECT_NEAR(Correlation(v, 1), 0.0, 5 / std::sqrt(kLarge));
}

TEST(Filler, XavierAndMsraScaleWithTheFans) {
  // Shape (7, 5, 3, 3): fan_in 45, fan_out 63.
  const std::vector<int> shape = {7, 5, 3, 3};
  const double fan_in = 45, fan_out = 63;
  for (auto norm : {caffe::FillerParameter_VarianceNorm_FAN_IN,
                    caffe::FillerParameter_VarianceNorm_FAN_OUT,
                    caffe::FillerParameter_VarianceNorm_AVERAGE}) {
    SCOPED_TRACE(caffe::FillerParameter_VarianceNorm_Name(norm));
    const double fan = norm == caffe::FillerParameter_VarianceNorm_FAN_IN    ? fan_in
                       : norm == caffe::FillerParameter_VarianceNorm_FAN_OUT ? fan_out
                                                                             : (fan_in + fan_out) / 2;
    caffe::FillerParameter xavier = Filler("xavier");
    xavier.set_variance_norm(norm);
    const float scale = std::sqrt(3 / fan);
    float largest = 0;
    double square_sum = 0;
    const int kFills = 40;  // 315 values per fill
    for (int f = 0; f < kFills; ++f) {
      for (float x : Fill(xavier, shape, 100 + f)) {
        largest = std::max(largest, std::fabs(x));
        square_sum += x * x;
      }
    }
    EXPECT_LE(largest, scale);
    EXPECT_GT(largest, 0.99f * scale);
    EXPECT_NEAR(square_sum / (kFills * 315), 1 / fan, 0.05 / fan);  // Var of U(-s, s) = s²/3

    caffe::FillerParameter msra = Filler("msra");
    msra.set_variance_norm(norm);
    square_sum = 0;
    for (int f = 0; f < kFills; ++f)
      for (float x : Fill(msra, shape, 200 + f)) square_sum += x * x;
    EXPECT_NEAR(square_sum / (kFills * 315), 2 / fan, 0.1 / fan);
  }
}

TEST(Filler, SparseGaussianKeepsSparseOverNumOutputs) {
  caffe::FillerParameter filler = Filler("gaussian");
  filler.set_std(1.f);
  filler.set_sparse(3);  // of 10 outputs: keep 0.3
  const std::vector<float> v = Fill(filler, {10, 20001});
  EXPECT_NEAR(FractionWhere(v, [](float x) { return x != 0.f; }), 0.3, FiveSigma(0.3));
  std::vector<float> kept;
  for (float x : v)
    if (x != 0.f) kept.push_back(x);
  EXPECT_NEAR(std::sqrt(MomentsOf(kept).variance), 1.0, 0.02);
  // Whether a weight is kept does not depend on its value's sign.
  const double positive = FractionWhere(kept, [](float x) { return x > 0.f; });
  EXPECT_NEAR(positive, 0.5, 5 * std::sqrt(0.25 / kept.size()));
}

TEST(Filler, PositiveUnitballRowsArePositiveAndSumToOne) {
  const std::vector<int> shape = {13, 7, 11};
  const std::vector<float> v = Fill(Filler("positive_unitball"), shape);
  for (int r = 0; r < 13; ++r) {
    double sum = 0;
    for (int j = 0; j < 77; ++j) {
      ASSERT_GE(v[r * 77 + j], 0.f);
      sum += v[r * 77 + j];
    }
    EXPECT_NEAR(sum, 1.0, 1e-5) << "row " << r;
  }
  EXPECT_NE(v[0], v[1]);
}

TEST(Filler, BilinearIsTheUpsamplingKernel) {
  for (int k : {3, 4, 5}) {
    SCOPED_TRACE(k);
    const std::vector<float> v = Fill(Filler("bilinear"), {2, 1, k, k});
    // Caffe's definition, written out: f = ceil(k/2), c = (2f - 1 - f%2) / 2f.
    const int f = (k + 1) / 2;
    const double c = (2.0 * f - 1 - f % 2) / (2.0 * f);
    for (int ch = 0; ch < 2; ++ch)
      for (int y = 0; y < k; ++y)
        for (int x = 0; x < k; ++x)
          EXPECT_NEAR(v[(ch * k + y) * k + x],
                      (1 - std::fabs(x / double(f) - c)) * (1 - std::fabs(y / double(f) - c)),
                      1e-6)
              << "at " << ch << "," << y << "," << x;
  }
  EXPECT_THROW(Fill(Filler("bilinear"), {2, 1, 3, 4}), Error);
}

TEST(Filler, ConstantSetsEveryValue) {
  caffe::FillerParameter filler = Filler("constant");
  filler.set_value(-1.25f);
  for (float x : Fill(filler, {3, 5, 7})) ASSERT_EQ(x, -1.25f);
}

TEST(Filler, TheSeedDecidesTheValues) {
  caffe::FillerParameter filler = Filler("gaussian");
  EXPECT_EQ(Fill(filler, {257}, 5), Fill(filler, {257}, 5));
  EXPECT_NE(Fill(filler, {257}, 5), Fill(filler, {257}, 6));
  // Two fills after one seeding draw two different keys.
  Context& ctx = TestContext();
  ctx.Seed(5);
  Blob a(ctx, {257}), b(ctx, {257});
  FillBlob(filler, &a);
  FillBlob(filler, &b);
  EXPECT_NE(a.ReadData(), b.ReadData());
  EXPECT_EQ(a.ReadData(), Fill(filler, {257}, 5));
}

TEST(Filler, UnknownTypeIsNamed) {
  try {
    Fill(Filler("gausian"), {4});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown filler type 'gausian'"), std::string::npos)
        << e.what();
  }
}

}  // namespace test
}  // namespace dlcaffe
