// PReLU with 16-bit bottom and top (mixed precision): the generated kernels
// widen x and dy on load, compute in float with the float slopes and round
// each result once on store; the slope gradient is the float sum of the
// same widened values. So on inputs the type holds exactly, the top and the
// bottom gradient are the roundings of the float32 layer's and the slope
// gradient equals its, bit for bit: per channel or shared, 4-D and 2-D
// bottoms of odd counts, in place (the copy of x kept for backward is
// 16-bit too) or not, in both kernel shapes.
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

class PReLUStorage : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { SetTestOption("kernel_shape", GetParam()); }
  void TearDown() override { ResetTestOption("kernel_shape"); }
};

TEST_P(PReLUStorage, SixteenBitLayerRoundsTheFloatLayer) {
  struct Case {
    const char* param;
    std::vector<int> shape;
    int slopes;
  };
  const Case cases[] = {
      {"", {2, 3, 5, 7}, 3},
      {"prelu_param { channel_shared: true }", {2, 3, 5, 7}, 1},
      {"", {5, 13}, 13},  // one value per channel and image
  };
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    for (const Case& c : cases) {
      for (bool in_place : {false, true}) {
        SCOPED_TRACE(std::string(StorageTypeName(type)) + " " + c.param + " " +
                     std::to_string(c.shape.size()) + "-D" + (in_place ? ", in place" : ""));
        int count = 1;
        for (int d : c.shape) count *= d;
        Blob source(TestContext(), {2 * count + c.slopes});
        FillUniform(&source, -1.f, 1.f, 47);
        const std::vector<float> all = source.ReadData();
        const std::vector<float> activations =
            RoundedTo(std::vector<float>(all.begin(), all.begin() + 2 * count), type);
        const std::vector<float> x(activations.begin(), activations.begin() + count),
            dy(activations.begin() + count, activations.end());
        const std::vector<float> slopes(all.begin() + 2 * count, all.end());
        const std::string param = std::string("type: 'PReLU' ") + c.param;
        const StorageRunInputs run{c.shape, x, dy, slopes, in_place};
        const StorageRun half = RunLayerInStorage(param, type, run);
        const StorageRun full = RunLayerInStorage(param, StorageType::kFloat32, run);
        ASSERT_EQ(half.top, RoundedTo(full.top, type));
        ASSERT_EQ(half.bottom_diff, RoundedTo(full.bottom_diff, type));
        ASSERT_EQ(half.param_diffs, full.param_diffs);
        // Negative inputs met their slopes: the comparisons can fail.
        ASSERT_NE(full.top, x);
        ASSERT_NE(full.param_diffs[0], std::vector<float>(c.slopes, 0.f));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, PReLUStorage, ::testing::Values("cpu", "gpu"));

}  // namespace
}  // namespace test
}  // namespace dlcaffe
