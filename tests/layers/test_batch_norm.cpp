#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

struct Geometry {
  int num, channels, spatial;
};

Geometry GeometryOf(const std::vector<int>& shape) {
  Geometry g{shape[0], shape.size() > 1 ? shape[1] : 1, 1};
  for (size_t i = 2; i < shape.size(); ++i) g.spatial *= shape[i];
  return g;
}

struct ChannelStats {
  std::vector<double> mean, var;  // biased variance
};

ChannelStats BatchStats(const std::vector<float>& x, Geometry g) {
  ChannelStats s{std::vector<double>(g.channels, 0.0), std::vector<double>(g.channels, 0.0)};
  const int m = g.num * g.spatial;
  for (int c = 0; c < g.channels; ++c) {
    for (int n = 0; n < g.num; ++n)
      for (int p = 0; p < g.spatial; ++p) s.mean[c] += x[(n * g.channels + c) * g.spatial + p];
    s.mean[c] /= m;
    for (int n = 0; n < g.num; ++n)
      for (int p = 0; p < g.spatial; ++p) {
        const double d = x[(n * g.channels + c) * g.spatial + p] - s.mean[c];
        s.var[c] += d * d;
      }
    s.var[c] /= m;
  }
  return s;
}

std::vector<double> Normalize(const std::vector<float>& x, Geometry g, const ChannelStats& s,
                              double eps) {
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const int c = (i / g.spatial) % g.channels;
    y[i] = (x[i] - s.mean[c]) / std::sqrt(s.var[c] + eps);
  }
  return y;
}

void ExpectNear(const std::vector<float>& got, const std::vector<double>& expected, double tol) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], expected[i], tol * std::max(1.0, std::fabs(expected[i]))) << i;
}

// {3, 5, 37, 41}: rows of 1517 values over several work-items of the CPU
// shape's elementwise passes, and channels split into parts in its sums.
const std::vector<int> kShapes[] = {{2, 3, 5, 7},   {3, 13}, {4, 127, 1, 1}, {1, 2, 13, 13},
                                    {7},            {3, 5, 37, 41}};

// Every test runs with both kernel shapes (channel_sums.hpp: work-items over
// contiguous runs, or over values and work-groups), whatever this device
// would pick.
class BatchNormTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { SetTestOption("kernel_shape", GetParam()); }
  void TearDown() override { ResetTestOption("kernel_shape"); }
};

}  // namespace

// Training phase: the batch's statistics normalize, and the running sums
// start from zero: mean_sum = mean, var_sum = m/(m-1) var, factor = 1.
TEST_P(BatchNormTest, BatchStatisticsForwardAndRunningSums) {
  for (const auto& shape : kShapes) {
    SCOPED_TRACE(::testing::PrintToString(shape));
    Blob x(TestContext(), shape), y(TestContext());
    FillGaussian(&x, 1.f, 2.f, 3);
    auto layer = MakeLayer("type: 'BatchNorm'");
    layer->SetUp({&x}, {&y});
    ASSERT_EQ(y.shape(), x.shape());
    ASSERT_EQ(layer->blobs().size(), 3u);
    const Geometry g = GeometryOf(shape);
    EXPECT_EQ(layer->blobs()[0]->shape(), std::vector<int>{g.channels});
    EXPECT_EQ(layer->blobs()[1]->shape(), std::vector<int>{g.channels});
    EXPECT_EQ(layer->blobs()[2]->shape(), std::vector<int>{1});
    layer->Forward({&x}, {&y});
    const ChannelStats s = BatchStats(x.ReadData(), g);
    ExpectNear(y.ReadData(), Normalize(x.ReadData(), g, s, 1e-5), 2e-5);
    const int m = g.num * g.spatial;
    const double correction = m > 1 ? double(m) / (m - 1) : 1.0;
    std::vector<float> mean_sum = layer->blobs()[0]->ReadData();
    std::vector<float> var_sum = layer->blobs()[1]->ReadData();
    for (int c = 0; c < g.channels; ++c) {
      EXPECT_NEAR(mean_sum[c], s.mean[c], 1e-5);
      EXPECT_NEAR(var_sum[c], correction * s.var[c], 1e-4 * std::max(1.0, s.var[c]));
    }
    EXPECT_FLOAT_EQ(layer->blobs()[2]->ReadData()[0], 1.f);
  }
}

