// RMSNorm with 16-bit bottom and top (mixed precision). The row kernels
// widen each value on load (one at a time, or four at a time in the CPU
// shape's vector runs), keep the mean square and the sums in float as the
// float32 layer does, and round once on store; the scale stays float. So on
// inputs the type holds exactly, the top and the bottom gradient are the
// roundings of the float32 layer's and the scale's gradient equals its, bit
// for bit: with and without the scale, in place (the copy of x kept for
// backward is 16-bit too) or not, rows whose length is not a multiple of 4,
// and enough rows for the scale's sums to be split into chunks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/layer_test_util.hpp"
#include "util/storage_layer_run.hpp"
#include "util/storage_values.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

class RMSNormStorage : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { SetTestOption("kernel_shape", GetParam()); }
  void TearDown() override { ResetTestOption("kernel_shape"); }
};

TEST_P(RMSNormStorage, SixteenBitLayerRoundsTheFloatLayer) {
  struct Case {
    const char* param;
    std::vector<int> shape;
  };
  const Case cases[] = {
      {"rms_norm_param { axis: 1 }", {5, 37}},
      {"rms_norm_param { axis: -1 }", {2, 3, 21}},
      {"rms_norm_param { axis: 1 elementwise_affine: false }", {4, 35}},
      {"rms_norm_param { axis: 1 }", {40, 19}},  // the scale's sums in chunks
  };
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    for (const Case& c : cases) {
      for (bool in_place : {false, true}) {
        SCOPED_TRACE(std::string(StorageTypeName(type)) + " " + c.param +
                     (in_place ? ", in place" : ""));
        int count = 1;
        for (int d : c.shape) count *= d;
        const std::string param = std::string("type: 'RMSNorm' ") + c.param;
        Blob source(TestContext(), {2 * count + c.shape.back()});
        FillUniform(&source, -2.f, 2.f, 59);
        const std::vector<float> all = source.ReadData();
        const std::vector<float> activations =
            RoundedTo(std::vector<float>(all.begin(), all.begin() + 2 * count), type);
        const std::vector<float> x(activations.begin(), activations.begin() + count),
            dy(activations.begin() + count, activations.end());
        const std::vector<float> scale(all.begin() + 2 * count, all.end());
        const StorageRunInputs run{c.shape, x, dy, scale, in_place};
        const StorageRun half = RunLayerInStorage(param, type, run);
        const StorageRun full = RunLayerInStorage(param, StorageType::kFloat32, run);
        ASSERT_EQ(half.top, RoundedTo(full.top, type));
        ASSERT_EQ(half.bottom_diff, RoundedTo(full.bottom_diff, type));
        ASSERT_EQ(half.param_diffs, full.param_diffs);
        ASSERT_NE(full.top, x);
        ASSERT_NE(full.bottom_diff, std::vector<float>(count, 0.f));
        for (const std::vector<float>& d : full.param_diffs)
          ASSERT_NE(d, std::vector<float>(d.size(), 0.f));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, RMSNormStorage, ::testing::Values("cpu", "gpu"));

}  // namespace
}  // namespace test
}  // namespace dlcaffe
