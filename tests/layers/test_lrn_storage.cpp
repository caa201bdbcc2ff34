// LRN with 16-bit bottom and top (mixed precision): x and dy are widened on
// load, the scales, the ratios and every window sum are float as in the
// float32 layer, and each output and gradient is rounded once on store. So
// on inputs the type holds exactly, the top and the bottom gradient are the
// roundings of the float32 layer's, bit for bit: across and within
// channels, windows cut by the edges of odd shapes, in place (the copy of x
// kept for backward is 16-bit too) or not.
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

TEST(LRNStorage, SixteenBitLayerRoundsTheFloatLayer) {
  const char* params[] = {
      "lrn_param { local_size: 5 alpha: 0.7 beta: 0.75 k: 1.5 }",
      "lrn_param { local_size: 3 alpha: 0.4 beta: 0.6 norm_region: WITHIN_CHANNEL }",
  };
  // 7 channels and 5 x 3 planes: windows of 5 channels and 3 x 3 run past
  // every edge.
  const std::vector<int> shape = {2, 7, 5, 3};
  const int count = 2 * 7 * 5 * 3;
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    for (const char* lrn : params) {
      for (bool in_place : {false, true}) {
        SCOPED_TRACE(std::string(StorageTypeName(type)) + " " + lrn +
                     (in_place ? ", in place" : ""));
        Blob source(TestContext(), {2 * count});
        FillUniform(&source, -2.f, 2.f, 43);
        const std::vector<float> all = RoundedTo(source.ReadData(), type);
        const std::vector<float> x(all.begin(), all.begin() + count),
            dy(all.begin() + count, all.end());
        const std::string param = std::string("type: 'LRN' ") + lrn;
        const StorageRunInputs run{shape, x, dy, {}, in_place};
        const StorageRun half = RunLayerInStorage(param, type, run);
        const StorageRun full = RunLayerInStorage(param, StorageType::kFloat32, run);
        ASSERT_EQ(half.top, RoundedTo(full.top, type));
        ASSERT_EQ(half.bottom_diff, RoundedTo(full.bottom_diff, type));
        // The normalization changed the values: the comparisons can fail.
        ASSERT_NE(full.top, x);
        ASSERT_NE(full.bottom_diff, dy);
      }
    }
  }
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
