// The GEMM with GemmArgs::math beyond float32 (core/matrix_engine.hpp).
//
// Where the device has the matrix engine for a form (NVIDIA, compute
// capability 8.0 or more: the GPU check runs this there), the GPU-shaped
// configurations multiply on the tensor cores. Their result must then be the
// product of the inputs rounded to the form's type (f16, bf16: to nearest
// even; tf32: to nearest, ties away), summed in float. The reference is the
// float kernel run on inputs rounded here: its products are exact too, so
// the two differ only in how the sums round, bounded per element by
// (K + 8) * 2^-22 * |alpha| * sum_k |a'_ik| |b'_kj| (that sum is the float
// kernel's product of the absolute values). A fragment in the wrong place
// is off by the size of a product, far outside. The engine must also have
// run: the result must differ somewhere from float32 math on the unrounded
// inputs.
//
// Elsewhere (PoCL, CI) the product runs the float kernel: the result is
// float32 math's bit for bit, and a device without the instruction must
// say so (MmaFormFor gives none).
//
// Each case, configuration, storage type and form is a program build of its
// own (about a second on PoCL; clang's for the PTX). CI runs a sample of the
// sweeps below that meets every value of each axis (each configuration and
// each storage type both values of each transpose); DLCAFFE_NIGHTLY=1 runs
// them all (util/test_depth.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "../../src/core/gemm_config.hpp"
#include "../../src/core/matrix_engine.hpp"
#include "util/clang_ptx.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/half_conversion.hpp"
#include "dlcaffe/math.hpp"
#include "dlcaffe/program_cache.hpp"
#include "util/storage_values.hpp"
#include "util/test_context.hpp"
#include "util/test_depth.hpp"

