// Convolution channels-last (core/channels_last_convolution.hpp): the
// forward, weight-gradient and (stride 1) data-gradient products as implicit
// GEMMs over NHWC copies of the blobs, checked against the definition in
// double. `on` forces them on any device (on PoCL the float tiled kernel
// reads the channels-last windows); `auto` takes them where the tensor
// cores' cp.async pipeline streams the blobs' type, and there the products
// must reach the pipeline. The inputs and weights are values of the 16-bit
// type, so every product is exact in float and only the float sums' order
// and a 16-bit top's rounding separate a result from the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <iterator>
#include <string>
#include <vector>

#include "../../src/core/gemm_config.hpp"
#include "../../src/core/gemm_tuning.hpp"
#include "../../src/core/matrix_engine.hpp"
#include "dlcaffe/blob.hpp"
#include "dlcaffe/layer_registry.hpp"
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
  std::string Param(const char* math) const {
    return std::string("name: 'conv' type: 'Convolution' forward_math: ") + math +
           " backward_math: " + math + " convolution_param { num_output: " +
           std::to_string(outputs) + " kernel_size: " + std::to_string(kernel) +
           " stride: " + std::to_string(stride) + " pad: " + std::to_string(pad) +
           " dilation: " + std::to_string(dilation) + " }";
  }
};

// Channels and outputs in whole 16-byte chunks of 16-bit values (8); odd and
// non-square images; a strided layer, whose data gradient keeps col2im; a
// dilated one; one without padding; and an RGB first layer's 3 channels,
// which the copies pad with zeros to a chunk (8 values in 16 bits, 4 in
// float).
const Geometry kGeometries[] = {
    {{2, 16, 9, 11, 24, 3, 1, 1, 1, 1}, "3x3_pad1"},
    {{2, 8, 13, 12, 16, 3, 2, 1, 1, 1}, "3x3_stride2"},
    {{3, 8, 10, 7, 16, 3, 1, 2, 1, 2}, "3x3_dilation2_pad2"},
    {{2, 8, 9, 9, 8, 5, 1, 0, 1, 1}, "5x5_pad0"},
    {{2, 3, 11, 10, 16, 3, 1, 1, 1, 1}, "3x3_3channels_padded"},
};
constexpr int kPaddedGeometry = 4;

struct Mode {
  StorageType storage;
  const char* math;
  MatrixMath matrix_math;
};
const Mode kModes[] = {
    {StorageType::kFloat16, "FLOAT16", MatrixMath::kFloat16},
    {StorageType::kBFloat16, "BFLOAT16", MatrixMath::kBFloat16},
    {StorageType::kFloat32, "FLOAT", MatrixMath::kFloat32},
};

class ConvolutionChannelsLast : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    SetTestOption("kernel_shape", "gpu");
    SetTestOption("winograd", "off");
    SetTestOption("conv_channels_last", GetParam());
  }
  void TearDown() override {
    for (const char* name : {"kernel_shape", "winograd", "conv_channels_last"})
      ResetTestOption(name);
  }
};

