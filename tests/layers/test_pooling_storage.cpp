// Pooling with 16-bit bottom and top (mixed precision): values are widened
// on load, and each output is rounded once on store after the float
// kernel's own arithmetic. So on inputs the type holds exactly, the top and
// the bottom gradient are the roundings of the float32 layer's, bit for bit,
// for MAX (gather and scatter backward), AVE (with and without the padding
// in the divisor) and STOCHASTIC (the same seed picks the same elements).
// With the mask top the layer stays float32: a mask holds indices.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dlcaffe/net.hpp"
#include "../../src/passes/net_pass.hpp"
#include "util/layer_test_util.hpp"
#include "util/storage_layer_run.hpp"
#include "util/storage_values.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

struct Case {
  const char* name;
  const char* pooling_param;
  const char* phase;
  int pooled_h, pooled_w;  // for 9 x 7 inputs
};

// 9 x 7 planes: kernel 3, stride 2, pad 1 gives 5 x 4 (overlapping windows:
// the gathering backward); kernel 2, stride 2 gives 5 x 4 too (CEIL, no
// overlap: the scattering backward); kernel 3, stride 2, no pad, 4 x 3.
const Case kCases[] = {
    {"max_overlapping", "pool: MAX kernel_size: 3 stride: 2 pad: 1", "TRAIN", 5, 4},
    {"max_disjoint", "pool: MAX kernel_size: 2 stride: 2", "TRAIN", 5, 4},
    {"ave", "pool: AVE kernel_size: 3 stride: 2 pad: 1", "TRAIN", 5, 4},
    {"ave_excluding_padding",
     "pool: AVE kernel_size: 3 stride: 2 pad: 1 average_excludes_padding: true", "TRAIN", 5, 4},
    {"stochastic_train", "pool: STOCHASTIC kernel_size: 3 stride: 2", "TRAIN", 4, 3},
    {"stochastic_test", "pool: STOCHASTIC kernel_size: 3 stride: 2", "TEST", 4, 3},
};

class PoolingStorage : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { SetTestOption("kernel_shape", GetParam()); }
  void TearDown() override { ResetTestOption("kernel_shape"); }
};

TEST_P(PoolingStorage, SixteenBitLayerRoundsTheFloatLayer) {
  const std::vector<int> shape = {2, 3, 9, 7};
  const int bottom_count = 2 * 3 * 9 * 7;
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    for (const Case& c : kCases) {
      SCOPED_TRACE(std::string(StorageTypeName(type)) + " " + c.name);
      const std::string phase = c.phase;
      const bool stochastic = std::string(c.name).rfind("stochastic", 0) == 0;
      const std::string param = "name: 'pool' type: 'Pooling' phase: " + phase +
                                " pooling_param { " + c.pooling_param + " }";
      const int top_count = 2 * 3 * c.pooled_h * c.pooled_w;
      Blob source(TestContext(), {bottom_count + top_count});
      // Stochastic pooling samples in proportion to non-negative inputs.
      FillUniform(&source, stochastic ? 0.f : -1.f, 1.f, 31);
      const std::vector<float> all = RoundedTo(source.ReadData(), type);
      const std::vector<float> x(all.begin(), all.begin() + bottom_count),
          dy(all.begin() + bottom_count, all.end());
      // STOCHASTIC has a gradient only in training.
      const bool backward = phase == "TRAIN";
      StorageRunInputs run{shape, x, dy};
      run.backward = backward;
      // STOCHASTIC draws its seed from the context.
      run.before_forward = [] { TestContext().Seed(1234); };
      const StorageRun half = RunLayerInStorage(param, type, run);
      const StorageRun full = RunLayerInStorage(param, StorageType::kFloat32, run);
      ASSERT_EQ(half.top, RoundedTo(full.top, type));
      ASSERT_EQ(half.bottom_diff, RoundedTo(full.bottom_diff, type));
      // Not all zero: the comparisons above can fail.
      ASSERT_NE(full.top, std::vector<float>(full.top.size(), 0.f));
      if (backward) {
        ASSERT_NE(full.bottom_diff, std::vector<float>(full.bottom_diff.size(), 0.f));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, PoolingStorage, ::testing::Values("cpu", "gpu"));

TEST(PoolingStorage, WithTheMaskTopItStaysFloat) {
  caffe::NetParameter net = NetFromText(R"(
    default_forward_type: FLOAT16
    layer { name: 'x' type: 'Input' top: 'x' input_param { shape { dim: 1 dim: 2 dim: 4 dim: 4 } } }
    layer { name: 'plain' type: 'Pooling' bottom: 'x' top: 'p'
            pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
    layer { name: 'masked' type: 'Pooling' bottom: 'x' top: 'q' top: 'mask'
            pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
  )");
  caffe::NetParameter typed;
  AssignStorageTypes(net, TestContext(), &typed);
  for (const auto& layer : typed.layer()) {
    if (layer.name() == "plain") {
      EXPECT_EQ(layer.forward_type(), caffe::FLOAT16);
    }
    if (layer.name() == "masked") {
      EXPECT_EQ(layer.forward_type(), caffe::FLOAT);
      EXPECT_EQ(layer.bottom(0), "x_as_float");
    }
  }
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
