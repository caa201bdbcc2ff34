#include <gtest/gtest.h>

#include <cmath>

#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

struct MVNCase {
  bool normalize_variance, across_channels;
};

std::string MVNProto(const MVNCase& c, const std::string& extra = "") {
  return std::string("type: 'MVN' mvn_param { normalize_variance: ") +
         (c.normalize_variance ? "true" : "false") +
         " across_channels: " + (c.across_channels ? "true" : "false") + " " + extra + " }";
}

// Rows are (sample) or (sample, channel); y = (x - mean) / (std + eps).
std::vector<double> ReferenceMVN(const std::vector<float>& x, const std::vector<int>& shape,
                                 const MVNCase& c, double eps) {
  const int num = shape[0], channels = shape.size() > 1 ? shape[1] : 1;
  const int rows = c.across_channels ? num : num * channels;
  const int dim = static_cast<int>(x.size()) / rows;
  std::vector<double> y(x.size());
  for (int r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int j = 0; j < dim; ++j) mean += x[r * dim + j];
    mean /= dim;
    for (int j = 0; j < dim; ++j) var += (x[r * dim + j] - mean) * (x[r * dim + j] - mean);
    var /= dim;
    const double divisor = c.normalize_variance ? std::sqrt(var) + eps : 1.0;
    for (int j = 0; j < dim; ++j) y[r * dim + j] = (x[r * dim + j] - mean) / divisor;
  }
  return y;
}

const MVNCase kCases[] = {{true, false}, {true, true}, {false, false}, {false, true}};
const std::vector<int> kShapes[] = {{2, 3, 5, 7}, {1, 2, 13, 13}, {4, 127}, {3, 1, 1, 1}};

}  // namespace

TEST(MVN, ForwardMatchesReference) {
  for (const MVNCase& c : kCases)
    for (const auto& shape : kShapes) {
      SCOPED_TRACE(MVNProto(c));
      Blob x(TestContext(), shape), y(TestContext());
      FillGaussian(&x, 1.5f, 2.f, 7);
      auto layer = MakeLayer(MVNProto(c));
      layer->SetUp({&x}, {&y});
      ASSERT_EQ(y.shape(), x.shape());
      layer->Forward({&x}, {&y});
      std::vector<double> expected = ReferenceMVN(x.ReadData(), shape, c, 1e-9);
      std::vector<float> got = y.ReadData();
      for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], 2e-5) << i;
    }
}

// eps is added to the standard deviation (Caffe), which shows with a large eps.
TEST(MVN, EpsIsAddedToTheStandardDeviation) {
  const MVNCase c{true, false};
  Blob x(TestContext(), {2, 3, 4, 5}), y(TestContext());
  FillGaussian(&x, 0.f, 0.5f, 8);
  auto layer = MakeLayer(MVNProto(c, "eps: 0.25"));
  layer->SetUp({&x}, {&y});
  layer->Forward({&x}, {&y});
  std::vector<double> expected = ReferenceMVN(x.ReadData(), {2, 3, 4, 5}, c, 0.25);
  std::vector<float> got = y.ReadData();
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], 1e-5) << i;
}

TEST(MVN, GradientMatchesNumeric) {
  for (const MVNCase& c : kCases)
    for (const std::vector<int>& shape : {std::vector<int>{2, 3, 4, 5}, {1, 2, 9, 9}}) {
      SCOPED_TRACE(MVNProto(c));
      Blob x(TestContext(), shape), y(TestContext());
      FillGaussian(&x, 0.5f, 1.f, 9);
      auto layer = MakeLayer(MVNProto(c));
      layer->SetUp({&x}, {&y});
      GradientCheckOptions options;
      options.max_checks_per_blob = 60;
      CheckGradient(*layer, {&x}, {&y}, {}, options);
    }
}

TEST(MVN, InPlaceMatchesOutOfPlace) {
  for (const MVNCase& c : kCases) {
    Blob x(TestContext(), {2, 3, 4, 5}), y(TestContext()), inplace(TestContext(), {2, 3, 4, 5});
    FillGaussian(&x, 0.f, 1.f, 10);
    inplace.WriteData(x.ReadData());
    auto layer = MakeLayer(MVNProto(c));
    auto layer_in_place = MakeLayer(MVNProto(c));
    layer->SetUp({&x}, {&y});
    layer_in_place->SetUp({&inplace}, {&inplace});
    layer->Forward({&x}, {&y});
    layer_in_place->Forward({&inplace}, {&inplace});
    std::vector<float> dy(x.count());
    for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.1f * float(i % 13) - 0.6f;
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

}  // namespace test
}  // namespace dlcaffe
