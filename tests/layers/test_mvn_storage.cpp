// MVN with 16-bit bottom and top (mixed precision): the row kernels widen
// each value on load, keep the mean, the deviation and every sum in float
// as the float32 layer does, and round once on store. So on inputs the type
// holds exactly, the top is the rounding of the float32 layer's, and so is
// the bottom gradient, given the float32 layer's backward reads the top as
// stored in 16 bits (the gradient reads y): with and without the variance,
// per channel and across channels, rows longer than a work-group, in place
// or not.
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

TEST(MVNStorage, SixteenBitLayerRoundsTheFloatLayer) {
  struct Case {
    const char* param;
    std::vector<int> shape;
  };
  const Case cases[] = {
      {"", {2, 3, 5, 7}},                                          // rows of 35
      {"mvn_param { across_channels: true }", {3, 2, 67, 1}},      // rows of 134
      {"mvn_param { normalize_variance: false }", {2, 3, 67, 1}},  // rows of 67
  };
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    for (const Case& c : cases) {
      for (bool in_place : {false, true}) {
        SCOPED_TRACE(std::string(StorageTypeName(type)) + " " + c.param +
                     (in_place ? ", in place" : ""));
        int count = 1;
        for (int d : c.shape) count *= d;
        Blob source(TestContext(), {2 * count});
        FillUniform(&source, -2.f, 3.f, 53);
        const std::vector<float> all = RoundedTo(source.ReadData(), type);
        const std::vector<float> x(all.begin(), all.begin() + count),
            dy(all.begin() + count, all.end());
        const std::string param = std::string("type: 'MVN' ") + c.param;
        StorageRunInputs run{c.shape, x, dy, {}, in_place};
        const StorageRun half = RunLayerInStorage(param, type, run);
        run.after_forward = [type](Blob& top) { top.WriteData(RoundedTo(top.ReadData(), type)); };
        const StorageRun full = RunLayerInStorage(param, StorageType::kFloat32, run);
        ASSERT_EQ(half.top, RoundedTo(full.top, type));
        ASSERT_EQ(half.bottom_diff, RoundedTo(full.bottom_diff, type));
        // The rows were normalized: the comparisons can fail.
        ASSERT_NE(full.top, x);
        ASSERT_NE(full.bottom_diff, dy);
      }
    }
  }
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
