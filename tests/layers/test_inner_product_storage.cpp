// InnerProduct with 16-bit bottom and top (mixed precision): its products
// go through the GEMM's 16-bit operands, which widen on load and round C
// once, so on inputs the type holds exactly
//   - without bias, the top and the bottom gradient are the roundings of the
//     float32 layer's, bit for bit (the reference reads the same rounded top
//     gradient);
//   - the weight gradient (float) equals the float32 layer's bit for bit;
//   - with bias, the product is rounded before the bias is added and the sum
//     again: within half a unit in the last place of the product plus one of
//     the result (the rounded float top);
//   - the bias gradient (column sums of a 16-bit gradient, through the GEMM)
//     equals the float sums to float rounding.
// Each storage type in each kernel shape is a set of GEMM programs of its
// own (the transposes mostly share them): CI runs one type per shape, every
// transpose and bias in it, the second test the other type than the first,
// so that each type meets both shapes; DLCAFFE_NIGHTLY=1 runs both types in
// both shapes (util/test_depth.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "../../src/core/matrix_engine.hpp"
#include "dlcaffe/half_conversion.hpp"
#include "util/layer_test_util.hpp"
#include "util/storage_layer_run.hpp"
#include "util/storage_values.hpp"
#include "util/test_context.hpp"
#include "util/test_depth.hpp"

namespace dlcaffe {
namespace test {
namespace {

class InnerProductStorage : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { SetTestOption("kernel_shape", GetParam()); }
  void TearDown() override { ResetTestOption("kernel_shape"); }
  // Whether `type` runs in this kernel shape: in CI, float16 in the CPU
  // shape and bfloat16 in the GPU one (phase 0), or the other way (1).
  bool InSampleHere(StorageType type, int phase) const {
    const int shape = std::string(GetParam()) == "gpu" ? 1 : 0;
    return InSample(shape + (type == StorageType::kBFloat16 ? 1 : 0), 2, phase);
  }
};

TEST_P(InnerProductStorage, SixteenBitLayerRoundsTheFloatLayer) {
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    if (!InSampleHere(type, 0)) continue;
    for (bool transpose : {false, true}) {
      for (bool bias : {false, true}) {
        SCOPED_TRACE(std::string(StorageTypeName(type)) + (transpose ? " transpose" : "") +
                     (bias ? " bias" : ""));
        const std::vector<int> shape = {13, 3, 7};  // M = 13, K = 21
        const int N = 11, M = 13, K = 21;
        const std::string param =
            "name: 'ip' type: 'InnerProduct' inner_product_param { num_output: 11 bias_term: " +
            std::string(bias ? "true" : "false") + " transpose: " +
            (transpose ? "true" : "false") + " }";
        Blob source(TestContext(), {M * K + M * N + N * K});
        FillUniform(&source, -1, 1, 29);
        std::vector<float> all = RoundedTo(source.ReadData(), type);
        const std::vector<float> x(all.begin(), all.begin() + M * K),
            dy(all.begin() + M * K, all.begin() + M * K + M * N),
            w(all.begin() + M * K + M * N, all.end());
        std::vector<float> params = w;
        if (bias) params.insert(params.end(), N, 0.375f);
        const StorageRunInputs run{shape, x, dy, params};
        const StorageRun half = RunLayerInStorage(param, type, run);
        const StorageRun full = RunLayerInStorage(param, StorageType::kFloat32, run);
        const std::vector<float> rounded_top = RoundedTo(full.top, type);
        for (size_t i = 0; i < rounded_top.size(); ++i) {
          if (!bias) {
            ASSERT_EQ(half.top[i], rounded_top[i]) << "top " << i;
          } else {
            const float product = full.top[i] - 0.375f;  // the bias is 0.375
            ASSERT_LE(std::fabs(half.top[i] - rounded_top[i]),
                      Ulp(product, type) / 2 + Ulp(rounded_top[i], type))
                << "top " << i;
          }
        }
        ASSERT_EQ(half.bottom_diff, RoundedTo(full.bottom_diff, type));
        ASSERT_EQ(half.param_diffs[0], full.param_diffs[0]);  // the weights'
        for (size_t n = 0; bias && n < size_t(N); ++n) {
          double magnitude = 0;
          for (int m = 0; m < M; ++m) magnitude += std::fabs(dy[m * N + n]);
          EXPECT_NEAR(half.param_diffs[1][n], full.param_diffs[1][n], M * 1.2e-7 * magnitude) << n;
        }
      }
    }
  }
}

// The weights stay float. Where the tensor cores multiply in the layer's
// math (an NVIDIA GPU: MmaRoundsTo), they would round the weights to the
// storage type as they load them; the layer rounds them once per update
// into a 16-bit copy instead, which the cp.async pipeline can stream (whole
// 16-byte rows: K and N multiples of 8). Elsewhere the portable kernels
// multiply the float weights as they are. So in the storage type's math the
// top and the bottom gradient must be the float32 layer's over the weights
// the device multiplies (rounded, or as they are), rounded: within one unit
// in the last place, as the tensor cores sum in another order than the
// float layer. The other weights must be further off somewhere, or the
// check could not tell them apart.
TEST_P(InnerProductStorage, WeightsActAsTheDeviceRoundsThem) {
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    if (!InSampleHere(type, 1)) continue;
    for (bool transpose : {false, true}) {
      SCOPED_TRACE(std::string(StorageTypeName(type)) + (transpose ? " transpose" : ""));
      const int M = 37, K = 40, N = 24;
      const std::string param =
          "name: 'ip' type: 'InnerProduct' inner_product_param { num_output: 24 bias_term: false"
          " transpose: " + std::string(transpose ? "true" : "false") + " }";
      const std::string name = type == StorageType::kFloat16 ? "FLOAT16" : "BFLOAT16";
      const std::string math = " forward_math: " + name + " backward_math: " + name;
      Blob source(TestContext(), {M * K + M * N + N * K});
      FillUniform(&source, -1, 1, 31);
      const std::vector<float> all = source.ReadData();
      const std::vector<float> x = RoundedTo({all.begin(), all.begin() + M * K}, type),
                               dy = RoundedTo({all.begin() + M * K, all.begin() + M * K + M * N},
                                              type),
                               w(all.begin() + M * K + M * N, all.end());
      const std::vector<float> rounded_w = RoundedTo(w, type);
      const MatrixMath matrix_math =
          type == StorageType::kFloat16 ? MatrixMath::kFloat16 : MatrixMath::kBFloat16;
      const bool rounds = MmaRoundsTo(TestContext(), TestContext().default_choices(), matrix_math, type);
      const StorageRun half = RunLayerInStorage(param + math, type, {{M, K}, x, dy, w});
      const StorageRun as_multiplied = RunLayerInStorage(param, StorageType::kFloat32,
                                                         {{M, K}, x, dy, rounds ? rounded_w : w});
      const StorageRun other = RunLayerInStorage(param, StorageType::kFloat32,
                                                 {{M, K}, x, dy, rounds ? w : rounded_w});
      ExpectMultipliedAs("top", half.top, as_multiplied.top, other.top, type);
      ExpectMultipliedAs("bottom diff", half.bottom_diff, as_multiplied.bottom_diff,
                         other.bottom_diff, type);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, InnerProductStorage, ::testing::Values("cpu", "gpu"));

}  // namespace
}  // namespace test
}  // namespace dlcaffe