namespace dlcaffe {
namespace test {
namespace {

using F = StorageType;

const MatrixMath kMaths[] = {MatrixMath::kFloat16, MatrixMath::kBFloat16, MatrixMath::kTF32};

const char* MathName(MatrixMath math) {
  switch (math) {
    case MatrixMath::kFloat16: return "float16 math";
    case MatrixMath::kBFloat16: return "bfloat16 math";
    case MatrixMath::kTF32: return "tf32 math";
    case MatrixMath::kFloat32: break;
  }
  return "float32 math";
}

// x rounded as the tensor cores' input conversion rounds it.
float RoundForMath(float x, MatrixMath math) {
  switch (math) {
    case MatrixMath::kFloat16: return HalfToFloat(FloatToHalf(x));
    case MatrixMath::kBFloat16: return BFloat16ToFloat(FloatToBFloat16(x));
    case MatrixMath::kTF32: {  // cvt.rna.tf32.f32: 10 mantissa bits, ties away
      uint32_t bits;
      std::memcpy(&bits, &x, 4);
      bits = (bits + 0x1000u) & ~0x1fffu;
      std::memcpy(&x, &bits, 4);
      return x;
    }
    case MatrixMath::kFloat32: break;
  }
  return x;
}

std::vector<float> Random(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

std::vector<float> Download(Context& ctx, cl_mem mem, size_t n, StorageType type) {
  std::vector<char> bytes(n * StorageBytes(type));
  ctx.Read(mem, 0, bytes.size(), bytes.data());
  std::vector<float> values(n);
  StorageToFloats(bytes.data(), static_cast<int>(n), type, values.data());
  return values;
}

struct Case {
  GemmArgs g;  // shapes, layout and epilogue; buffers are bound here
  size_t a_size, b_size, c_size;
  std::string what;
};

// Runs `c` under `config` in `math` and checks it as the header says.
void Check(const Case& c, MatrixMath math, const GemmConfig& config, StorageType storage) {
  Context& ctx = TestContext();
  SCOPED_TRACE(c.what + ", " + MathName(math) + ", " + StorageTypeName(storage) + " [" +
               config.Name() + "]");
  const std::vector<float> a = RoundedTo(Random(c.a_size, 3), storage),
                           b = RoundedTo(Random(c.b_size, 5), storage),
                           c0 = RoundedTo(Random(c.c_size, 7), storage);
  std::vector<float> ra(a), rb(b), abs_a(a), abs_b(b);
  for (size_t i = 0; i < a.size(); ++i) abs_a[i] = std::fabs(ra[i] = RoundForMath(a[i], math));
  for (size_t i = 0; i < b.size(); ++i) abs_b[i] = std::fabs(rb[i] = RoundForMath(b[i], math));
  const int rows = std::max({c.g.M, c.g.N, 1}) * std::max(c.g.batch, 1);
  std::vector<float> epilogue = Random(rows, 9), abs_epilogue(epilogue);
  for (float& x : abs_epilogue) x = std::fabs(x);
  BufferPtr epi = UploadAs(ctx, epilogue, F::kFloat32),
            abs_epi = UploadAs(ctx, abs_epilogue, F::kFloat32);

  // The product in `run_math` on `x`, `y` stored as `type`; C starts as c0.
  const auto run = [&](const std::vector<float>& x, const std::vector<float>& y,
                       MatrixMath run_math, StorageType type) {
    BufferPtr da = UploadAs(ctx, x, type), db = UploadAs(ctx, y, type),
              dc = UploadAs(ctx, c0, type);
    GemmArgs g = c.g;
    g.A = da->mem();
    g.B = db->mem();
    g.C = dc->mem();
    g.a_type = g.b_type = g.c_type = type;
    g.math = run_math;
    if (g.bias) g.bias = epi->mem();
    if (g.row_scale) g.row_scale = epi->mem();
    GemmWithConfig(ctx, g, config);
    return Download(ctx, dc->mem(), c.c_size, type);
  };
  const std::vector<float> got = run(a, b, math, storage);
  const std::vector<float> exact = run(a, b, MatrixMath::kFloat32, storage);
  const MmaForm form = MmaFormFor(ctx, ctx.default_choices(), math);
  if (form == MmaForm::kNone || !MmaWarpsM(config, form)) {
    // The float kernel ran: float32 math's bits.
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(std::memcmp(&got[i], &exact[i], 4), 0)
          << "C[" << i << "] = " << got[i] << ", float32 math gives " << exact[i];
    return;
  }
  // The reference: float products of the rounded inputs, in float C.
  const std::vector<float> want = run(ra, rb, MatrixMath::kFloat32, F::kFloat32);
  GemmArgs magnitude = c.g;  // |alpha| * |row scale| * sum |a'||b'|
  BufferPtr ma = UploadAs(ctx, abs_a, F::kFloat32), mb = UploadAs(ctx, abs_b, F::kFloat32),
            mc = ctx.Allocate(c.c_size * sizeof(float));
  magnitude.A = ma->mem();
  magnitude.B = mb->mem();
  magnitude.C = mc->mem();
  magnitude.alpha = std::fabs(c.g.alpha);
  magnitude.beta = 0.f;
  magnitude.bias = nullptr;
  magnitude.relu = false;
  if (magnitude.row_scale) magnitude.row_scale = abs_epi->mem();
  GemmWithConfig(ctx, magnitude, GpuShapedGemmConfig());
  const std::vector<float> sums = Download(ctx, mc->mem(), c.c_size, F::kFloat32);
  // A 16-bit C rounds each result once more: half an ulp of its type.
  const double c_rounding = storage == F::kFloat16    ? std::ldexp(1.0, -11)
                            : storage == F::kBFloat16 ? std::ldexp(1.0, -8)
                                                      : 0.0;
  // Split-K and beta leave elements of C that are no product: compare all.
  int failures = 0;
  size_t differ = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double bound = (c.g.K + 8) * std::ldexp(1.0, -22) * sums[i] +
                         c_rounding * (std::fabs(want[i]) + sums[i] * 1e-3) + 1e-30;
    if (std::fabs(double(got[i]) - want[i]) > bound && failures++ < 5)
      ADD_FAILURE() << "C[" << i << "] = " << got[i] << ", the rounded inputs' product is "
                    << want[i] << " (bound " << bound << ")";
    differ += std::memcmp(&got[i], &exact[i], 4) != 0;
  }
  // (Inputs the form's type already holds leave nothing to tell them apart.)
  const bool rounded = ra != a || rb != b;
  if (rounded) {
    EXPECT_GT(differ, 0u) << "every element equals float32 math's: the "
                          << MmaFormName(form) << " tensor-core kernel did not run";
  }
}

// A plain M x N x K product in each of the four layouts.
std::vector<Case> InEveryLayout(const Case& plain, const std::string& what) {
  std::vector<Case> cases;
  for (const auto& [op_a, op_b] :
       {std::pair{Transpose::kNo, Transpose::kNo}, std::pair{Transpose::kYes, Transpose::kNo},
        std::pair{Transpose::kNo, Transpose::kYes}, std::pair{Transpose::kYes, Transpose::kYes}}) {
    Case c = plain;
    c.g.trans_a = op_a;
    c.g.trans_b = op_b;
    c.a_size = size_t(c.g.M) * c.g.K;
    c.b_size = size_t(c.g.K) * c.g.N;
    c.c_size = size_t(c.g.M) * c.g.N;
    c.what = std::to_string(c.g.M) + "x" + std::to_string(c.g.N) + "x" + std::to_string(c.g.K) +
             (op_a == Transpose::kYes ? " A^T" : " A") + (op_b == Transpose::kYes ? " B^T" : " B") +
             ", " + what;
    cases.push_back(c);
  }
  return cases;
}

// `count` plain M x N x K products, each operand's back to back.
Case BatchOf(int count, int M, int N, int K, const std::string& what) {
  Case c;
  c.g.M = M;
  c.g.N = N;
  c.g.K = K;
  c.g.batch = count;
  c.g.a_batch_stride = size_t(M) * K;
  c.g.b_batch_stride = size_t(K) * N;
  c.g.c_batch_stride = size_t(M) * N;
  c.a_size = count * c.g.a_batch_stride;
  c.b_size = count * c.g.b_batch_stride;
  c.c_size = count * c.g.c_batch_stride;
  c.what = what;
  return c;
}

// C += A B over a convolution's NCHW blobs: B (K channels) and C (M
// channels) of `images` images of `positions` positions each, read and
// written image-grouped.
Case OverImages(int M, int K, int positions, int images, const std::string& what) {
  Case c;
  c.g.M = M;
  c.g.N = positions * images;
  c.g.K = K;
  c.g.ldb = positions;
  c.g.b_group = positions;
  c.g.b_image = K * positions;
  c.g.ldc = positions;
  c.g.c_group = positions;
  c.g.c_image = M * positions;
  c.g.beta = 1.f;
  c.a_size = size_t(M) * K;
  c.b_size = size_t(images) * K * positions;
  c.c_size = size_t(images) * M * positions;
  c.what = what;
  return c;
}

std::vector<Case> Cases() {
  Case plain;
  plain.g.M = 37;
  plain.g.N = 61;
  plain.g.K = 45;
  plain.g.alpha = 0.75f;
  plain.g.beta = 0.5f;
  plain.g.relu = true;
  plain.g.bias = reinterpret_cast<cl_mem>(1);  // Check binds the real ones
  std::vector<Case> cases = InEveryLayout(plain, "beta, bias, ReLU");
  Case tall;  // several tiles each way, a row scale, k past one tile's depth
  tall.g.M = 300;
  tall.g.N = 270;
  tall.g.K = 200;
  tall.g.row_scale = reinterpret_cast<cl_mem>(1);
  tall.a_size = 300 * 200;
  tall.b_size = 200 * 270;
  tall.c_size = 300 * 270;
  tall.what = "300x270x200, row scale";
  cases.push_back(tall);
  cases.push_back(BatchOf(3, 9, 17, 40, "batch of 3"));
  cases.push_back(OverImages(6, 10, 15, 2, "grouped B and C"));
  Case window;  // convolution windows: 3 x 3, pad 1, 2 images of 2 x 5 x 6
  window.g.b_window.height = 5;
  window.g.b_window.width = 6;
  window.g.b_window.kernel_h = window.g.b_window.kernel_w = 3;
  window.g.b_window.pad_h = window.g.b_window.pad_w = 1;
  window.g.b_window.out_h = 5;
  window.g.b_window.out_w = 6;
  window.g.b_window.image_floats = 2 * 5 * 6;
  window.g.M = 4;
  window.g.K = 2 * 9;
  window.g.N = 2 * 30;
  window.a_size = 4 * 18;
  window.b_size = 2 * 60;
  window.c_size = 4 * 60;
  window.what = "implicit windows";
  cases.push_back(window);
  Case column = tall;  // InnerProduct's forward: C = A B^T + a bias per column
  column.g.N = 150;
  column.g.trans_b = Transpose::kYes;
  column.g.row_scale = nullptr;
  column.g.bias = reinterpret_cast<cl_mem>(1);
  column.g.bias_per_column = true;
  column.g.relu = true;
  column.b_size = 150 * 200;
  column.c_size = 300 * 150;
  column.what = "300x150x200, A B^T, bias per column, ReLU";
  cases.push_back(column);
  return cases;
}

// Every GPU-shaped configuration (the dispatcher's and the tuner's) on the
// first case in each math; the other cases on the rule's shapes and split-K.
// (Whole in CI too: without the engine the three maths are one float
// program per configuration, and each configuration is needed anyway.)
TEST(GemmMma, EveryGpuConfigurationInEveryMath) {
  const std::vector<Case> cases = Cases();
  for (const GemmConfig& config : GemmConfigFamily()) {
    // (The wgmma form's configurations: test_gemm_wgmma.)
    if (!config.use_local || config.form != GemmForm::kOpenCL) continue;
    for (MatrixMath math : kMaths) Check(cases[0], math, config, F::kFloat32);
  }
}

// In CI each case runs under every other configuration: the 128 x 128 ones
// (plain and split-K) take the layouts NN and TT, the tall case and the
// grouped operands, the narrow tile the layouts TN and NT, the batch, the
// windows and the bias per column; so each configuration meets both values
// of each transpose.
TEST(GemmMma, LayoutsEpiloguesBatchesWindowsAndSplitK) {
  GemmConfig sliced = GpuShapedGemmConfig();
  sliced.k_slices = 3;
  const std::vector<Case> cases = Cases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    // (The four layouts come first, A's transpose the low bit of i: adding
    // B's makes the index even for NN and TT.)
    const int rotation = static_cast<int>(i) + (c.g.trans_b == Transpose::kYes ? 1 : 0);
    int k = 0;
    for (const GemmConfig& config : {GpuShapedGemmConfig(), GpuNarrowGemmConfig(), sliced}) {
      if (!InSample(rotation + k++, 2)) continue;
      for (MatrixMath math : kMaths) Check(c, math, config, F::kFloat32);
    }
  }
}

// 16-bit storage, as a FLOAT16 or BFLOAT16 net stores its blobs: in every
// case (guarded fetches), and in whole interior tiles of every layout
// (4-element vector fetches); where the math is the storage type, the
// stored bits go to the tensor cores as they are. In CI each case runs in
// one storage type, alternating, the vector-fetch cases one step out of
// phase, so that each type meets both values of each transpose in guarded
// and in vector fetches.
TEST(GemmMma, SixteenBitStorage) {
  std::vector<Case> cases = Cases();
  Case interior;
  interior.g.M = 136;
  interior.g.N = 260;
  interior.g.K = 80;
  interior.g.beta = 0.25f;
  for (const Case& c : InEveryLayout(interior, "vector fetches")) {
    GemmArgs typed = c.g;
    typed.a_type = typed.b_type = F::kBFloat16;
    const VectorLoads vectors = UsesVectorLoads(GpuShapedGemmConfig(), typed);
    ASSERT_TRUE(vectors.a && vectors.b) << c.what << " no longer reaches the vector fetches";
    cases.push_back(c);
  }
  const size_t base = Cases().size();
  for (size_t i = 0; i < cases.size(); ++i) {
    // Cases(), then the interior ones a step out of phase.
    const int rotation = static_cast<int>(i + (i >= base ? 1 : 0));
    int s = 0;
    for (StorageType storage : {F::kFloat16, F::kBFloat16}) {
      if (!InSample(rotation + s++, 2)) continue;
      for (MatrixMath math : {MatrixMath::kFloat16, MatrixMath::kBFloat16})
        Check(cases[i], math, GpuShapedGemmConfig(), storage);
    }
  }
}

// The cp.async pipeline (gemm.cl, MMA_STAGES): operands stored in the
// math's own type (float for TF32), rows and contiguous axes in whole
// 16-byte chunks, in every layout (both ldmatrix forms for each 16-bit
// operand; ldmatrix or word reads for tf32), with partial tiles each way,
// under the rule's tile shapes and 2 to 4 stages, as split K, a batch and
// image-grouped B and C. Where the engine runs, the case must reach the
// pipeline with as many stages as the device's __local memory holds (tf32
// tiles 32 deep hold too few: those run the register-staged kernel);
// elsewhere none does. In CI each run is checked in every other (storage,
// math) pair, the narrow tile's layouts one step out of phase with the full
// tiles', so that each pair meets both values of each transpose; the stage
// counts are asserted for every pair.
TEST(GemmMma, PipelineStreamsOperandsOfTheInstructionsType) {
  Context& ctx = TestContext();
  Case edges;  // 2 x 3 tiles of 128 x 128, the last ones partial; 6 k tiles of 32
  edges.g.M = 136;
  edges.g.N = 264;
  edges.g.K = 184;
  edges.g.alpha = 1.5f;
  edges.g.beta = 0.5f;
  edges.g.bias = reinterpret_cast<cl_mem>(1);
  GemmConfig sliced = GpuShapedGemmConfig();
  sliced.k_slices = 3;
  GemmConfig four_warps = GpuShapedGemmConfig();  // 128 x 128 in 4 warps of 64 x 64
  four_warps.wg_m = 8;
  four_warps.mr = 16;
  GemmConfig two_stages = GpuShapedGemmConfig(), four_stages = GpuShapedGemmConfig();
  two_stages.tk = 32;
  two_stages.stages = 2;
  four_stages.stages = 4;
  // Each layout under every tile shape and stage count; the narrow tile,
  // a batch and grouped operands under the shapes that meet them.
  std::vector<std::pair<Case, std::vector<GemmConfig>>> runs;
  for (const Case& c : InEveryLayout(edges, "pipelined"))
    runs.push_back({c,
                    {GpuShapedGemmConfig(), GpuHalfHeightGemmConfig(), GpuLongProductConfig(128),
                     sliced, four_warps, two_stages, four_stages}});
  Case thin = edges;  // M <= 32: the narrow tile (16 x 128)
  thin.g.M = 24;
  for (const Case& c : InEveryLayout(thin, "pipelined, narrow tile"))
    runs.push_back({c, {GpuNarrowGemmConfig()}});
  Case batch = BatchOf(3, 40, 48, 72, "pipelined, batch of 3");
  batch.g.relu = true;
  runs.push_back({batch, {GpuShapedGemmConfig(), sliced, four_stages}});
  // A 1x1 convolution's NCHW blobs: 3 images of 24 positions.
  runs.push_back({OverImages(16, 32, 24, 3, "pipelined, grouped B and C"),
                  {GpuNarrowGemmConfig(), GpuShapedGemmConfig(), four_stages}});

  for (size_t r = 0; r < runs.size(); ++r) {
    const auto& [c, configs] = runs[r];
    // (4 full-tile layouts, 4 narrow ones, the batch, the grouped operands.)
    const int rotation = static_cast<int>(r + r / 4);
    int pair = 0;
    for (const auto& [storage, math] : {std::pair{F::kFloat16, MatrixMath::kFloat16},
                                        std::pair{F::kBFloat16, MatrixMath::kBFloat16},
                                        std::pair{F::kFloat32, MatrixMath::kTF32}}) {
      const bool checked = InSample(rotation + pair++, 2);
      const bool engine = MmaFormFor(ctx, ctx.default_choices(), math) != MmaForm::kNone;
      for (const GemmConfig& config : configs) {
        GemmArgs typed = c.g;
        typed.a_type = typed.b_type = typed.c_type = storage;
        typed.math = math;
        const int stages = MmaPipelineStages(ctx, config, typed);
        if (engine) {
          const size_t stage_bytes = StorageBytes(storage) *
                                     size_t(config.wg_m * config.mr + config.wg_n * config.nr) *
                                     config.tk;
          const int fit =
              static_cast<int>(std::min<uint64_t>(4, ctx.info().local_mem_bytes / stage_bytes));
          const int want = config.stages > 1 ? std::min(config.stages, fit) : fit;
          ASSERT_EQ(stages, want >= 2 ? want : 0)
              << c.what << " [" << config.Name() << "], " << MathName(math);
          if (storage != F::kFloat32) {
            ASSERT_GE(stages, 2) << c.what << " [" << config.Name() << "] misses the pipeline";
          }
        } else {
          ASSERT_EQ(stages, 0) << "no engine, yet a pipeline";
        }
        // Without the engine every configuration runs the float kernel,
        // which the tests above cover: one is enough there.
        if (checked && (engine || &config == &configs.front())) Check(c, math, config, storage);
      }
    }
  }
}

// What keeps a product off the pipeline: float or mismatched operands, a
// row, offset or axis that is no whole chunk, implicit windows, and the
// config's stages = 1. (Only a device with the engine pipelines at all.)
TEST(GemmMma, PipelineTakesOnlyWholeChunksOfTheInstructionsType) {
  Context& ctx = TestContext();
  if (MmaFormFor(ctx, ctx.default_choices(), MatrixMath::kFloat16) == MmaForm::kNone)
    GTEST_SKIP() << "no tensor cores on " << ctx.info().Describe();
  GemmArgs g;
  g.M = 128;
  g.N = 256;
  g.K = 64;
  g.math = MatrixMath::kFloat16;
  g.a_type = g.b_type = g.c_type = F::kFloat16;
  const GemmConfig rule = GpuShapedGemmConfig();
  ASSERT_GE(MmaPipelineStages(ctx, rule, g), 2);
  const auto stages_if = [&](auto change) {
    GemmArgs h = g;
    GemmConfig c = rule;
    change(h, c);
    return MmaPipelineStages(ctx, c, h);
  };
  EXPECT_EQ(stages_if([](GemmArgs& h, GemmConfig&) { h.a_type = F::kFloat32; }), 0);
  EXPECT_EQ(stages_if([](GemmArgs& h, GemmConfig&) { h.b_type = F::kBFloat16; }), 0);
  EXPECT_EQ(stages_if([](GemmArgs& h, GemmConfig&) { h.math = MatrixMath::kTF32; }), 0);
  EXPECT_EQ(stages_if([](GemmArgs& h, GemmConfig&) { h.K = 60; }), 0);
  EXPECT_EQ(stages_if([](GemmArgs& h, GemmConfig&) { h.lda = 68; }), 0);
  EXPECT_EQ(stages_if([](GemmArgs& h, GemmConfig&) { h.b_offset = 4; }), 0);
  EXPECT_EQ(stages_if([](GemmArgs& h, GemmConfig&) {
              h.trans_b = Transpose::kYes;
              h.N = 250;  // B^T's contiguous axis is k: N may be anything
            }),
            MmaPipelineStages(ctx, rule, g));
  EXPECT_EQ(stages_if([](GemmArgs& h, GemmConfig&) { h.N = 250; }), 0);
  EXPECT_EQ(stages_if([](GemmArgs& h, GemmConfig&) {
              h.b_group = 12;
              h.b_image = 64 * 12;
            }),
            0);
  EXPECT_EQ(stages_if([](GemmArgs& h, GemmConfig&) {
              h.b_window.height = h.b_window.width = 16;
              h.b_window.kernel_h = h.b_window.kernel_w = 1;
              h.b_window.out_h = h.b_window.out_w = 16;
              h.b_window.image_floats = 64 * 256;
            }),
            0);
  EXPECT_EQ(stages_if([](GemmArgs&, GemmConfig& c) { c.stages = 1; }), 0);
}

// The rule deepens 16-bit tensor-core tiles to 32 where that keeps the
// product's split-K (gemm.cpp, WithTensorCoreDepth); float math and devices
// without the engine keep 16.
TEST(GemmMma, RuleDeepensSixteenBitTilesWhereTheSplitHolds) {
  Context& ctx = TestContext();
  const auto depth = [&](int M, int N, int K, MatrixMath math) {
    GemmArgs g;
    g.M = M;
    g.N = N;
    g.K = K;
    g.math = math;
    return RuleGemmConfig(ctx, g).tk;
  };
  if (ctx.cpu_shaped_kernels()) GTEST_SKIP() << "the CPU shape has no __local tiles";
  const bool engine = MmaFormFor(ctx, ctx.default_choices(), MatrixMath::kFloat16) != MmaForm::kNone;
  for (MatrixMath math : {MatrixMath::kFloat16, MatrixMath::kBFloat16}) {
    // 256 tiles of 128 x 128: no split either way.
    EXPECT_EQ(depth(2048, 2048, 2048, math), engine ? 32 : 16);
    // 50 tiles, k = 576: 16-deep tiles split in 2, 32-deep ones could not.
    EXPECT_EQ(depth(256, 3136, 576, math), 16);
  }
  EXPECT_EQ(depth(2048, 2048, 2048, MatrixMath::kFloat32), 16);
  EXPECT_EQ(depth(2048, 2048, 2048, MatrixMath::kTF32), 16);
}

// The choice follows what the device reports: a device reporting compute
// capability 8.0 or more has every form; one reporting none (PoCL) has none.
TEST(GemmMma, FormsFollowTheDevice) {
  Context& ctx = TestContext();
  const int capability = NvidiaComputeCapability(ctx.info());
  const bool engine = capability >= 80 && !ctx.cpu_shaped_kernels() &&
                      ctx.options().matrix_engine;
  std::cout << ctx.info().Describe() << ": compute capability " << capability / 10 << "."
            << capability % 10 << "; tensor-core GEMM " << (engine ? "on" : "off") << std::endl;
  EXPECT_EQ(MmaFormFor(ctx, ctx.default_choices(), MatrixMath::kFloat32), MmaForm::kNone);
  EXPECT_EQ(MmaFormFor(ctx, ctx.default_choices(), MatrixMath::kFloat16), engine ? MmaForm::kF16 : MmaForm::kNone);
  EXPECT_EQ(MmaFormFor(ctx, ctx.default_choices(), MatrixMath::kBFloat16), engine ? MmaForm::kBF16 : MmaForm::kNone);
  EXPECT_EQ(MmaFormFor(ctx, ctx.default_choices(), MatrixMath::kTF32), engine ? MmaForm::kTF32 : MmaForm::kNone);
  // The warps' cut of the rule's tiles (gemm.cl, MMA): 64 x 32 per warp in
  // the 128 x 128 tile, 16 x 16 in the 16 x 128 one; 8-deep tiles hold no
  // 16-deep step.
  EXPECT_EQ(MmaWarpsM(GpuShapedGemmConfig(), MmaForm::kF16), 2);
  EXPECT_EQ(MmaWarpsM(GpuNarrowGemmConfig(), MmaForm::kF16), 1);
  GemmConfig shallow = GpuShapedGemmConfig();
  shallow.tk = 8;
  EXPECT_EQ(MmaWarpsM(shallow, MmaForm::kF16), 0);
  EXPECT_EQ(MmaWarpsM(shallow, MmaForm::kTF32), 2);
  EXPECT_EQ(MmaWarpsM(CpuShapedGemmConfig(), MmaForm::kF16), 0);
}

// The tensor-core kernels are built only by NVIDIA's driver, which no CI
// machine has: here clang compiles them to PTX for NVIDIA's OpenCL target
// (-target nvptx64-nvidia-nvcl; clang spells inline assembly as a GNU
// keyword), for each form, in the tile shapes and operand variants the rule
// picks, so that an error in the OpenCL C (a variable named `half` once got
// through to the GPU host) fails here. The PTX must hold the form's
// instruction as many times as a tile's k step needs. (Float and bfloat16
// operands only: clang's header declares vload_half for this target only
// with address-space features it does not enable; the half loads are the
// float kernel's, which PoCL builds.) In CI each shape compiles in every
// other form, rotating, so that each form meets several shapes.
TEST(GemmMma, TheTensorCoreKernelsCompileToPtx) {
  const std::string clang = FindClang();
  ASSERT_NE(clang, "") << "clang is not on the PATH: scripts/install_deps.sh installs it";
  const std::string dir = TempDir();
  const std::string source = dir + "/gemm_full.cl";
  {
    std::ofstream out(source);
    out << ProgramCache::SourceText("gemm_tiled.cl", SourceDir() + "/src/cl");
  }
  struct Shape {
    const char* defines;
    int mma_per_k_step;  // MT * NT of a warp
  };
  const Shape shapes[] = {
      // 128 x 128, 8 warps of 64 x 32; float4 fetches
      {"-DMR=8 -DNR=8 -DVW=4 -DWG_M=16 -DWG_N=16 -DTK=16 -DWARPS_M=2 -DTRANS_A=0 -DTRANS_B=0 "
       "-DVEC_LOAD_A=1 -DVEC_LOAD_B=1", 16},
      // transposed, image-grouped operands, as a weight gradient
      {"-DMR=8 -DNR=8 -DVW=4 -DWG_M=16 -DWG_N=16 -DTK=16 -DWARPS_M=2 -DTRANS_A=0 -DTRANS_B=1 "
       "-DGROUP_A=1 -DGROUP_B=1", 16},
      // 16 x 128 (narrow), 8 warps of 16 x 16, grouped C
      {"-DMR=2 -DNR=4 -DVW=4 -DWG_M=8 -DWG_N=32 -DTK=16 -DWARPS_M=1 -DTRANS_A=1 -DTRANS_B=1 "
       "-DGROUP_C=1", 2},
      // bfloat16 operands fetched as 4-vectors (raw bits in the bf16 form)
      {"-DMR=8 -DNR=8 -DVW=4 -DWG_M=16 -DWG_N=16 -DTK=16 -DWARPS_M=2 -DTRANS_A=1 -DTRANS_B=1 "
       "-DA_TYPE=2 -DB_TYPE=2 -DC_TYPE=2 -DVEC_LOAD_A=1 -DVEC_LOAD_B=1", 16},
      // 128 x 64 (long products), 4 warps; implicit convolution windows
      {"-DMR=8 -DNR=8 -DVW=4 -DWG_M=16 -DWG_N=8 -DTK=16 -DWARPS_M=2 -DTRANS_A=0 -DTRANS_B=0 "
       "-DWIN_H=14 -DWIN_W=14 -DWIN_KH=3 -DWIN_KW=3 -DWIN_PH=1 -DWIN_PW=1 -DWIN_SH=1 -DWIN_SW=1 "
       "-DWIN_DH=1 -DWIN_DW=1 -DWIN_OH=14 -DWIN_OW=14 -DB_TYPE=2", 16},
  };
  const struct {
    int define;
    const char* instruction;
    int k_steps;  // per 16-deep tile
  } forms[] = {{1, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 1},
               {2, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 1},
               {3, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 2}};
  // The cp.async pipeline: the bf16 form on bfloat16 operands (the f16 form
  // differs in its instruction's name only, and its half operands are what
  // clang's header lacks here), and the tf32 form on float ones.
  const Shape pipelined[] = {
      // 128 x 128, 32 deep in 2 stages: two 16-deep steps per tile
      {"-DMR=8 -DNR=8 -DVW=4 -DWG_M=16 -DWG_N=16 -DTK=32 -DWARPS_M=2 -DTRANS_A=0 -DTRANS_B=0 "
       "-DMMA_STAGES=2", 32},
      // both operands the other way round (ldmatrix.trans for A, plain for B), 4 stages
      {"-DMR=8 -DNR=8 -DVW=4 -DWG_M=16 -DWG_N=16 -DTK=16 -DWARPS_M=2 -DTRANS_A=1 -DTRANS_B=1 "
       "-DMMA_STAGES=4 -DGROUP_C=1", 16},
      // the narrow tile, grouped B (a 1x1 convolution), 3 stages
      {"-DMR=2 -DNR=4 -DVW=4 -DWG_M=8 -DWG_N=32 -DTK=16 -DWARPS_M=1 -DTRANS_A=0 -DTRANS_B=0 "
       "-DMMA_STAGES=3 -DGROUP_B=1 -DGROUP_C=1", 2},
      // channels-last convolution windows: a forward product (B's lines
      // along k) into a grouped C, and a weight gradient (windows^T, lines
      // along n; the top diff's copy transposed)
      {"-DMR=8 -DNR=8 -DVW=4 -DWG_M=16 -DWG_N=16 -DTK=32 -DWARPS_M=2 -DTRANS_A=0 -DTRANS_B=0 "
       "-DMMA_STAGES=3 -DGROUP_C=1 -DWIN_H=14 -DWIN_W=14 -DWIN_KH=3 -DWIN_KW=3 -DWIN_PH=1 "
       "-DWIN_PW=1 -DWIN_SH=1 -DWIN_SW=1 -DWIN_DH=1 -DWIN_DW=1 -DWIN_OH=14 -DWIN_OW=14 "
       "-DWIN_C=64", 32},
      {"-DMR=8 -DNR=8 -DVW=4 -DWG_M=16 -DWG_N=16 -DTK=32 -DWARPS_M=2 -DTRANS_A=1 -DTRANS_B=1 "
       "-DMMA_STAGES=3 -DWIN_H=13 -DWIN_W=13 -DWIN_KH=3 -DWIN_KW=3 -DWIN_PH=1 -DWIN_PW=1 "
       "-DWIN_SH=2 -DWIN_SW=2 -DWIN_DH=1 -DWIN_DW=1 -DWIN_OH=7 -DWIN_OW=7 -DWIN_C=32", 32},
  };
  for (size_t s = 0; s < std::size(pipelined); ++s) {
    const Shape& shape = pipelined[s];
    int f = 0;
    for (const auto& [form, type] : {std::pair{2, std::string("2")},
                                     std::pair{3, std::string("0")}}) {
      if (!InSample(static_cast<int>(s) + f++, 2)) continue;
      SCOPED_TRACE(std::string(shape.defines) + " -DMMA=" + std::to_string(form));
      const std::string ptx = dir + "/pipelined.ptx", log = dir + "/clang_pipelined.log";
      const std::string command =
          clang +
          " -x cl -cl-std=CL1.2 -fgnu-keywords -target nvptx64-nvidia-nvcl -Xclang "
          "-finclude-default-header -O2 -S -DUSE_LOCAL=1 -DMMA=" +
          std::to_string(form) + " -DA_TYPE=" + type + " -DB_TYPE=" + type + " -DC_TYPE=" + type + " " +
          shape.defines + " -o " + ptx + " " + source + " > " + log + " 2>&1";
      ASSERT_EQ(std::system(command.c_str()), 0) << command;
      std::ifstream ptx_in(ptx);
      std::stringstream text;
      text << ptx_in.rdbuf();
      const std::string code = text.str();
      const auto count = [&](const std::string& what) {
        size_t n = 0;
        for (size_t at = code.find(what); at != std::string::npos; at = code.find(what, at + 1))
          ++n;
        return n;
      };
      EXPECT_EQ(count(forms[form - 1].instruction),
                size_t(shape.mma_per_k_step * forms[form - 1].k_steps));
      EXPECT_GT(count("cp.async.cg.shared.global"), 0u);
      EXPECT_GT(count("cp.async.wait_group"), 0u);
      // tf32 tiles across k are read word by word: A transposed, and B
      // along n (untransposed, or channels-last windows^T).
      const std::string d = shape.defines;
      const bool b_along_k = (d.find("-DTRANS_B=1") != std::string::npos) !=
                             (d.find("-DWIN_C=") != std::string::npos);
      if (form != 3 || d.find("-DTRANS_A=0") != std::string::npos || b_along_k)
        EXPECT_GT(count("ldmatrix.sync.aligned.m8n8.x4"), 0u);
    }
  }
  for (size_t s = 0; s < std::size(shapes); ++s) {
    const Shape& shape = shapes[s];
    for (size_t f = 0; f < std::size(forms); ++f) {
      if (!InSample(static_cast<int>(s + f), 2)) continue;
      const auto& form = forms[f];
      SCOPED_TRACE(std::string(shape.defines) + " -DMMA=" + std::to_string(form.define));
      const std::string ptx = dir + "/gemm.ptx", log = dir + "/clang.log";
      const std::string command = clang +
                                  " -x cl -cl-std=CL1.2 -fgnu-keywords -target "
                                  "nvptx64-nvidia-nvcl -Xclang -finclude-default-header -O2 -S "
                                  "-DUSE_LOCAL=1 -DMMA=" +
                                  std::to_string(form.define) + " " + shape.defines + " -o " +
                                  ptx + " " + source + " > " + log + " 2>&1";
      const int status = std::system(command.c_str());
      std::ifstream log_in(log);
      std::stringstream log_text;
      log_text << log_in.rdbuf();
      ASSERT_EQ(status, 0) << command << "\n" << log_text.str();
      std::ifstream ptx_in(ptx);
      std::stringstream text;
      text << ptx_in.rdbuf();
      const std::string code = text.str();
      size_t count = 0;
      for (size_t at = code.find(form.instruction); at != std::string::npos;
           at = code.find(form.instruction, at + 1))
        ++count;
      EXPECT_EQ(count, size_t(shape.mma_per_k_step * form.k_steps));
    }
  }
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