// A second pass folds its statistics in with moving_average_fraction f.
TEST_P(BatchNormTest, RunningAverageOverTwoForwards) {
  for (const char* proto : {"type: 'BatchNorm'",  // f = 0.999
                            "type: 'BatchNorm' batch_norm_param { moving_average_fraction: 0.75 }"}) {
    SCOPED_TRACE(proto);
    const double f = std::string(proto).find("0.75") != std::string::npos ? 0.75 : 0.999;
    const std::vector<int> shape{3, 4, 2, 5};
    const Geometry g = GeometryOf(shape);
    Blob x(TestContext(), shape), y(TestContext());
    auto layer = MakeLayer(proto);
    layer->SetUp({&x}, {&y});
    FillGaussian(&x, -1.f, 0.5f, 4);
    layer->Forward({&x}, {&y});
    const ChannelStats first = BatchStats(x.ReadData(), g);
    FillGaussian(&x, 2.f, 3.f, 5);
    layer->Forward({&x}, {&y});
    const ChannelStats second = BatchStats(x.ReadData(), g);
    ExpectNear(y.ReadData(), Normalize(x.ReadData(), g, second, 1e-5), 2e-5);
    const double correction = 30.0 / 29.0;
    std::vector<float> mean_sum = layer->blobs()[0]->ReadData();
    std::vector<float> var_sum = layer->blobs()[1]->ReadData();
    for (int c = 0; c < g.channels; ++c) {
      EXPECT_NEAR(mean_sum[c], second.mean[c] + f * first.mean[c], 1e-5);
      EXPECT_NEAR(var_sum[c], correction * (second.var[c] + f * first.var[c]), 1e-4);
    }
    EXPECT_NEAR(layer->blobs()[2]->ReadData()[0], f + 1.0, 1e-6);
  }
}

// Global statistics: the stored sums divided by the factor, which the kernel
// reads on the device; a zero factor means zero statistics (Caffe). The
// blobs stay unchanged. The TEST phase selects this mode by default.
TEST_P(BatchNormTest, GlobalStatisticsUseTheStoredSums) {
  const std::vector<int> shape{2, 3, 4, 3};
  const Geometry g = GeometryOf(shape);
  for (const char* proto : {"type: 'BatchNorm' phase: TEST",
                            "type: 'BatchNorm' batch_norm_param { use_global_stats: true eps: 0.01 }"}) {
    for (float factor : {2.5f, 0.f}) {
      SCOPED_TRACE(std::string(proto) + " factor " + std::to_string(factor));
      const double eps = std::string(proto).find("0.01") != std::string::npos ? 0.01 : 1e-5;
      Blob x(TestContext(), shape), y(TestContext());
      FillGaussian(&x, 0.f, 2.f, 6);
      auto layer = MakeLayer(proto);
      layer->SetUp({&x}, {&y});
      const std::vector<float> mean_sum{1.f, -2.f, 0.5f}, var_sum{4.f, 0.25f, 9.f};
      layer->blobs()[0]->WriteData(mean_sum);
      layer->blobs()[1]->WriteData(var_sum);
      layer->blobs()[2]->WriteData(std::vector<float>{factor});
      layer->Forward({&x}, {&y});
      ChannelStats s{std::vector<double>(3), std::vector<double>(3)};
      for (int c = 0; c < 3; ++c) {
        s.mean[c] = factor == 0.f ? 0.0 : mean_sum[c] / double(factor);
        s.var[c] = factor == 0.f ? 0.0 : var_sum[c] / double(factor);
      }
      ExpectNear(y.ReadData(), Normalize(x.ReadData(), g, s, eps), 2e-5);
      EXPECT_EQ(layer->blobs()[0]->ReadData(), mean_sum);
      EXPECT_EQ(layer->blobs()[1]->ReadData(), var_sum);
      EXPECT_EQ(layer->blobs()[2]->ReadData()[0], factor);
    }
  }
}

