// Scale and Bias with 16-bit bottom and top (mixed precision; a learned
// scale and bias, or Scale's second bottom, which stay float). Each output and bottom gradient is
// computed in float from the widened values and rounded once on store, and
// the parameter gradients are float sums of the same values, so on inputs
// the type holds exactly the 16-bit layer gives the rounding of the float32
// layer's top and bottom gradient and exactly its parameter gradients, in
// place (Scale then keeps its input in 16 bits for the gradient) or not.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/error_of.hpp"
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

struct TwoBottomRun {
  std::vector<float> top, x_diff, scale_diff;
  std::vector<std::vector<float>> param_diffs;
};

// Scale with its scale as bottom[1], stored in float32 whatever x's type.
TwoBottomRun RunTwoBottomScale(const std::string& param, StorageType type,
                               const std::vector<float>& x, const std::vector<float>& s,
                               const std::vector<float>& dy, bool in_place) {
  Context& ctx = TestContext();
  auto layer = MakeLayer(param);
  Blob bottom(ctx), scale(ctx, {3, 5}), top(ctx);
  bottom.set_storage_type(type);
  top.set_storage_type(type);
  bottom.Reshape(kShape);
  Blob* out = in_place ? &bottom : &top;
  layer->SetUp({&bottom, &scale}, {out});
  bottom.WriteData(x);
  scale.WriteData(s);
  for (auto& blob : layer->blobs()) {
    blob->WriteData(std::vector<float>(blob->count(), 0.25f));
    blob->SetDiff(0.f);
  }
  layer->Forward({&bottom, &scale}, {out});
  TwoBottomRun r;
  r.top = out->ReadData();
  out->WriteDiff(dy);
  layer->Backward({out}, {true, true}, {&bottom, &scale});
  r.x_diff = bottom.ReadDiff();
  r.scale_diff = scale.ReadDiff();
  for (auto& blob : layer->blobs()) r.param_diffs.push_back(blob->ReadDiff());
  return r;
}

// The scale as bottom[1] (the recurrent layers' cont * h) stays float32:
// read as a learned scale is, its gradient the float sums of the same
// values, so the 16-bit layer gives the rounding of the float32 layer's top
// and x gradient and exactly its scale (and bias) gradient.
TEST_P(ScaleBiasStorage, ASecondBottomScaleStaysFloat) {
  const int count = 2 * 3 * 5 * 7;
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    for (const char* param : {"name: 's' type: 'Scale' scale_param { axis: 1 }",
                              "name: 's' type: 'Scale' scale_param { axis: 1 bias_term: true }"}) {
      for (bool in_place : {false, true}) {
        SCOPED_TRACE(std::string(StorageTypeName(type)) + " " + param +
                     (in_place ? ", in place" : ""));
        Blob source(TestContext(), {2 * count + 15});
        FillUniform(&source, -1.f, 1.f, 31);
        const std::vector<float> all = source.ReadData();
        const std::vector<float> activations =
            RoundedTo(std::vector<float>(all.begin(), all.begin() + 2 * count), type);
        const std::vector<float> x(activations.begin(), activations.begin() + count),
            dy(activations.begin() + count, activations.end());
        const std::vector<float> s(all.begin() + 2 * count, all.end());  // not rounded
        const TwoBottomRun half = RunTwoBottomScale(param, type, x, s, dy, in_place);
        const TwoBottomRun full =
            RunTwoBottomScale(param, StorageType::kFloat32, x, s, dy, in_place);
        ASSERT_EQ(half.top, RoundedTo(full.top, type));
        ASSERT_NE(half.top, full.top);
        ASSERT_EQ(half.x_diff, RoundedTo(full.x_diff, type));
        ASSERT_EQ(half.scale_diff, full.scale_diff);
        ASSERT_NE(full.scale_diff, std::vector<float>(full.scale_diff.size(), 0.f));
        ASSERT_EQ(half.param_diffs, full.param_diffs);
      }
    }
  }
  // A 16-bit scale bottom is refused, naming the layer.
  Context& ctx = TestContext();
  auto layer = MakeLayer("name: 's' type: 'Scale' scale_param { axis: 1 }");
  Blob bottom(ctx), scale(ctx), top(ctx);
  for (Blob* b : {&bottom, &scale, &top}) b->set_storage_type(StorageType::kFloat16);
  bottom.Reshape(kShape);
  scale.Reshape({3, 5});
  const std::string error = ErrorOf([&] { layer->SetUp({&bottom, &scale}, {&top}); });
  EXPECT_NE(error.find("layer 's' (Scale): bottom[1] (the scale) must be stored in float32, "
                       "got float16"),
            std::string::npos)
      << error;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ScaleBiasStorage, ::testing::Values("cpu", "gpu"));

}  // namespace
}  // namespace test
}  // namespace dlcaffe
