// Scale and Bias with 16-bit bottom and top (mixed precision; a learned
// scale and bias, which stay float). Each output and bottom gradient is
// computed in float from the widened values and rounded once on store, and
// the parameter gradients are float sums of the same values, so on inputs
// the type holds exactly the 16-bit layer gives the rounding of the float32
// layer's top and bottom gradient and exactly its parameter gradients, in
// place (Scale then keeps its input in 16 bits for the gradient) or not.
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

const std::vector<int> kShape = {2, 3, 5, 7};

class ScaleBiasStorage : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { SetTestOption("kernel_shape", GetParam()); }
  void TearDown() override { ResetTestOption("kernel_shape"); }
};

TEST_P(ScaleBiasStorage, SixteenBitLayerRoundsTheFloatLayer) {
  const int count = 2 * 3 * 5 * 7;
  const char* params[] = {
      "type: 'Scale' scale_param { bias_term: true }",
      "type: 'Scale' scale_param { axis: 1 num_axes: 2 }",  // a 3 x 5 scale
      "type: 'Bias'",
  };
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    for (const char* param : params) {
      for (bool in_place : {false, true}) {
        SCOPED_TRACE(std::string(StorageTypeName(type)) + " " + param +
                     (in_place ? ", in place" : ""));
        Blob source(TestContext(), {2 * count + 30});
        FillUniform(&source, -1.f, 1.f, 29);
        const std::vector<float> all = source.ReadData();
        const std::vector<float> activations =
            RoundedTo(std::vector<float>(all.begin(), all.begin() + 2 * count), type);
        const std::vector<float> x(activations.begin(), activations.begin() + count),
            dy(activations.begin() + count, activations.end());
        const std::vector<float> weights(all.begin() + 2 * count, all.end());
        const StorageRunInputs run{kShape, x, dy, weights, in_place};
        const StorageRun half = RunLayerInStorage(param, type, run);
        const StorageRun full = RunLayerInStorage(param, StorageType::kFloat32, run);
        ASSERT_EQ(half.top, RoundedTo(full.top, type));
        ASSERT_EQ(half.bottom_diff, RoundedTo(full.bottom_diff, type));
        ASSERT_EQ(half.param_diffs, full.param_diffs);
        ASSERT_FALSE(full.param_diffs.empty());
        for (const std::vector<float>& d : full.param_diffs)
          ASSERT_NE(d, std::vector<float>(d.size(), 0.f));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, ScaleBiasStorage, ::testing::Values("cpu", "gpu"));

}  // namespace
}  // namespace test
}  // namespace dlcaffe
