// LayerNorm with 16-bit bottom and top (mixed precision). The row kernels
// widen each value on load (one at a time, or four or sixteen in the CPU
// shape's vector runs), keep the statistics and sums in float as the
// float32 layer does, and round once on store; gamma and beta stay float.
// So on inputs the type holds exactly, the top and the bottom gradient are
// the roundings of the float32 layer's and the parameter gradients equal
// its, bit for bit: with and without the affine parameters and the bias,
// in place (the copy of x kept for backward is 16-bit too) or not, rows
// whose length is not a multiple of 4 or 16, and enough rows for the
// parameter sums to be split into chunks.
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

class LayerNormStorage : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { SetTestOption("kernel_shape", GetParam()); }
  void TearDown() override { ResetTestOption("kernel_shape"); }
};

TEST_P(LayerNormStorage, SixteenBitLayerRoundsTheFloatLayer) {
  struct Case {
    const char* param;
    std::vector<int> shape;  // normalized from axis 1 (the default: the last axis)
  };
  const Case cases[] = {
      {"layer_norm_param { axis: 1 }", {5, 37}},
      {"layer_norm_param { axis: -1 bias: false }", {2, 3, 21}},
      {"layer_norm_param { axis: 1 elementwise_affine: false }", {4, 35}},
      {"layer_norm_param { axis: 1 }", {40, 19}},  // parameter sums in chunks
  };
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    for (const Case& c : cases) {
      for (bool in_place : {false, true}) {
        SCOPED_TRACE(std::string(StorageTypeName(type)) + " " + c.param +
                     (in_place ? ", in place" : ""));
        int count = 1;
        for (int d : c.shape) count *= d;
        const std::string param = std::string("type: 'LayerNorm' ") + c.param;
        Blob source(TestContext(), {2 * count + 2 * c.shape.back()});
        FillUniform(&source, -2.f, 2.f, 41);
        const std::vector<float> all = source.ReadData();
        const std::vector<float> activations =
            RoundedTo(std::vector<float>(all.begin(), all.begin() + 2 * count), type);
        const std::vector<float> x(activations.begin(), activations.begin() + count),
            dy(activations.begin() + count, activations.end());
        const std::vector<float> params(all.begin() + 2 * count, all.end());
        const StorageRunInputs run{c.shape, x, dy, params, in_place};
        const StorageRun half = RunLayerInStorage(param, type, run);
        const StorageRun full = RunLayerInStorage(param, StorageType::kFloat32, run);
        ASSERT_EQ(half.top, RoundedTo(full.top, type));
        ASSERT_EQ(half.bottom_diff, RoundedTo(full.bottom_diff, type));
        ASSERT_EQ(half.param_diffs, full.param_diffs);
        ASSERT_NE(full.bottom_diff, std::vector<float>(count, 0.f));
        for (const std::vector<float>& d : full.param_diffs)
          ASSERT_NE(d, std::vector<float>(d.size(), 0.f));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, LayerNormStorage, ::testing::Values("cpu", "gpu"));

}  // namespace
}  // namespace test
}  // namespace dlcaffe
