// Convolution in a 16-bit math on its own 16-bit storage (FLOAT16 or
// BFLOAT16 blobs and math, a mixed-precision net's default). Where the
// GEMM's cp.async pipeline streams that type (core/matrix_engine.hpp,
// MmaPipelineStreams), the forward and weight-gradient products read
// im2col's columns stored in 16 bits and the weights rounded to 16 bits, and
// reach the pipeline; elsewhere they read implicit windows and the float
// weights, as before. Either way the results are the direct sums: the inputs
// and weights here are values of the 16-bit type, so the products are exact
// in float and only the float sums' order and the top's final rounding
// separate a result from the double-precision reference.
#include <gtest/gtest.h>

#include <cmath>
#include <iterator>
#include <string>
#include <vector>

#include "../../src/core/gemm_config.hpp"
#include "../../src/core/gemm_tuning.hpp"
#include "../../src/core/matrix_engine.hpp"
#include "dlcaffe/blob.hpp"
#include "util/convolution_sums.hpp"
#include "util/layer_test_util.hpp"
#include "util/random_values.hpp"
#include "util/storage_layer_run.hpp"
#include "util/storage_values.hpp"
#include "util/test_context.hpp"
#include "util/test_depth.hpp"

namespace dlcaffe {
namespace test {
namespace {

struct Geometry : ConvolutionShape {
  const char* name;
  std::string Param(StorageType type) const {
    const std::string math = type == StorageType::kFloat16 ? "FLOAT16" : "BFLOAT16";
    return "name: 'conv' type: 'Convolution' forward_math: " + math + " backward_math: " +
           math + " convolution_param { num_output: " + std::to_string(outputs) +
           " kernel_size: " + std::to_string(kernel) + " stride: " + std::to_string(stride) +
           " pad: " + std::to_string(pad) + " group: " + std::to_string(group) + " }";
  }
};

// Areas whose rounds are whole 16-byte chunks of 16-bit values (12 x 12,
// 8 x 8 outputs) and one that is not (7 x 7: windows on every device).
const Geometry kGeometries[] = {
    {{2, 16, 12, 12, 24, 3, 1, 1, 1, 1}, "3x3_pad1"},
    {{2, 16, 15, 15, 32, 3, 2, 1, 2, 1}, "3x3_stride2_groups"},
    {{3, 8, 7, 7, 16, 5, 1, 2, 1, 1}, "5x5_pad2_odd_area"},
};

class ConvolutionPipeline : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    SetTestOption("kernel_shape", "gpu");
    SetTestOption("implicit_gemm", GetParam());
    SetTestOption("winograd", "off");
    // The NCHW paths (channels-last ones: test_convolution_channels_last).
    SetTestOption("conv_channels_last", "off");
  }
  void TearDown() override {
    for (const char* name : {"kernel_shape", "implicit_gemm", "winograd", "conv_channels_last"})
      ResetTestOption(name);
  }
};

// Each geometry compiles its own implicit-window kernels, for each type.
// CI checks each geometry in one type per setting, alternating along the
// geometries: FLOAT16, BFLOAT16, FLOAT16 under auto and on (which read the
// same windows where the pipeline does not stream), the other type under
// off. So every setting meets every geometry and both types, and every
// geometry both types. DLCAFFE_NIGHTLY=1 checks all of them in both types.
TEST_P(ConvolutionPipeline, SixteenBitMathGivesTheDirectSums) {
  Context& ctx = TestContext();
  const int phase = std::string(GetParam()) == "off" ? 1 : 0;
  const StorageType types[] = {StorageType::kFloat16, StorageType::kBFloat16};
  for (int t = 0; t < 2; ++t) {
    const StorageType type = types[t];
    const MatrixMath math =
        type == StorageType::kFloat16 ? MatrixMath::kFloat16 : MatrixMath::kBFloat16;
    const double ulp_16 = std::ldexp(1.0, type == StorageType::kFloat16 ? -10 : -7);
    for (int gi = 0; gi < static_cast<int>(std::size(kGeometries)); ++gi) {
      if (!InSample(t + gi, 2, phase)) continue;
      const Geometry& g = kGeometries[gi];
      SCOPED_TRACE(std::string(StorageTypeName(type)) + " " + g.name);
      const int ho = g.out_h(), wo = g.out_w();
      const int weights = g.outputs * g.per_group() * g.kernel * g.kernel;
      const int bottom = g.images * g.channels * g.height * g.width;
      const int top = g.images * g.outputs * ho * wo;
      // Values of the 16-bit type throughout: exact products in float.
      const std::vector<float> all =
          RoundedTo(RandomValues(bottom + top + weights + g.outputs, 23), type);
      const std::vector<float> x(all.begin(), all.begin() + bottom);
      const std::vector<float> dy(all.begin() + bottom, all.begin() + bottom + top);
      const std::vector<float> w(all.begin() + bottom + top, all.begin() + bottom + top + weights);
      const std::vector<float> b(all.begin() + bottom + top + weights, all.end());
      std::vector<float> params = w;
      params.insert(params.end(), b.begin(), b.end());

      GemmRecording recording(TestContext());
      const StorageRun run = RunLayerInStorage(
          g.Param(type), type,
          StorageRunInputs({g.images, g.channels, g.height, g.width}, x, dy, params));
      const int window = g.per_group() * g.kernel * g.kernel;
      using R = ConvolutionResult;
      ExpectExactSums(run.top, DirectConvolution(g, x, w, b, dy, R::kTop), window, ulp_16, "top");
      ExpectExactSums(run.param_diffs[0], DirectConvolution(g, x, w, b, dy, R::kWeightGradient),
                      g.images * ho * wo, 0, "weight gradient");
      ExpectExactSums(run.bottom_diff, DirectConvolution(g, x, w, b, dy, R::kBottomGradient),
                      g.outputs / g.group * g.kernel * g.kernel, ulp_16, "bottom gradient");

      // Which operands the forward (W * col) and weight-gradient (dy * col^T)
      // products read: im2col's 16-bit columns and 16-bit weights, through
      // the pipeline, where it streams this type and the areas are whole
      // chunks; else implicit windows (implicit_gemm on, or no engine), or
      // im2col's 16-bit columns under implicit_gemm off.
      const bool chunked = g.images * ho * wo % 8 == 0;
      const bool streams = MmaPipelineStreams(ctx, ctx.default_choices(), math, type);
      const bool windows = std::string(GetParam()) != "off" && !(streams && chunked &&
                                                                 std::string(GetParam()) == "auto");
      int checked = 0;
      for (const GemmArgs& p : recording.products()) {
        const int outputs = g.outputs / g.group;
        const bool weight_product = p.beta == 0.f && p.M == outputs && p.K == window;  // W * col
        const bool weight_gradient = p.beta == 1.f && p.M == outputs;  // += dy * col^T
        if (!weight_product && !weight_gradient) continue;
        ++checked;
        EXPECT_EQ(p.b_window.active(), windows) << "M " << p.M << " N " << p.N << " K " << p.K;
        if (!windows) {
          EXPECT_EQ(p.b_type, type) << "im2col's columns keep the blob's type";
        }
        if (weight_product) {
          EXPECT_EQ(p.a_type, MmaRoundsTo(ctx, ctx.default_choices(), math, type) ? type : StorageType::kFloat32)
              << "the weights, rounded where the tensor cores would round them";
        }
        if (streams && chunked && !windows && g.group == 1) {
          EXPECT_GE(MmaPipelineStages(ctx, ChooseGemmConfig(ctx, p), p), 2)
              << "M " << p.M << " N " << p.N << " K " << p.K << " misses the pipeline";
        }
      }
      EXPECT_EQ(checked, 2) << "the forward and weight-gradient products";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ImplicitGemm, ConvolutionPipeline, ::testing::Values("auto", "on", "off"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

}  // namespace
}  // namespace test
}  // namespace dlcaffe