// Under `on`, CI runs geometry i in mode i (each pair builds kernels of its
// own, 6 s apiece on PoCL; the 5x5 one is left to DLCAFFE_NIGHTLY=1, which
// runs every pair), and the padded one in FLOAT16 and float (8 and 4
// channels). Under `auto`, every geometry in each
// mode the pipeline streams (none on a device without it: the older paths
// there have the other convolution tests).
TEST_P(ConvolutionChannelsLast, ProductsGiveTheDirectSums) {
  Context& ctx = TestContext();
  const bool forced = std::string(GetParam()) == "on";
  int runs = 0;
  for (int mi = 0; mi < static_cast<int>(std::size(kModes)); ++mi) {
    const Mode& mode = kModes[mi];
    const bool streams = MmaPipelineStreams(ctx, ctx.default_choices(), mode.matrix_math, mode.storage);
    if (!forced && !streams) continue;
    const double ulp_16 = mode.storage == StorageType::kFloat16    ? std::ldexp(1.0, -10)
                          : mode.storage == StorageType::kBFloat16 ? std::ldexp(1.0, -7)
                                                                   : 0;
    const StorageType values = mode.storage == StorageType::kBFloat16 ? StorageType::kBFloat16
                                                                      : StorageType::kFloat16;
    for (int gi = 0; gi < static_cast<int>(std::size(kGeometries)); ++gi) {
      const bool sampled = gi == kPaddedGeometry ? mi != 1 : InSample(gi - mi + 4, 4);
      if (forced && !sampled) continue;
      ++runs;
      const Geometry& g = kGeometries[gi];
      SCOPED_TRACE(std::string(StorageTypeName(mode.storage)) + " " + g.name);
      const int ho = g.out_h(), wo = g.out_w();
      const int weights = g.outputs * g.channels * g.kernel * g.kernel;
      const int bottom = g.images * g.channels * g.height * g.width;
      const int top = g.images * g.outputs * ho * wo;
      const std::vector<float> all =
          RoundedTo(RandomValues(bottom + top + weights + g.outputs, 31 + gi), values);
      const std::vector<float> x(all.begin(), all.begin() + bottom);
      const std::vector<float> dy(all.begin() + bottom, all.begin() + bottom + top);
      const std::vector<float> w(all.begin() + bottom + top, all.begin() + bottom + top + weights);
      const std::vector<float> b(all.begin() + bottom + top + weights, all.end());
      std::vector<float> params = w;
      params.insert(params.end(), b.begin(), b.end());

      GemmRecording recording(TestContext());
      const StorageRun run = RunLayerInStorage(
          g.Param(mode.math), mode.storage,
          StorageRunInputs({g.images, g.channels, g.height, g.width}, x, dy, params));
      const int window = g.channels * g.kernel * g.kernel;
      using R = ConvolutionResult;
      ExpectExactSums(run.top, DirectConvolution(g, x, w, b, dy, R::kTop), window, ulp_16, "top");
      ExpectExactSums(run.param_diffs[0], DirectConvolution(g, x, w, b, dy, R::kWeightGradient),
                      g.images * ho * wo, 0, "weight gradient");
      ExpectExactSums(run.bottom_diff, DirectConvolution(g, x, w, b, dy, R::kBottomGradient),
                      g.outputs * g.kernel * g.kernel, ulp_16, "bottom gradient");

      // Which products read channels-last windows: forward and weight
      // gradient, and the data gradient of stride-1 layers; with the
      // pipeline streaming this type, through it.
      const bool channels_last = forced || streams;
      int read = 0;
      for (const GemmArgs& p : recording.products()) {
        if (p.b_window.nhwc_channels == 0) continue;
        ++read;
        if (streams) {
          EXPECT_GE(MmaPipelineStages(ctx, ChooseGemmConfig(ctx, p), p), 2)
              << "M " << p.M << " N " << p.N << " K " << p.K << " misses the pipeline";
        }
      }
      EXPECT_EQ(read, channels_last ? (g.stride == 1 ? 3 : 2) : 0);
    }
  }
  if (runs == 0) GTEST_SKIP() << "the device's pipeline streams none of the modes";
}

// The weight gradient adds into the diff, as Caffe's layers do: two
// backward passes give twice one (the same float sums, doubled exactly).
// Forced on: the first geometry's FLOAT16 kernels, built above.
TEST(ConvolutionChannelsLastForced, WeightGradientAccumulates) {
  SetTestOption("kernel_shape", "gpu");
  SetTestOption("conv_channels_last", "on");
  const Geometry& g = kGeometries[0];
  Context& ctx = TestContext();
  auto layer = LayerRegistry::Create(LayerParam(g.Param("FLOAT16")), ctx);
  Blob bottom(ctx), top(ctx);
  bottom.set_storage_type(StorageType::kFloat16);
  top.set_storage_type(StorageType::kFloat16);
  bottom.Reshape({g.images, g.channels, g.height, g.width});
  layer->SetUp({&bottom}, {&top});
  bottom.WriteData(RoundedTo(RandomValues(bottom.count(), 5), StorageType::kFloat16));
  layer->Forward({&bottom}, {&top});
  top.WriteDiff(RoundedTo(RandomValues(top.count(), 6), StorageType::kFloat16));
  layer->blobs()[0]->SetDiff(0.f);
  layer->Backward({&top}, {false}, {&bottom});
  const std::vector<float> once = layer->blobs()[0]->ReadDiff();
  layer->Backward({&top}, {false}, {&bottom});
  const std::vector<float> twice = layer->blobs()[0]->ReadDiff();
  ASSERT_EQ(once.size(), twice.size());
  bool nonzero = false;
  for (size_t i = 0; i < once.size(); ++i) {
    ASSERT_EQ(twice[i], 2 * once[i]) << "[" << i << "]";
    nonzero = nonzero || once[i] != 0.f;
  }
  EXPECT_TRUE(nonzero);
  ResetTestOption("kernel_shape");
  ResetTestOption("conv_channels_last");
}

INSTANTIATE_TEST_SUITE_P(Setting, ConvolutionChannelsLast, ::testing::Values("on", "auto"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

}  // namespace
}  // namespace test
}  // namespace dlcaffe
