// The GEMM on 16-bit operands (GemmArgs::a_type, b_type, c_type;
// src/cl/gemm.cl's A_TYPE, B_TYPE, C_TYPE): 16-bit values are widened on
// load and C is rounded once on store, while the products and sums are the
// float kernel's, in the same order. So on values the 16-bit types hold
// exactly, every configuration's 16-bit result is the rounding of its own
// float result, bit for bit: with beta, the epilogue (row scale, bias,
// ReLU), transposes, image-grouped operands, implicit convolution windows,
// batches and split-K. Each configuration, layout and type is a program
// build of its own: CI runs a sample of each sweep that meets every value of
// each axis, DLCAFFE_NIGHTLY=1 all of it (util/test_depth.hpp).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "../../src/core/gemm_config.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/half_conversion.hpp"
#include "dlcaffe/math.hpp"
#include "util/storage_values.hpp"
#include "util/test_context.hpp"
#include "util/test_depth.hpp"

namespace dlcaffe {
namespace test {
namespace {

using F = StorageType;

// `n` random values that `type` holds exactly (as floats).
std::vector<float> Values(size_t n, StorageType type, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return RoundedTo(v, type);
}

std::vector<uint32_t> Download(Context& ctx, cl_mem mem, size_t n, StorageType type) {
  std::vector<char> bytes(n * StorageBytes(type));
  ctx.Read(mem, 0, bytes.size(), bytes.data());
  std::vector<float> values(n);
  StorageToFloats(bytes.data(), static_cast<int>(n), type, values.data());
  std::vector<uint32_t> bits(n);
  std::memcpy(bits.data(), values.data(), n * sizeof(float));
  return bits;
}

// The float result rounded to `type`, as bits.
std::vector<uint32_t> RoundedBits(Context& ctx, cl_mem mem, size_t n, StorageType type) {
  std::vector<float> values(n);
  ctx.Read(mem, 0, n * sizeof(float), values.data());
  values = RoundedTo(values, type);
  std::vector<uint32_t> bits(n);
  std::memcpy(bits.data(), values.data(), n * sizeof(float));
  return bits;
}

struct Types {
  StorageType a, b, c;
  std::string Name() const {
    return std::string(StorageTypeName(a)) + "," + StorageTypeName(b) + "," + StorageTypeName(c);
  }
};

const std::vector<Types> kTypes = {{F::kFloat16, F::kFloat16, F::kFloat16},
                                   {F::kBFloat16, F::kBFloat16, F::kBFloat16},
                                   {F::kFloat16, F::kFloat32, F::kFloat16},
                                   {F::kFloat32, F::kBFloat16, F::kFloat32},
                                   {F::kFloat16, F::kFloat16, F::kFloat32},
                                   {F::kBFloat16, F::kFloat32, F::kFloat16}};

// Runs `g` (A, B, C sizes in elements) once with float operands and once
// with `types`, from the same values, under `config` (null: the dispatcher),
// and compares C.
void Compare(GemmArgs g, size_t a_size, size_t b_size, size_t c_size, const Types& types,
             const GemmConfig* config, const std::string& what) {
  Context& ctx = TestContext();
  SCOPED_TRACE(what + " " + types.Name() + (config ? " [" + config->Name() + "]" : ""));
  const std::vector<float> a = Values(a_size, types.a, 3), b = Values(b_size, types.b, 5),
                           c = Values(c_size, types.c, 7);
  const std::vector<float> bias = Values(std::max(g.M, 1) * std::max(g.batch, 1), F::kFloat32, 9);
  BufferPtr bias_buffer = UploadAs(ctx, bias, F::kFloat32);
  if (g.bias) g.bias = bias_buffer->mem();
  if (g.row_scale) g.row_scale = bias_buffer->mem();
  BufferPtr fa = UploadAs(ctx, a, F::kFloat32), fb = UploadAs(ctx, b, F::kFloat32),
            fc = UploadAs(ctx, c, F::kFloat32);
  BufferPtr ta = UploadAs(ctx, a, types.a), tb = UploadAs(ctx, b, types.b),
            tc = UploadAs(ctx, c, types.c);
  GemmArgs full = g, typed = g;
  full.A = fa->mem();
  full.B = fb->mem();
  full.C = fc->mem();
  typed.A = ta->mem();
  typed.B = tb->mem();
  typed.C = tc->mem();
  typed.a_type = types.a;
  typed.b_type = types.b;
  typed.c_type = types.c;
  for (GemmArgs* run : {&full, &typed}) {
    if (config)
      GemmWithConfig(ctx, *run, *config);
    else
      Gemm(ctx, *run);
  }
  const std::vector<uint32_t> want = RoundedBits(ctx, fc->mem(), c_size, types.c);
  const std::vector<uint32_t> got = Download(ctx, tc->mem(), c_size, types.c);
  int failures = 0;
  for (size_t i = 0; i < c_size && failures < 5; ++i)
    if (got[i] != want[i]) {
      float x, y;
      std::memcpy(&x, &got[i], 4);
      std::memcpy(&y, &want[i], 4);
      ADD_FAILURE() << "C[" << i << "] = " << x << ", the rounded float result is " << y;
      ++failures;
    }
}

// Each configuration once per operand layout branch (untransposed and
// transposed operands), in float16 for one and bfloat16 for the other: every
// load and store macro of every configuration runs. (Each case is a program
// build of its own; PoCL takes about a second per build.) CI runs each
// configuration in one of its layouts, pairs of configurations alternating
// between them, so that each layout meets both types (every configuration's
// macros for one layout); DLCAFFE_NIGHTLY=1 runs both.
TEST(GemmStorage, EveryConfigurationRoundsTheFloatResult) {
  const std::vector<GemmConfig> family = GemmConfigFamily();
  for (size_t i = 0; i < family.size(); ++i) {
    const GemmConfig& config = family[i];
    const int layouts = config.Supports(Transpose::kYes, Transpose::kYes) ? 2 : 1;
    int layout = 0;
    for (const auto& [op_a, op_b] : {std::pair{Transpose::kNo, Transpose::kNo},
                                     std::pair{Transpose::kYes, Transpose::kYes},
                                     std::pair{Transpose::kNo, Transpose::kYes}}) {
      if (!config.Supports(op_a, op_b) || layout == 2) continue;
      const bool sampled = InSample(layout, layouts, static_cast<int>(i / 2));
      const Types& types = kTypes[(i + layout++) % 2];
      if (!sampled) continue;
      GemmArgs g;
      g.trans_a = op_a;
      g.trans_b = op_b;
      g.M = 13;
      g.N = 37;
      g.K = 29;
      g.alpha = 0.75f;
      g.beta = 0.5f;
      g.relu = true;
      g.bias = reinterpret_cast<cl_mem>(1);  // Compare binds the real one
      Compare(g, 13 * 29, 29 * 37, 13 * 37, types, &config,
              std::string("13x37x29 ") + (op_a == Transpose::kYes ? "A^T" : "A") +
                  (op_b == Transpose::kYes ? " B^T" : " B"));
    }
  }
}

// The dispatcher's choice with every mix of operand types, a batch and C =
// beta C alone. (In CI the batch runs in each type under every other
// configuration.)
TEST(GemmStorage, DispatcherShapesBatchesAndScaleOnly) {
  GemmConfig sliced = GpuShapedGemmConfig();
  sliced.k_slices = 3;
  for (const Types& types : kTypes) {
    GemmArgs g;
    g.M = 64;
    g.N = 300;
    g.K = 500;
    g.beta = 1.f;
    g.row_scale = reinterpret_cast<cl_mem>(1);
    Compare(g, 64 * 500, 500 * 300, 64 * 300, types, nullptr, "64x300x500 row scale");
    GemmArgs scale_only;
    scale_only.M = 5;
    scale_only.N = 7;
    scale_only.K = 0;
    scale_only.beta = 0.25f;
    Compare(scale_only, 0, 0, 35, types, nullptr, "K = 0");
  }
  for (size_t t = 0; t < 2; ++t) {
    int k = 0;
    GemmArgs batch;
    batch.M = 9;
    batch.N = 17;
    batch.K = 11;
    batch.batch = 3;
    batch.a_batch_stride = 9 * 11;
    batch.b_batch_stride = 11 * 17;
    batch.c_batch_stride = 9 * 17;
    for (const GemmConfig& config : {GpuShapedGemmConfig(), sliced, CpuShapedGemmConfig()})
      if (InSample(static_cast<int>(t) + k++, 2))
        Compare(batch, 3 * 9 * 11, 3 * 11 * 17, 3 * 9 * 17, kTypes[t], &config, "batch of 3");
  }
}

// Image-grouped operands and implicit convolution windows (GPU shape only),
// in one tile, split-K and narrow configuration. (In CI each type under
// every other configuration: float16 in one tile and the narrow one,
// bfloat16 split-K.)
TEST(GemmStorage, GroupedOperandsAndImplicitWindows) {
  GemmConfig sliced = GpuShapedGemmConfig();
  sliced.k_slices = 3;
  for (size_t t = 0; t < 2; ++t) {
    const Types& types = kTypes[t];
    int k = 0;
    for (const GemmConfig& config : {GpuShapedGemmConfig(), sliced, GpuNarrowGemmConfig()}) {
      if (!InSample(static_cast<int>(t) + k++, 2)) continue;
      // As a convolution's NCHW blobs: C (6 channels x 2 images of 15
      // positions) = A (6 x 10) * B (10 channels x 2 images of 15).
      GemmArgs grouped;
      grouped.M = 6;
      grouped.N = 30;
      grouped.K = 10;
      grouped.ldb = 15;
      grouped.b_group = 15;
      grouped.b_image = 10 * 15;
      grouped.ldc = 15;
      grouped.c_group = 15;
      grouped.c_image = 6 * 15;
      grouped.beta = 1.f;
      Compare(grouped, 60, 2 * 10 * 15, 2 * 6 * 15, types, &config, "grouped B and C");
      // Convolution windows: 3 x 3 kernel, pad 1, over 2 images of 2 x 5 x 6.
      GemmArgs window;
      window.b_window.height = 5;
      window.b_window.width = 6;
      window.b_window.kernel_h = window.b_window.kernel_w = 3;
      window.b_window.pad_h = window.b_window.pad_w = 1;
      window.b_window.out_h = 5;
      window.b_window.out_w = 6;
      window.b_window.image_floats = 2 * 5 * 6;
      window.M = 4;
      window.K = 2 * 9;
      window.N = 2 * 30;
      Compare(window, 4 * 18, 2 * 60, 4 * 60, types, &config, "implicit windows");
    }
  }
}

// Interior tiles of 16-bit operands fetched as 4-element vectors (the GPU
// shape's VEC_LOAD path), in every layout, beside guarded edge tiles.
TEST(GemmStorage, SixteenBitVectorFetches) {
  const GemmConfig config = GpuShapedGemmConfig();
  int layout = 0;
  for (const auto& [op_a, op_b] :
       {std::pair{Transpose::kNo, Transpose::kNo}, std::pair{Transpose::kYes, Transpose::kNo},
        std::pair{Transpose::kNo, Transpose::kYes}, std::pair{Transpose::kYes, Transpose::kYes}}) {
    GemmArgs g;
    g.trans_a = op_a;
    g.trans_b = op_b;
    g.M = 136;  // one whole 128 x 128 tile, 48 deep, and edges in m and n
    g.N = 132;
    g.K = 48;
    g.beta = 0.5f;
    const Types& types = kTypes[layout++ % 2];
    GemmArgs typed = g;
    typed.a_type = types.a;
    typed.b_type = types.b;
    const VectorLoads vectors = UsesVectorLoads(config, typed);
    ASSERT_TRUE(vectors.a && vectors.b) << "the case no longer reaches the vector fetches";
    Compare(g, 136 * 48, 48 * 132, 136 * 132, types, &config,
            std::string("136x132x48 ") + (op_a == Transpose::kYes ? "A^T" : "A") +
                (op_b == Transpose::kYes ? " B^T" : " B"));
  }
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
