// Permute and StridedSlice with 16-bit bottom and top (mixed precision):
// they move values as they are stored, so the 16-bit layer's top and bottom
// gradient equal the float32 layer's bit for bit on values the type holds,
// including a negative step and the gradient's zeros outside a slice.
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

TEST(StridedCopyStorage, SixteenBitLayersMoveWhatFloatLayersMove) {
  const std::vector<int> shape = {3, 4, 5};
  struct Case {
    const char* param;
    int top_count;
  };
  const Case cases[] = {
      {"type: 'Permute' permute_param { order: 2 order: 0 order: 1 }", 60},
      {"type: 'Permute' permute_param { }", 60},  // reversed axes
      // axis 2 from 4 down to 1 by -2 (2 values), axis 1 from 1 to 3 (2 values)
      {"type: 'StridedSlice' strided_slice_param { axis: 2 start: 4 end: 0 step: -2 "
       "axis: 1 start: 1 end: 3 step: 1 }",
       3 * 2 * 2},
  };
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(StorageTypeName(type)) + " " + c.param);
      Blob source(TestContext(), {60 + c.top_count});
      FillUniform(&source, -1.f, 1.f, 47);
      const std::vector<float> all = RoundedTo(source.ReadData(), type);
      const StorageRunInputs run{shape, std::vector<float>(all.begin(), all.begin() + 60),
                                 std::vector<float>(all.begin() + 60, all.end())};
      const StorageRun half = RunLayerInStorage(c.param, type, run);
      const StorageRun full = RunLayerInStorage(c.param, StorageType::kFloat32, run);
      ASSERT_EQ(half.top, full.top);
      ASSERT_EQ(half.bottom_diff, full.bottom_diff);
      ASSERT_EQ(full.top.size(), static_cast<size_t>(c.top_count));
      ASSERT_NE(full.bottom_diff, std::vector<float>(60, 0.f));
    }
  }
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
