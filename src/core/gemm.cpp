// GEMM dispatch: the configurations of every form and the one rule that picks
// among them for the device and shape (core/gemm_config.hpp), then the checks
// every product passes before its form's host file launches it
// (core/gemm_launch.hpp: gemm_register.cpp, gemm_tiled.cpp, gemm_wgmma.cpp).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "core/gemm_config.hpp"
#include "core/gemm_launch.hpp"
#include "core/gemm_tuning.hpp"
#include "core/gemm_wgmma.hpp"
#include "core/matrix_engine.hpp"
#include "core/storage_option.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/program_cache.hpp"
#include "dlcaffe/storage_type.hpp"
#include "dlcaffe/error.hpp"
#include "dlcaffe/math.hpp"

namespace dlcaffe {

std::string GemmConfig::Name() const {
  std::ostringstream s;
  if (form == GemmForm::kWgmma)
    s << "wgmma " << mr << "x" << nr << "x" << tk << " stages" << stages << " in-flight"
      << in_flight << (k_slices ? " slices" + std::to_string(k_slices) : "")
      << (!k_slices && groups_per_unit ? " split" + std::to_string(groups_per_unit) : "");
  else if (use_local)
    s << "local wg" << wg_m << "x" << wg_n << " mr" << mr << " nr" << nr << " vw" << vw
      << " tk" << tk << (k_slices ? " slices" + std::to_string(k_slices) : "")
      << (!k_slices && groups_per_unit ? " split" + std::to_string(groups_per_unit) : "")
      << (vector_loads ? "" : " scalar-loads")
      << (stages == 1 ? " no-pipeline" : stages > 1 ? " stages" + std::to_string(stages) : "");
  else if (dot_form)
    s << "register-dot mr" << mr << " nr" << nr << " vw" << vw;
  else
    s << "register mr" << mr << " nr" << nr << " vw" << vw << (pack_a ? " packA" : "")
      << (pack_b ? " packB" : "");
  return s.str();
}

bool GemmConfig::Supports(Transpose trans_a, Transpose trans_b) const {
  return !dot_form || (trans_a == Transpose::kNo && trans_b == Transpose::kYes);
}

GemmConfig CpuShapedGemmConfig() {
  // 10 x 32 floats = 20 float16 accumulators of 32 vector registers.
  GemmConfig c;
  c.use_local = false;
  c.mr = 10;
  c.nr = 32;
  c.vw = 16;
  c.pack_a = false;
  return c;
}

GemmConfig DotFormGemmConfig() {
  // 5 x 5 float16 partial sums = 25 accumulators, 10 loads per 25 fma
  // (measured best of 4x4, 4x6, 6x4, 3x8, 8x2 and 5x5).
  GemmConfig c;
  c.dot_form = true;
  c.mr = 5;
  c.nr = 5;
  c.vw = 16;
  return c;
}

GemmConfig GpuShapedGemmConfig() {
  // 16 x 16 work-items of 8 x 8 outputs: 128 x 128 tiles, 16 deep (16 KiB of
  // __local memory); faster than 4 x 4 per item (docs/benchmarks.md, M1).
  GemmConfig c;
  c.use_local = true;
  c.wg_m = 16;
  c.wg_n = 16;
  c.mr = 8;
  c.nr = 8;
  c.vw = 4;
  c.tk = 16;
  return c;
}

GemmConfig GpuNarrowGemmConfig() {
  // 32 x 8 work-items of 2 x 4 outputs: 16 x 128 tiles. A 128-row tile would
  // compute 8 rows of zeros per real one at M = 16.
  GemmConfig c = GpuShapedGemmConfig();
  c.wg_m = 8;
  c.wg_n = 32;
  c.mr = 2;
  c.nr = 4;
  return c;
}

GemmConfig GpuHalfHeightGemmConfig() {
  // 16 x 16 work-items of 4 x 8 outputs: 64 x 128 tiles, for M = 64
  // (convolutions with 64 output channels), which a 128-row tile half wastes.
  GemmConfig c = GpuShapedGemmConfig();
  c.mr = 4;
  return c;
}

std::vector<GemmConfig> GpuTuningVariants() {
  // 128 x 128 tiles 8 deep, and 128 x 128 tiles of 16 x 8 per work-item;
  // each wins on some shapes and loses on others, so only measurement picks
  // them (docs/benchmarks.md, M2, for these and the ones below).
  GemmConfig shallow = GpuShapedGemmConfig();
  shallow.tk = 8;
  GemmConfig tall = GpuShapedGemmConfig();
  tall.wg_m = 8;
  tall.mr = 16;
  // The default tiles split deeper, for the tuner to weigh on every long
  // product; 64 x 256 tiles (faster on long thin products, slower on most
  // others).
  GemmConfig wide = GpuHalfHeightGemmConfig();
  wide.nr = 16;
  // 32 deep: fewer barriers per k.
  GemmConfig deep_tiles = GpuShapedGemmConfig();
  deep_tiles.tk = 32;
  return {shallow, tall, deep_tiles, DeepSplit(GpuShapedGemmConfig()),
          DeepSplit(GpuHalfHeightGemmConfig()), wide, DeepSplit(wide)};
}

GemmConfig DeepSplit(GemmConfig config) {
  config.groups_per_unit = 8;
  return config;
}

GemmConfig GpuLongProductConfig(int M) {
  // Half as wide tiles (128 work-items), so that the split's work-groups
  // are twice as many and each finishes its slice sooner: faster on
  // ResNet's first-stage weight gradients (K = 50176); at K <= 12544 the
  // wide tiles stay ahead (docs/benchmarks.md, M3).
  GemmConfig c = M <= 64 ? GpuHalfHeightGemmConfig() : GpuShapedGemmConfig();
  c.wg_n = 8;
  return DeepSplit(c);
}

namespace {

// Register-tile heights the CPU shape picks from (each is one program build).
const int kRegisterRows[] = {8, 10};

}  // namespace

namespace {

// 16-bit tensor-core tiles (two k per word) 32 deep halve the barriers and
// the exposed fetch latency per k of the 16-deep ones, in the same __local
// memory as 16-deep float tiles: 2048^2 and 4096^2 products ran 23 % and
// 30 % faster on an H100. A 32-deep tile also halves how many slices a
// split-K may cut, which lost more (256 x 3136 x 576: 27 -> 18 TFLOP/s), so
// the rule deepens only products whose split stays the same.
GemmConfig WithTensorCoreDepth(const Context& ctx, const GemmArgs& args, GemmConfig c) {
  const MmaForm form = MmaFormFor(ctx, ProductChoices(ctx, args), args.math);
  if ((form != MmaForm::kF16 && form != MmaForm::kBF16) || c.tk != 16) return c;
  GemmConfig deep = c;
  deep.tk = 32;
  if (!MmaWarpsM(deep, form)) return c;
  const int units = ctx.info().compute_units;
  const int batch = std::max(1, args.batch);
  return SplitKSlices(units, deep, args.M, args.N, args.K, batch,
                     StreamsTiles(ctx, deep, args)) ==
                 SplitKSlices(units, c, args.M, args.N, args.K, batch, StreamsTiles(ctx, c, args))
             ? deep
             : c;
}

}  // namespace

GemmConfig ChooseGemmConfig(const Context& ctx, const GemmArgs& args) {
  GemmConfig tuned;
  if (LookupTunedGemmConfig(ctx, ShapeKeyOf(args), &tuned)) return tuned;
  return RuleGemmConfig(ctx, args);
}

namespace {

// The rule's choice among the OpenCL C kernels (gemm_register.cl,
// gemm_tiled.cl).
GemmConfig OpenClRuleConfig(const Context& ctx, const GemmArgs& args);

}  // namespace

GemmConfig RuleGemmConfig(const Context& ctx, const GemmArgs& args) {
  // Hopper's wgmma form, where the choices ask for it (it is slower than
  // mma.sync so far: core/gemm_wgmma.hpp), it takes the product and the
  // tile is not mostly padding: 128 x 256 tiles for large products, else
  // 128 x 128.
  const LayerChoices choices = ProductChoices(ctx, args);
  if (choices.matrix_wgmma && args.M > 64 && WgmmaAvailable(ctx, choices, args.math)) {
    GemmConfig c = args.M >= 1024 && args.N >= 2048 ? WgmmaConfig(128, 256, 16, 4, 1)
                                                    : WgmmaConfig(128, 128, 16, 6, 0);
    if (args.K >= 32768) c = DeepSplit(c);
    if (WgmmaRuns(ctx, c, args)) return c;
  }
  return OpenClRuleConfig(ctx, args);
}

namespace {

GemmConfig OpenClRuleConfig(const Context& ctx, const GemmArgs& args) {
  if (!ProductChoices(ctx, args).cpu_shaped_kernels) {
    GemmConfig c;
    if (args.M <= 32)
      c = GpuNarrowGemmConfig();
    else if (args.K >= 32768)
      // Weight-gradient shapes of K 50176 and more gained from the deeper
      // split, K 12544 lost (docs/benchmarks.md, M3).
      c = GpuLongProductConfig(args.M);
    else
      c = args.M <= 64 ? GpuHalfHeightGemmConfig() : GpuShapedGemmConfig();
    return WithTensorCoreDepth(ctx, args, c);
  }
  const bool ta = args.trans_a == Transpose::kYes, tb = args.trans_b == Transpose::kYes;
  // C = A * B^T: the outer-product tiles need B^T copied into panels, a copy
  // as large as B that only a tall product amortises; below that, dot
  // products read both operands in place (LeNet's weight gradients and
  // inner-product forward: 1.3-3x faster).
  if (!ta && tb && args.M < 512) return DotFormGemmConfig();
  GemmConfig c = CpuShapedGemmConfig();
  // The tile height that pads M least (M = 50 or 500 -> 10, M = 64 -> 8);
  // on a tie the taller one.
  int best_padded = -1;
  for (int mr : kRegisterRows) {
    const int padded = (args.M + mr - 1) / mr * mr;
    if (best_padded < 0 || padded <= best_padded) {
      best_padded = padded;
      c.mr = mr;
    }
  }
  // Long rows of an untransposed A stream badly from MR places at once, and
  // a B panel read in place walks K rows of ldb floats each; packing pays
  // where the copy is small next to the product (measured: 2048^3 75 -> 93
  // GFLOP per CPU-second; at 50 x 4096 x 500 packing loses 15%).
  const int ldb = LeadingDims(args).b;
  c.pack_a = !ta && args.K >= 1024 && args.N >= 256;
  c.pack_b = !tb && args.M >= 1024 && args.K >= 1024 && ldb >= 2048;
  return c;
}

}  // namespace

std::vector<GemmConfig> GemmConfigFamily() {
  std::vector<GemmConfig> family;
  for (int packs = 0; packs < 3; ++packs)  // none, A, A and B
    for (int mr : kRegisterRows) {
      GemmConfig c = CpuShapedGemmConfig();
      c.mr = mr;
      c.pack_a = packs >= 1;
      c.pack_b = packs >= 2;
      family.push_back(c);
    }
  family.push_back(DotFormGemmConfig());
  family.push_back(GpuShapedGemmConfig());
  family.push_back(GpuNarrowGemmConfig());
  family.push_back(GpuHalfHeightGemmConfig());
  GemmConfig sliced = GpuShapedGemmConfig();
  sliced.k_slices = 3;
  family.push_back(sliced);
  family.push_back(GpuLongProductConfig(128));
  family.push_back(GpuLongProductConfig(64));
  for (const GemmConfig& c : GpuTuningVariants()) family.push_back(c);
  for (const GemmConfig& c : WgmmaConfigs()) family.push_back(c);
  family.push_back(DeepSplit(WgmmaConfig(128, 128, 16, 6, 0)));
  return family;
}

namespace {

// One past the highest offset a grouped (or plain, group == 0) axis of
// `count` indices reaches.
size_t AxisExtent(int count, int group, int image) {
  if (count == 0) return 0;
  if (group == 0) return size_t(count);
  return size_t((count - 1) / group) * image + (count - 1) % group + 1;
}

}  // namespace

bool StreamsTiles(const Context& ctx, const GemmConfig& c, const GemmArgs& args) {
  return c.form == GemmForm::kWgmma || MmaPipelineStages(ctx, c, args) > 0;
}

// Split-K: how many k slices a GPU-shaped product runs in (see
// GemmConfig::groups_per_unit). The scratch for the partial products is at
// most 2^25 floats, and each slice at least 8 k-tiles deep (16 under the
// wave rule, where the partial sums' traffic must stay small next to a
// product that already nearly fills the device).
int SplitKSlices(int compute_units, const GemmConfig& c, int M, int N, int K, int batch,
                 bool streamed_tiles) {
  if (c.k_slices > 0) return c.k_slices;
  const long long tiles =
      1LL * CeilDiv(M, c.wg_m * c.mr) * CeilDiv(N, c.wg_n * c.nr) * batch;
  const long long units = std::max(1, compute_units);
  long long most =
      std::min<long long>(CeilDiv(K, c.tk) / (c.groups_per_unit > 0 ? 8 : 16),
                          (1LL << 25) / std::max(1LL, 1LL * M * N * batch));
  most = std::max(1LL, most);
  if (c.groups_per_unit > 0) {
    const long long target = c.groups_per_unit * units;
    if (tiles >= target) return 1;
    return static_cast<int>(std::min((target + tiles - 1) / tiles, most));
  }
  // Streamed tensor-core tiles finish so soon that a slice's fixed costs
  // (its float partial sums written, then read back by a second pass)
  // outweigh the idle units of a last wave: on an H200, vit_b_16's 16-bit
  // products of 108 to 450 tiles ran 0.95 to 1.7 times as fast whole
  // (docs/benchmarks.md). They split only where over half the units idle.
  if (streamed_tiles && tiles * 2 >= units) return 1;
  // The share of the last wave's places that work-groups fill, over all
  // waves: groups / (waves * units).
  const auto fill = [&](long long slices) {
    const long long groups = tiles * slices;
    return double(groups) / double((groups + units - 1) / units * units);
  };
  long long best = 1;
  for (long long slices = 1; slices <= most; ++slices) {
    if (fill(slices) >= 0.9) return static_cast<int>(slices);
    if (fill(slices) > fill(best) + 0.01) best = slices;
  }
  return static_cast<int>(best);
}

GemmExtents OperandExtents(const GemmArgs& g) {
  const bool ta = g.trans_a == Transpose::kYes, tb = g.trans_b == Transpose::kYes;
  const int M = g.M, N = g.N, K = g.K;
  const LeadingDims ld(g);
  const int lda = ld.a, ldb = ld.b, ldc = ld.c;
  const auto end = [](size_t offset, int rows, size_t row_extent, int ld) {
    return rows == 0 || row_extent == 0 ? 0 : offset + size_t(rows - 1) * ld + row_extent;
  };
  // Offsets of the batch's last product.
  const size_t last = g.batch > 0 ? size_t(g.batch - 1) : 0;
  const size_t a_last = g.a_offset + last * g.a_batch_stride,
               b_last = g.b_offset + last * g.b_batch_stride,
               c_last = g.c_offset + last * g.c_batch_stride;
  GemmExtents e;
  e.a = ta ? end(a_last, K, size_t(M), lda)
           : end(a_last, M, AxisExtent(K, g.a_group, g.a_image), lda);
  if (g.b_window.active()) {
    // Whole images: as many as the positions reach, channels as the rows do.
    const ConvolutionWindow& w = g.b_window;
    const int rows = tb ? N : K, positions = tb ? K : N;
    const size_t images = CeilDiv(positions, w.out_h * w.out_w),
                 channels = w.nhwc_channels > 0 ? w.nhwc_channels
                                                : CeilDiv(rows, w.kernel_h * w.kernel_w);
    e.b = rows == 0 || positions == 0
              ? 0
              : b_last + (images - 1) * w.image_floats + channels * w.height * w.width;
  } else {
    e.b = tb ? end(b_last, N, AxisExtent(K, g.b_group, g.b_image), ldb)
             : end(b_last, K, AxisExtent(N, g.b_group, g.b_image), ldb);
  }
  e.c = end(c_last, M, AxisExtent(N, g.c_group, g.c_image), ldc);
  return e;
}

GemmConfig RunnableGemmConfig(const Context& ctx, const GemmArgs& g, const GemmConfig& chosen) {
  // A wgmma configuration runs only the products its form takes
  // (WgmmaRuns); the others run the rule's OpenCL C kernel.
  const GemmConfig runnable = chosen.form == GemmForm::kWgmma && !WgmmaRuns(ctx, chosen, g)
                                  ? OpenClRuleConfig(ctx, g)
                                  : chosen;
  // Only the GPU shape reads grouped or implicit operands; it is correct on
  // any device.
  const bool grouped = g.a_group || g.b_group || g.c_group || g.b_window.active();
  return grouped && !runnable.use_local ? GpuShapedGemmConfig() : runnable;
}

std::string DescribeGemm(const Context& ctx, const GemmArgs& g) {
  const GemmConfig c = RunnableGemmConfig(ctx, g, ChooseGemmConfig(ctx, g));
  const MmaForm form = MmaFormFor(ctx, ProductChoices(ctx, g), g.math);
  std::ostringstream s;
  s << g.M << "x" << g.N << "x" << g.K << (g.batch > 1 ? " x" + std::to_string(g.batch) : "");
  if (c.form == GemmForm::kWgmma) {
    s << " " << MmaFormName(form) << " wgmma";
  } else if (c.use_local && form != MmaForm::kNone && MmaWarpsM(c, form)) {
    s << " " << MmaFormName(form) << " mma";
    if (const int stages = MmaPipelineStages(ctx, c, g)) s << " " << stages << " stages";
  } else {
    s << " float";
  }
  if (c.use_local || c.form == GemmForm::kWgmma) {
    const int slices = SplitKSlices(ctx.info().compute_units, c, g.M, g.N, g.K,
                                    std::max(1, g.batch), StreamsTiles(ctx, c, g));
    if (slices > 1) s << " in " << slices << " k slices";
  }
  s << " (" << c.Name() << ")";
  return s.str();
}

void GemmWithConfig(Context& ctx, const GemmArgs& g, const GemmConfig& chosen) {
  const bool ta = g.trans_a == Transpose::kYes, tb = g.trans_b == Transpose::kYes;
  const int M = g.M, N = g.N, K = g.K;
  DLC_REQUIRE(M >= 0 && N >= 0 && K >= 0 && g.batch >= 0,
              "Gemm: negative size M=" << M << " N=" << N << " K=" << K
                                       << " batch=" << g.batch);
  const bool window = g.b_window.active();
  DLC_REQUIRE(g.a_group >= 0 && g.b_group >= 0 && g.c_group >= 0 && !(ta && g.a_group),
              "Gemm: image grouping needs positive groups and an untransposed A");
  DLC_REQUIRE(!window || (g.b_group == 0 && g.b_window.out_h > 0 && g.b_window.out_w > 0 &&
                          g.b_window.kernel_w > 0),
              "Gemm: an implicit B (convolution windows) is not grouped and has a shape");
  const GemmConfig c = RunnableGemmConfig(ctx, g, chosen);
  if (g.batch == 0) return;
  if (g.batch > 1 && !(c.use_local && K > 0 && g.alpha != 0.f)) {
    // Only the GPU shape runs a batch in one launch; the others (and C = beta
    // * C) run its products one by one.
    GemmArgs one = g;
    one.batch = 1;
    for (int i = 0; i < g.batch; ++i) {
      one.a_offset = g.a_offset + i * g.a_batch_stride;
      one.b_offset = g.b_offset + i * g.b_batch_stride;
      one.c_offset = g.c_offset + i * g.c_batch_stride;
      one.bias_offset = g.bias_offset + i * g.epilogue_batch_stride;
      one.row_scale_offset = g.row_scale_offset + i * g.epilogue_batch_stride;
      GemmWithConfig(ctx, one, c);
    }
    return;
  }
  const LeadingDims ld(g);
  const int lda = ld.a, ldb = ld.b, ldc = ld.c;
  DLC_REQUIRE(lda >= (ta ? M : (g.a_group ? std::min(K, g.a_group) : K)) &&
                  (window || ldb >= (tb ? (g.b_group ? std::min(K, g.b_group) : K)
                                        : (g.b_group ? std::min(N, g.b_group) : N))) &&
                  ldc >= (g.c_group ? std::min(N, g.c_group) : N),
              "Gemm: leading dimension too small (M=" << M << " N=" << N << " K=" << K
                                                        << " lda=" << lda << " ldb=" << ldb
                                                        << " ldc=" << ldc << ")");
  if (M == 0 || N == 0) return;
  // The kernels index with 32-bit ints.
  const size_t kIndexLimit = size_t(std::numeric_limits<int>::max());
  const GemmExtents extents = OperandExtents(g);
  DLC_REQUIRE(extents.a <= kIndexLimit && extents.b <= kIndexLimit && extents.c <= kIndexLimit,
              "Gemm: a matrix reaches past 2^31 floats (M=" << M << " N=" << N << " K=" << K
                                                             << ")");
  if (K == 0 || g.alpha == 0.f) {
    // C = beta * C (+ the epilogue): no product to run.
    cl_mem bias = g.bias ? g.bias : g.C;
    ctx.Launch(ctx.Kernel("gemm.cl", TypeDefine("C", g.c_type), "gemm_scale_c"),
               NDRange(RoundUp(N, 8), RoundUp(M, 8)), NDRange(8, 8), M, N, g.beta, g.C,
               static_cast<int>(g.c_offset), ldc, g.c_group, g.c_image, bias,
               static_cast<int>(g.bias_offset), EpilogueFlags(g));
    return;
  }
  // The form's own launch. A wgmma program that does not load turns the
  // form off for the device (core/gemm_wgmma.hpp): the OpenCL rule's
  // configuration runs instead.
  switch (c.form) {
    case GemmForm::kWgmma:
      if (!RunTiles(ctx, c, g, LaunchWgmma)) GemmWithConfig(ctx, g, OpenClRuleConfig(ctx, g));
      return;
    case GemmForm::kOpenCL:
      if (c.use_local)
        RunTiles(ctx, c, g, LaunchTiledTiles);
      else
        RunRegisterGemm(ctx, c, g);
      return;
  }
}

LayerChoices ProductChoices(const Context& ctx, const GemmArgs& args) {
  return args.choices ? *args.choices : ctx.default_choices();
}

void Gemm(Context& ctx, const GemmArgs& args) {
  if (GemmRecording* recording = ctx.gemm_recording()) recording->Record(args);
  GemmWithConfig(ctx, args, ChooseGemmConfig(ctx, args));
}

void Gemm(Context& ctx, Transpose trans_a, Transpose trans_b, int M, int N, int K,
          float alpha, cl_mem A, size_t a_offset, cl_mem B, size_t b_offset, float beta,
          cl_mem C, size_t c_offset, StorageType a_type, StorageType b_type,
          StorageType c_type) {
  GemmArgs g;
  g.trans_a = trans_a;
  g.trans_b = trans_b;
  g.M = M;
  g.N = N;
  g.K = K;
  g.alpha = alpha;
  g.beta = beta;
  g.A = A;
  g.a_offset = a_offset;
  g.B = B;
  g.b_offset = b_offset;
  g.C = C;
  g.c_offset = c_offset;
  g.a_type = a_type;
  g.b_type = b_type;
  g.c_type = c_type;
  Gemm(ctx, g);
}

}  // namespace dlcaffe
