// Reduce with 16-bit bottom and top (mixed precision): every operation, over
// the middle axes (the per-channel pattern, which in 16 bits takes the
// general kernels) and over alternating axes. Sums and ties are float, each
// value widened on load and each result rounded once on store, so on values
// the type holds exactly the top is the rounding of the float32 layer's, and
// so is the bottom gradient, given the float32 layer's backward reads the
// top as stored in 16 bits (L2's gradient x / y * dy reads it; MAX's and
// MIN's extremum is one of the values, so exact either way).
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

TEST(ReduceStorage, SixteenBitLayerRoundsTheFloatLayer) {
  const std::vector<int> shape = {3, 4, 5, 2};
  const int count = 3 * 4 * 5 * 2;
  struct Axes {
    const char* text;
    int top_count;
  };
  const Axes axes[] = {{"axis: 1 axis: 2", 3 * 2}, {"axis: 0 axis: 2", 4 * 2}};
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    for (const char* op : {"SUM", "MEAN", "MAX", "MIN", "SUM_SQUARE", "L1", "L2"}) {
      for (const Axes& a : axes) {
        SCOPED_TRACE(std::string(StorageTypeName(type)) + " " + op + " " + a.text);
        const std::string param = std::string("type: 'Reduce' reduce_param { operation: ") +
                                  op + " " + a.text + " }";
        Blob source(TestContext(), {count + a.top_count});
        FillUniform(&source, -1.f, 1.f, 71);
        const std::vector<float> all = RoundedTo(source.ReadData(), type);
        StorageRunInputs run{shape, std::vector<float>(all.begin(), all.begin() + count),
                             std::vector<float>(all.begin() + count, all.end())};
        const StorageRun half = RunLayerInStorage(param, type, run);
        run.after_forward = [type](Blob& top) { top.WriteData(RoundedTo(top.ReadData(), type)); };
        const StorageRun full = RunLayerInStorage(param, StorageType::kFloat32, run);
        ASSERT_EQ(half.top, RoundedTo(full.top, type));
        ASSERT_EQ(half.bottom_diff, RoundedTo(full.bottom_diff, type));
        ASSERT_NE(full.bottom_diff, std::vector<float>(count, 0.f));
      }
    }
  }
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