// The statistics are no parameters: their numeric gradient is zero and
// backward leaves their diffs at zero.
TEST_P(BatchNormTest, BatchStatisticsGradientMatchesNumeric) {
  for (const std::vector<int>& shape :
       {std::vector<int>{2, 3, 4, 5}, std::vector<int>{5, 4}, std::vector<int>{1, 2, 3, 13},
        std::vector<int>{2, 3, 37, 41}}) {
    SCOPED_TRACE(::testing::PrintToString(shape));
    Blob x(TestContext(), shape), y(TestContext());
    FillGaussian(&x, 0.5f, 1.f, 7);
    auto layer = MakeLayer("type: 'BatchNorm'");
    layer->SetUp({&x}, {&y});
    GradientCheckOptions options;
    options.max_checks_per_blob = 60;
    CheckGradient(*layer, {&x}, {&y}, {}, options);
  }
}

// With global statistics the layer is affine; Caffe gives the stored sums no
// gradient, so only the input is checked.
TEST_P(BatchNormTest, GlobalStatisticsGradientMatchesNumeric) {
  for (const std::vector<int>& shape :
       {std::vector<int>{2, 3, 4, 5}, std::vector<int>{2, 3, 37, 41}}) {
    SCOPED_TRACE(::testing::PrintToString(shape));
    Blob x(TestContext(), shape), y(TestContext());
    FillGaussian(&x, 0.f, 1.f, 8);
    auto layer = MakeLayer("type: 'BatchNorm' batch_norm_param { use_global_stats: true }");
    layer->SetUp({&x}, {&y});
    layer->blobs()[0]->WriteData(std::vector<float>{0.3f, -0.2f, 1.f});
    layer->blobs()[1]->WriteData(std::vector<float>{2.f, 0.5f, 1.5f});
    layer->blobs()[2]->WriteData(std::vector<float>{1.5f});
    GradientCheckOptions options;
    options.check_params = false;
    options.max_checks_per_blob = 60;
    CheckGradient(*layer, {&x}, {&y}, {}, options);
  }
}

// Every value of the input gradient against the closed form, on an input
// whose rows (1517 values) span several work-items of the CPU shape:
// batch statistics dx = (dy - mean(dy) - mean(dy * y) * y) / stdev, global
// statistics dx = dy / stdev.
TEST_P(BatchNormTest, BackwardMatchesClosedForm) {
  const std::vector<int> shape{3, 5, 37, 41};
  const Geometry g = GeometryOf(shape);
  for (bool global : {false, true}) {
    SCOPED_TRACE(global ? "global statistics" : "batch statistics");
    Blob x(TestContext(), shape), y(TestContext());
    FillGaussian(&x, 1.f, 2.f, 10);
    auto layer = MakeLayer(std::string("type: 'BatchNorm' batch_norm_param { use_global_stats: ") +
                           (global ? "true" : "false") + " }");
    layer->SetUp({&x}, {&y});
    ChannelStats s{std::vector<double>(g.channels), std::vector<double>(g.channels)};
    if (global) {
      for (int c = 0; c < g.channels; ++c) {
        s.mean[c] = 0.5 * c - 1.0;
        s.var[c] = 0.5 + c;
      }
      std::vector<float> mean_sum(s.mean.begin(), s.mean.end());
      std::vector<float> var_sum(s.var.begin(), s.var.end());
      layer->blobs()[0]->WriteData(mean_sum);
      layer->blobs()[1]->WriteData(var_sum);
      layer->blobs()[2]->WriteData(std::vector<float>{1.f});
    } else {
      s = BatchStats(x.ReadData(), g);
    }
    layer->Forward({&x}, {&y});
    const std::vector<double> y_ref = Normalize(x.ReadData(), g, s, 1e-5);
    std::vector<float> dy(x.count());
    for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.01f * float(i % 101) - 0.5f;
    y.WriteDiff(dy);
    layer->Backward({&y}, {true}, {&x});
    std::vector<double> mean_dy(g.channels), mean_dy_y(g.channels);
    const int m = g.num * g.spatial;
    for (size_t i = 0; i < dy.size(); ++i) {
      const int c = (i / g.spatial) % g.channels;
      mean_dy[c] += double(dy[i]) / m;
      mean_dy_y[c] += dy[i] * y_ref[i] / m;
    }
    std::vector<double> dx(dy.size());
    for (size_t i = 0; i < dy.size(); ++i) {
      const int c = (i / g.spatial) % g.channels;
      const double centered = global ? dy[i] : dy[i] - mean_dy[c] - mean_dy_y[c] * y_ref[i];
      dx[i] = centered / std::sqrt(s.var[c] + 1e-5);
    }
    ExpectNear(x.ReadDiff(), dx, 2e-5);
  }
}

