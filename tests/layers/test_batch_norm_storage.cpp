// BatchNorm with 16-bit bottom and top (mixed precision). The statistics are
// float sums of the widened inputs, and each output is rounded once on
// store, so on inputs the type holds exactly the top is the rounding of the
// float32 layer's and the running statistics equal its, bit for bit, with
// batch statistics (TRAIN) and with the stored ones (TEST), where the
// gradient dy / stdev is exact too.
//
// With batch statistics the gradient reads the normalized input kept from
// forward, which a 16-bit layer keeps in 16 bits (half the memory of a float
// copy): each x_norm carries its rounding, at most u |x_norm| plus half the
// type's smallest step (u = 2^-11 in float16, 2^-8 in bfloat16). Through
// dx = (dy - sum(dy) / m - sum(dy x_norm) / m * x_norm) / stdev that moves
// dx by at most, per element,
//   (e(x_norm) |sum(dy x_norm)| + |x_norm| sum(|dy| e(x_norm))) / (m stdev),
// then its own rounding u |dx|; the test derives this bound from a double
// reference of the statistics and checks every element against it.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "util/layer_test_util.hpp"
#include "util/storage_layer_run.hpp"
#include "util/storage_values.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

const std::vector<int> kShape = {3, 5, 7, 3};  // m = 3 * 21 = 63 values per channel
constexpr int kChannels = 5, kSpatial = 21;

// The stored statistics as a run would leave them: sums over a factor of 2.
std::vector<float> StoredStatistics() {
  std::vector<float> values;
  for (int c = 0; c < kChannels; ++c) values.push_back(0.2f * c - 0.3f);   // mean sums
  for (int c = 0; c < kChannels; ++c) values.push_back(0.5f + 0.25f * c);  // variance sums
  values.push_back(2.f);                                                   // the factor
  return values;
}

int Channel(size_t i) { return static_cast<int>(i / kSpatial) % kChannels; }

// The bound above on |dx_16 - dx_32| for each element, from x and dy in
// double (eps 1e-5, Caffe's default).
std::vector<double> GradientBound(const std::vector<float>& x, const std::vector<float>& dy,
                                  const std::vector<float>& dx_float, double u) {
  const double m = static_cast<double>(x.size()) / kChannels;
  std::vector<double> mean(kChannels), var(kChannels), sum_dy_xn(kChannels),
      sum_dy_err(kChannels);
  for (size_t i = 0; i < x.size(); ++i) mean[Channel(i)] += x[i] / m;
  for (size_t i = 0; i < x.size(); ++i)
    var[Channel(i)] += (x[i] - mean[Channel(i)]) * (x[i] - mean[Channel(i)]) / m;
  std::vector<double> xn(x.size()), err(x.size());
  const double half_step = std::ldexp(1.0, -25);  // float16's subnormal spacing / 2
  for (size_t i = 0; i < x.size(); ++i) {
    const int c = Channel(i);
    xn[i] = (x[i] - mean[c]) / std::sqrt(var[c] + 1e-5);
    err[i] = u * std::fabs(xn[i]) + half_step;
    sum_dy_xn[c] += dy[i] * xn[i];
    sum_dy_err[c] += std::fabs(dy[i]) * err[i];
  }
  std::vector<double> bound(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const int c = Channel(i);
    const double moved = (err[i] * std::fabs(sum_dy_xn[c]) + std::fabs(xn[i]) * sum_dy_err[c]) /
                         (m * std::sqrt(var[c] + 1e-5));
    // Float arithmetic on either side: a few float ulps of the terms.
    const double arithmetic = 1e-6 * (std::fabs(dy[i]) + 1.0) / std::sqrt(var[c] + 1e-5);
    bound[i] = (moved + arithmetic) * (1 + u) + u * std::fabs(dx_float[i]);
  }
  return bound;
}

class BatchNormStorage : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { SetTestOption("kernel_shape", GetParam()); }
  void TearDown() override { ResetTestOption("kernel_shape"); }
};

TEST_P(BatchNormStorage, SixteenBitLayerRoundsTheFloatLayer) {
  const int count = 3 * kChannels * kSpatial;
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    const double u = type == StorageType::kFloat16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
    for (bool global : {false, true}) {
      for (bool in_place : {false, true}) {
        SCOPED_TRACE(std::string(StorageTypeName(type)) + (global ? " stored" : " batch") +
                     " statistics" + (in_place ? ", in place" : ""));
        const std::string param = std::string("type: 'BatchNorm' batch_norm_param { ") +
                                  (global ? "use_global_stats: true" : "") + " }";
        Blob source(TestContext(), {2 * count});
        FillUniform(&source, -2.f, 3.f, 23);
        const std::vector<float> all = RoundedTo(source.ReadData(), type);
        const std::vector<float> x(all.begin(), all.begin() + count),
            dy(all.begin() + count, all.end());
        const StorageRunInputs run{kShape, x, dy, StoredStatistics(), in_place};
        const StorageRun half = RunLayerInStorage(param, type, run);
        const StorageRun full = RunLayerInStorage(param, StorageType::kFloat32, run);
        ASSERT_EQ(half.top, RoundedTo(full.top, type));
        ASSERT_EQ(half.param_data, full.param_data);  // the running statistics
        ASSERT_NE(full.bottom_diff, std::vector<float>(count, 0.f));
        if (global) {
          ASSERT_EQ(half.bottom_diff, RoundedTo(full.bottom_diff, type));
          continue;
        }
        const std::vector<double> bound = GradientBound(x, dy, full.bottom_diff, u);
        for (int i = 0; i < count; ++i)
          ASSERT_LE(std::fabs(half.bottom_diff[i] - full.bottom_diff[i]), bound[i])
              << "element " << i << ": " << half.bottom_diff[i] << " against "
              << full.bottom_diff[i];
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, BatchNormStorage, ::testing::Values("cpu", "gpu"));

}  // namespace
}  // namespace test
}  // namespace dlcaffe