TEST_P(BatchNormTest, InPlaceMatchesOutOfPlace) {
  for (bool global : {false, true}) {
    const std::string proto = std::string("type: 'BatchNorm' batch_norm_param { use_global_stats: ") +
                              (global ? "true" : "false") + " }";
    const std::vector<int> shape{3, 2, 3, 5};
    Blob x(TestContext(), shape), y(TestContext()), inplace(TestContext(), shape);
    FillGaussian(&x, 0.f, 1.f, 9);
    inplace.WriteData(x.ReadData());
    auto layer = MakeLayer(proto);
    auto layer_in_place = MakeLayer(proto);
    layer->SetUp({&x}, {&y});
    layer_in_place->SetUp({&inplace}, {&inplace});
    for (auto* l : {layer.get(), layer_in_place.get()}) {
      l->blobs()[0]->WriteData(std::vector<float>{0.5f, -1.f});
      l->blobs()[1]->WriteData(std::vector<float>{2.f, 3.f});
      l->blobs()[2]->WriteData(std::vector<float>{2.f});
    }
    layer->Forward({&x}, {&y});
    layer_in_place->Forward({&inplace}, {&inplace});
    std::vector<float> dy(x.count());
    for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.1f * float(i % 9) - 0.4f;
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

// Caffe masks the statistics from the solver: missing param specs are added
// with lr_mult 0, and a non-zero lr_mult is an error.
TEST_P(BatchNormTest, StatisticsGetLrMultZero) {
  Blob x(TestContext(), {2, 3, 4}), y(TestContext());
  auto layer = MakeLayer("type: 'BatchNorm' param { lr_mult: 0 decay_mult: 0 }");
  layer->SetUp({&x}, {&y});
  ASSERT_EQ(layer->layer_param().param_size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(layer->layer_param().param(i).has_lr_mult());
    EXPECT_EQ(layer->layer_param().param(i).lr_mult(), 0.f);
    EXPECT_FALSE(layer->param_propagate_down(i));
  }
  EXPECT_EQ(layer->layer_param().param(0).decay_mult(), 0.f);  // kept as given
  auto learned = MakeLayer("type: 'BatchNorm' param { lr_mult: 0 } param { lr_mult: 1 }");
  EXPECT_THROW(learned->SetUp({&x}, {&y}), Error);
}

TEST_P(BatchNormTest, ChannelMismatchIsAnError) {
  Blob x(TestContext(), {2, 3, 4}), y(TestContext());
  auto layer = MakeLayer("type: 'BatchNorm'");
  layer->SetUp({&x}, {&y});
  x.Reshape(std::vector<int>{2, 5, 4});
  EXPECT_THROW(layer->Reshape({&x}, {&y}), Error);
}

INSTANTIATE_TEST_SUITE_P(KernelShapes, BatchNormTest, ::testing::Values("cpu", "gpu"));

}  // namespace test
}  // namespace dlcaffe
