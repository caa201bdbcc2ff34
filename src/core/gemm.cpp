// GEMM dispatch: picks a configuration of the kernel family in src/cl/gemm.cl
// for the device and shape, packs operands where the configuration wants it
// (into scratch from the buffer pool) and enqueues the kernels.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "core/gemm_config.hpp"
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

// The leading dimensions of a GemmArgs: as given, or those of packed
// (unpadded) operands where it leaves them at -1.
struct LeadingDims {
  int a, b, c;
  explicit LeadingDims(const GemmArgs& g)
      : a(g.lda >= 0 ? g.lda : (g.trans_a == Transpose::kYes ? g.M : g.K)),
        b(g.ldb >= 0 ? g.ldb : (g.trans_b == Transpose::kYes ? g.K : g.N)),
        c(g.ldc >= 0 ? g.ldc : g.N) {}
};

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
  const MmaForm form = MmaFormFor(ctx, args.math);
  if ((form != MmaForm::kF16 && form != MmaForm::kBF16) || c.tk != 16) return c;
  GemmConfig deep = c;
  deep.tk = 32;
  if (!MmaWarpsM(deep, form)) return c;
  const int units = ctx.info().compute_units;
  const int batch = std::max(1, args.batch);
  return SplitKSlices(units, deep, args.M, args.N, args.K, batch) ==
                 SplitKSlices(units, c, args.M, args.N, args.K, batch)
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

// The rule's choice among the OpenCL C kernels of gemm.cl.
GemmConfig OpenClRuleConfig(const Context& ctx, const GemmArgs& args);

}  // namespace

GemmConfig RuleGemmConfig(const Context& ctx, const GemmArgs& args) {
  // Hopper's wgmma form, where the run option asks for it (it is slower than
  // mma.sync so far: core/gemm_wgmma.hpp), it takes the product and the
  // tile is not mostly padding: 128 x 256 tiles for large products, else
  // 128 x 128.
  if (ctx.options().matrix_wgmma && args.M > 64 && WgmmaAvailable(ctx, args.math)) {
    GemmConfig c = args.M >= 1024 && args.N >= 2048 ? WgmmaConfig(128, 256, 16, 4, 1)
                                                    : WgmmaConfig(128, 128, 16, 6, 0);
    if (args.K >= 32768) c = DeepSplit(c);
    if (WgmmaRuns(ctx, c, args)) return c;
  }
  return OpenClRuleConfig(ctx, args);
}

namespace {

GemmConfig OpenClRuleConfig(const Context& ctx, const GemmArgs& args) {
  if (!ctx.cpu_shaped_kernels()) {
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

// The -D option giving operand X ("A", "B", "C") storage type `type` (none
// for float: the kernel's default).
std::string TypeDefine(const char* operand, StorageType type) {
  return StorageOption(std::string(operand) + "_TYPE", type);
}

// The kernel's -D options; `grouped` flags which of A, B, C (bits 1, 2, 4)
// the GPU shape reads or writes image-grouped; an active `window` makes B
// implicit.
std::string Defines(const Context& ctx, const GemmConfig& c, bool trans_a,
                    bool trans_b, const std::string& types, int grouped = 0,
                    const ConvolutionWindow& window = ConvolutionWindow(),
                    VectorLoads vector_loads = VectorLoads()) {
  std::ostringstream s;
  s << "-DMR=" << c.mr << " -DNR=" << c.nr << " -DVW=" << c.vw
    << " -DUSE_LOCAL=" << (c.use_local ? 1 : 0) << " -DTRANS_A=" << (trans_a ? 1 : 0)
    << " -DTRANS_B=" << (trans_b ? 1 : 0);
  if (c.use_local) s << " -DWG_M=" << c.wg_m << " -DWG_N=" << c.wg_n << " -DTK=" << c.tk;
  if (grouped & 1) s << " -DGROUP_A=1";
  if (grouped & 2) s << " -DGROUP_B=1";
  if (grouped & 4) s << " -DGROUP_C=1";
  if (window.active())
    s << " -DWIN_H=" << window.height << " -DWIN_W=" << window.width
      << " -DWIN_KH=" << window.kernel_h << " -DWIN_KW=" << window.kernel_w
      << " -DWIN_PH=" << window.pad_h << " -DWIN_PW=" << window.pad_w
      << " -DWIN_SH=" << window.stride_h << " -DWIN_SW=" << window.stride_w
      << " -DWIN_DH=" << window.dilation_h << " -DWIN_DW=" << window.dilation_w
      << " -DWIN_OH=" << window.out_h << " -DWIN_OW=" << window.out_w;
  // The GPU shape on a CPU (tests): unrolling cost 3 s per PoCL build.
  if (c.use_local && ctx.cpu_shaped_kernels()) s << " -DUNROLL_HINTS=0";
  if (c.dot_form) s << " -DDOT_FORM=1";
  if (vector_loads.a) s << " -DVEC_LOAD_A=1";
  if (vector_loads.b) s << " -DVEC_LOAD_B=1";
  s << types;
  return s.str();
}

int CeilDiv(int a, int b) { return (a + b - 1) / b; }

// WARPS_M of the tensor-core form of GPU-shaped `c` (gemm.cl, MMA): the
// cut of its tile into warps that reads the fewest values from __local
// memory per k step (8 per 16-row block, 4 per 8-column block: 64 x 32 per
// warp in the 128 x 128 tile); 0 where the tile does not cut into whole
// warps of 16 x 8 blocks or its depth is not a multiple of the
// instruction's k.
}  // namespace

int MmaWarpsM(const GemmConfig& c, MmaForm form) {
  if (form == MmaForm::kNone || !c.use_local) return 0;
  const int threads = c.wg_m * c.wg_n, tm = c.wg_m * c.mr, tn = c.wg_n * c.nr;
  if (threads % 32 || c.tk % (form == MmaForm::kTF32 ? 8 : 16)) return 0;
  const int warps = threads / 32;
  int best = 0, fewest = 0;
  for (int wm = 1; wm <= warps; ++wm) {
    const int wn = warps / wm;
    if (warps % wm || tm % (16 * wm) || tn % (8 * wn)) continue;
    const int reads = 8 * (tm / wm / 16) + 4 * (tn / wn / 8);
    if (!best || reads < fewest) {
      best = wm;
      fewest = reads;
    }
  }
  return best;
}

int MmaPipelineStages(const Context& ctx, const GemmConfig& c, const GemmArgs& g) {
  if (!c.use_local || c.stages == 1 || g.b_window.active() || !ctx.options().matrix_pipeline)
    return 0;
  const MmaForm form = MmaFormFor(ctx, g.math);
  if (form == MmaForm::kNone) return 0;
  // The operands stored in the instruction's own type (tf32: float).
  const StorageType own = MmaInputType(form);
  if (g.a_type != own || g.b_type != own) return 0;
  const int warps_m = MmaWarpsM(c, form);
  if (!warps_m || !MmaPipelineEnabled(ctx, form)) return 0;
  // The kernel's tiles: lines of a power of two 16-byte chunks (the
  // swizzle), warps of pairs of 8-column blocks (ldmatrix.x4).
  const int bytes = static_cast<int>(StorageBytes(own)), chunk = MmaPipelineChunk(own);
  const bool ta = g.trans_a == Transpose::kYes, tb = g.trans_b == Transpose::kYes;
  const int tm = c.wg_m * c.mr, tn = c.wg_n * c.nr, warps = c.wg_m * c.wg_n / 32;
  const auto power_of_two = [](int x) { return x > 0 && (x & (x - 1)) == 0; };
  if (tm % 16 || tn % 16 || (tn / (warps / warps_m) / 8) % 2 ||
      !power_of_two((ta ? tm : c.tk) / chunk) || !power_of_two((tb ? c.tk : tn) / chunk))
    return 0;
  // Whole 16-byte chunks on 16-byte boundaries, never across an image.
  const LeadingDims ld(g);
  const auto chunked = [&](size_t ld_values, size_t offset, size_t batch_stride, int group,
                           int image) {
    return ld_values % chunk == 0 && offset % chunk == 0 &&
           (g.batch <= 1 || batch_stride % chunk == 0) &&
           (group == 0 || (group % chunk == 0 && image % chunk == 0));
  };
  if (!chunked(ld.a, g.a_offset, g.a_batch_stride, g.a_group, g.a_image) ||
      !chunked(ld.b, g.b_offset, g.b_batch_stride, g.b_group, g.b_image) ||
      (ta ? g.M : g.K) % chunk || (tb ? g.K : g.N) % chunk)
    return 0;
  const size_t stage_bytes = size_t(bytes) * (tm + tn) * c.tk;
  const int fit = static_cast<int>(
      std::min<uint64_t>(4, ctx.info().local_mem_bytes / std::max<size_t>(1, stage_bytes)));
  const int stages = c.stages > 1 ? std::min(c.stages, fit) : fit;
  return stages >= 2 ? stages : 0;
}

namespace {

// The GPU-shaped kernel, on the tensor cores in the form `math` allows
// where the device and the tile permit, through `stages` cp.async stages
// where that is not 0 (MmaPipelineStages), built from `pipelined_defines`;
// else from `staged_defines` (which keep the vector fetches the register-
// staged kernels use and the pipeline does not). A form that does not build
// is turned off for the device, and the float kernel built instead; a
// pipeline that does not build, likewise, for the form's register-staged
// kernel.
cl_kernel TiledKernel(Context& ctx, const GemmConfig& c, MatrixMath math,
                      const std::string& staged_defines, const std::string& pipelined_defines,
                      int stages) {
  const MmaForm form = MmaFormFor(ctx, math);
  const int warps_m = form == MmaForm::kNone ? 0 : MmaWarpsM(c, form);
  if (warps_m) {
    const std::string mma = " -DMMA=" + std::to_string(static_cast<int>(form)) +
                            " -DWARPS_M=" + std::to_string(warps_m);
    if (stages) {
      try {
        return ctx.Kernel("gemm.cl",
                          pipelined_defines + mma + " -DMMA_STAGES=" + std::to_string(stages),
                          "gemm_tiled");
      } catch (const Error& e) {
        DisableMmaPipeline(ctx, form, FirstBuildLogLine(e.what()));
      }
    }
    try {
      return ctx.Kernel("gemm.cl", staged_defines + mma, "gemm_tiled");
    } catch (const Error& e) {
      DisableMmaForm(ctx, form, FirstBuildLogLine(e.what()));
    }
  }
  return ctx.Kernel("gemm.cl", staged_defines, "gemm_tiled");
}

const int kPackRun = 16;  // PACK_RUN in gemm.cl

// Copies the rows x K matrix X (element (r, k) at X[r*ld + k] if k_contiguous,
// else X[k*ld + r]) into zero-padded panels [ceil(rows/width)][K][width].
BufferPtr PackPanels(Context& ctx, int rows, int K, int width, cl_mem X, StorageType x_type,
                     int x_off, int ld, bool k_contiguous) {
  const int panels = CeilDiv(rows, width);
  BufferPtr packed = ctx.Allocate(sizeof(float) * size_t(panels) * width * K);
  const NDRange global = k_contiguous ? NDRange(CeilDiv(K, kPackRun), panels * width)
                                      : NDRange(RoundUp(K, kPackRun), panels);
  const NDRange local = k_contiguous ? NDRange(1, width) : NDRange(kPackRun, 1);
  // The panels are float whatever X holds (the kernel reads X as A_TYPE).
  ctx.Launch(ctx.Kernel("gemm.cl", TypeDefine("A", x_type), "gemm_pack_panels"), global, local,
             rows, K, width, X, x_off, ld, k_contiguous ? 1 : 0, packed->mem());
  return packed;
}

}  // namespace

namespace {

// One past the highest offset a grouped (or plain, group == 0) axis of
// `count` indices reaches.
size_t AxisExtent(int count, int group, int image) {
  if (count == 0) return 0;
  if (group == 0) return size_t(count);
  return size_t((count - 1) / group) * image + (count - 1) % group + 1;
}

}  // namespace

// Split-K: how many k slices a GPU-shaped product runs in (see
// GemmConfig::groups_per_unit). The scratch for the partial products is at
// most 2^25 floats, and each slice at least 8 k-tiles deep (16 under the
// wave rule, where the partial sums' traffic must stay small next to a
// product that already nearly fills the device).
int SplitKSlices(int compute_units, const GemmConfig& c, int M, int N, int K, int batch) {
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

VectorLoads UsesVectorLoads(const GemmConfig& c, const GemmArgs& g) {
  VectorLoads v;
  if (!c.use_local || !c.vector_loads) return v;
  // Vector fetches need every row of the operand, in every product of the
  // batch, to start on a 4-element boundary, image groups whose four
  // consecutive indices never straddle two images, and tiles that split into
  // whole 4-vectors per work-item (VEC_LOAD_A/B in gemm.cl). An implicit B
  // (convolution windows) has no rows to fetch.
  const LeadingDims ld(g);
  const auto aligned = [&](size_t ld_floats, size_t offset, size_t batch_stride, int group,
                           int image) {
    return ld_floats % 4 == 0 && offset % 4 == 0 && (g.batch <= 1 || batch_stride % 4 == 0) &&
           (group == 0 || (group % 4 == 0 && image % 4 == 0));
  };
  const int tile_m = c.wg_m * c.mr, tile_n = c.wg_n * c.nr, threads = c.wg_m * c.wg_n;
  const bool k_splits = c.tk % 4 == 0;
  // Any storage type: a 16-bit operand's 4-vectors are 8 bytes, on 8-byte
  // boundaries by the same rule in elements.
  v.a = k_splits && tile_m % 4 == 0 && (tile_m * c.tk) % (4 * threads) == 0 &&
        aligned(ld.a, g.a_offset, g.a_batch_stride, g.a_group, g.a_image);
  v.b = k_splits && tile_n % 4 == 0 && (tile_n * c.tk) % (4 * threads) == 0 &&
        !g.b_window.active() && aligned(ld.b, g.b_offset, g.b_batch_stride, g.b_group, g.b_image);
  return v;
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
                 channels = CeilDiv(rows, w.kernel_h * w.kernel_w);
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

void GemmWithConfig(Context& ctx, const GemmArgs& g, const GemmConfig& chosen) {
  const bool ta = g.trans_a == Transpose::kYes, tb = g.trans_b == Transpose::kYes;
  const int M = g.M, N = g.N, K = g.K;
  DLC_REQUIRE(M >= 0 && N >= 0 && K >= 0 && g.batch >= 0,
              "Gemm: negative size M=" << M << " N=" << N << " K=" << K
                                       << " batch=" << g.batch);
  const bool window = g.b_window.active();
  const bool grouped = g.a_group || g.b_group || g.c_group;
  DLC_REQUIRE(g.a_group >= 0 && g.b_group >= 0 && g.c_group >= 0 && !(ta && g.a_group),
              "Gemm: image grouping needs positive groups and an untransposed A");
  DLC_REQUIRE(!window || (g.b_group == 0 && g.b_window.out_h > 0 && g.b_window.out_w > 0 &&
                          g.b_window.kernel_w > 0),
              "Gemm: an implicit B (convolution windows) is not grouped and has a shape");
  // Only the GPU shape reads grouped or implicit operands; it is correct on
  // any device. A wgmma configuration runs only the products its form takes
  // (WgmmaRuns); the others run the rule's OpenCL C kernel.
  const GemmConfig runnable = chosen.form == GemmForm::kWgmma && !WgmmaRuns(ctx, chosen, g)
                                  ? OpenClRuleConfig(ctx, g)
                                  : chosen;
  const GemmConfig c = (grouped || window) && !runnable.use_local ? GpuShapedGemmConfig() : runnable;
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
  const int a_off = static_cast<int>(g.a_offset), b_off = static_cast<int>(g.b_offset),
            c_off = static_cast<int>(g.c_offset);
  // EPILOGUE_* in gemm.cl; unused buffer arguments get C.
  const int epilogue = (g.bias ? 1 : 0) | (g.relu ? 2 : 0) | (g.row_scale ? 4 : 0);
  cl_mem bias = g.bias ? g.bias : g.C, row_scale = g.row_scale ? g.row_scale : g.C;
  const int bias_off = static_cast<int>(g.bias_offset),
            row_scale_off = static_cast<int>(g.row_scale_offset);

  const std::string types =
      TypeDefine("A", g.a_type) + TypeDefine("B", g.b_type) + TypeDefine("C", g.c_type);
  if (K == 0 || g.alpha == 0.f) {
    ctx.Launch(ctx.Kernel("gemm.cl", TypeDefine("C", g.c_type), "gemm_scale_c"),
               NDRange(RoundUp(N, 8), RoundUp(M, 8)), NDRange(8, 8), M, N, g.beta, g.C,
               c_off, ldc, g.c_group, g.c_image, bias, bias_off, epilogue);
    return;
  }

  if (c.use_local) {
    const int tile_m = c.wg_m * c.mr, tile_n = c.wg_n * c.nr;
    const int slices = SplitKSlices(ctx.info().compute_units, c, M, N, K, g.batch);
    const int k_per_slice = RoundUp(CeilDiv(K, slices), c.tk);
    const int used_slices = CeilDiv(K, k_per_slice);
    const NDRange global(CeilDiv(N, tile_n) * c.wg_n, CeilDiv(M, tile_m) * c.wg_m,
                         size_t(used_slices) * g.batch);
    const NDRange local(c.wg_n, c.wg_m, 1);
    // Split-K writes its slices plainly; the reduction groups C.
    const int grouped_operands = (g.a_group ? 1 : 0) | (g.b_group ? 2 : 0) |
                                 (g.c_group && used_slices == 1 ? 4 : 0);
    // An implicit B's images are b_image floats apart.
    const int b_image = window ? g.b_window.image_floats : g.b_image;
    const int a_batch = static_cast<int>(g.a_batch_stride),
              b_batch = static_cast<int>(g.b_batch_stride),
              epilogue_batch = static_cast<int>(g.epilogue_batch_stride);
    const size_t slice_floats = size_t(M) * N;
    DLC_REQUIRE(used_slices == 1 || slice_floats * used_slices * g.batch <= kIndexLimit,
                "Gemm: split-K scratch past 2^31 floats");
    if (c.form == GemmForm::kWgmma) {
      GemmLaunch product;
      product.k_per_slice = K;
      product.C = g.C;
      product.c_off = c_off;
      product.ldc = ldc;
      product.c_group = g.c_group;
      product.c_image = g.c_image;
      product.c_batch = static_cast<int>(g.c_batch_stride);
      product.c_type = g.c_type;
      product.alpha = g.alpha;
      product.beta = g.beta;
      product.epilogue = epilogue;
      if (used_slices == 1) {
        if (LaunchWgmma(ctx, c, g, product)) return;
      } else {
        // The slices' plain products into float scratch, summed as below.
        BufferPtr partial = ctx.Allocate(sizeof(float) * slice_floats * used_slices * g.batch);
        GemmLaunch slices;
        slices.slices = used_slices;
        slices.k_per_slice = k_per_slice;
        slices.C = partial->mem();
        slices.ldc = N;
        slices.c_slice = M * N;
        slices.c_batch = used_slices * M * N;
        if (LaunchWgmma(ctx, c, g, slices)) {
          ctx.Launch(ctx.Kernel("gemm.cl", TypeDefine("C", g.c_type), "gemm_reduce_slices"),
                     NDRange(RoundUp(N, 32), RoundUp(M, 8), g.batch), NDRange(32, 8, 1), M, N,
                     used_slices, partial->mem(), g.alpha, g.beta, g.C, c_off, ldc,
                     g.c_group, g.c_image, static_cast<int>(g.c_batch_stride), bias, bias_off,
                     row_scale, row_scale_off, epilogue, epilogue_batch);
          return;
        }
      }
      // The form did not load (now off for the device): the OpenCL rule's.
      GemmWithConfig(ctx, g, OpenClRuleConfig(ctx, g));
      return;
    }
    // Split-K's slices are float partial sums; the reduction writes C.
    const std::string kernel_types =
        used_slices == 1 ? types : TypeDefine("A", g.a_type) + TypeDefine("B", g.b_type);
    const int stages = MmaPipelineStages(ctx, c, g);
    const auto defines = [&](VectorLoads vector_loads) {
      return Defines(ctx, c, ta, tb, kernel_types, grouped_operands, g.b_window, vector_loads);
    };
    cl_kernel kernel =
        TiledKernel(ctx, c, g.math, defines(UsesVectorLoads(c, g)),
                    stages ? defines(VectorLoads()) : std::string(), stages);
    if (used_slices == 1) {
      ctx.Launch(kernel, global, local, M, N, K, g.alpha, g.A, a_off, lda, g.B, b_off, ldb,
                 g.beta, g.C, c_off, ldc, g.a_group, g.a_image, g.b_group, b_image,
                 g.c_group, g.c_image, 1, K, 0, a_batch, b_batch,
                 static_cast<int>(g.c_batch_stride), bias, bias_off, row_scale, row_scale_off,
                 epilogue, epilogue_batch);
      return;
    }
    // Each slice's plain product into scratch (per product of the batch,
    // its slices consecutive), then one pass sums them into C.
    BufferPtr partial = ctx.Allocate(sizeof(float) * slice_floats * used_slices * g.batch);
    ctx.Launch(kernel, global, local, M, N, K, 1.f, g.A, a_off, lda, g.B, b_off, ldb, 0.f,
               partial->mem(), 0, N, g.a_group, g.a_image, g.b_group, b_image, 0, 0,
               used_slices, k_per_slice, M * N, a_batch, b_batch, used_slices * M * N, bias,
               bias_off, row_scale, row_scale_off, 0, 0);
    ctx.Launch(ctx.Kernel("gemm.cl", TypeDefine("C", g.c_type), "gemm_reduce_slices"),
               NDRange(RoundUp(N, 32), RoundUp(M, 8), g.batch), NDRange(32, 8, 1), M, N,
               used_slices, partial->mem(), g.alpha, g.beta, g.C, c_off, ldc, g.c_group,
               g.c_image, static_cast<int>(g.c_batch_stride), bias, bias_off, row_scale,
               row_scale_off, epilogue, epilogue_batch);
    return;
  }

  DLC_REQUIRE(c.Supports(g.trans_a, g.trans_b),
              "Gemm: configuration '" << c.Name() << "' cannot compute op(A) = "
                                      << (ta ? "A^T" : "A") << ", op(B) = "
                                      << (tb ? "B^T" : "B"));
  if (c.dot_form) {
    ctx.Launch(ctx.Kernel("gemm.cl", Defines(ctx, c, ta, tb, types), "gemm_tiled"),
               NDRange(CeilDiv(M, c.mr), CeilDiv(N, c.nr)), NDRange(1, 1), M, N, K, g.alpha,
               g.A, a_off, lda, g.B, b_off, ldb, g.beta, g.C, c_off, ldc, bias, bias_off,
               row_scale, row_scale_off, epilogue);
    return;
  }

  // Register-tile shape: operands are read in place where their layout
  // allows, else from packed panels (kept alive until the kernel is queued;
  // the in-order queue runs it before the pool hands the memory out again).
  const int mr = c.mr, nr = c.nr;
  cl_mem A = g.A, B = g.B;
  StorageType a_type = g.a_type, b_type = g.b_type;
  int a_off_k = a_off, lda_k = lda, a_block = ta ? mr : mr * lda;
  bool trans_a_k = ta;
  BufferPtr a_packed, b_packed;
  if (c.pack_a) {
    // A panel [K][MR] is a transposed A with lda = MR.
    a_packed = PackPanels(ctx, M, K, mr, g.A, g.a_type, a_off, lda, !ta);
    A = a_packed->mem();
    a_type = StorageType::kFloat32;
    a_off_k = 0;
    lda_k = mr;
    a_block = K * mr;
    trans_a_k = true;
  }
  int b_off_k = b_off, ldb_k = ldb, b_block = nr, b_cols = N;
  if (c.pack_b || tb || N < nr) {
    // The kernel needs NR contiguous columns per k: a transposed B has none,
    // a B narrower than NR too few.
    b_packed = PackPanels(ctx, N, K, nr, g.B, g.b_type, b_off, ldb, tb);
    B = b_packed->mem();
    b_type = StorageType::kFloat32;
    b_off_k = 0;
    ldb_k = nr;
    b_block = K * nr;
    b_cols = CeilDiv(N, nr) * nr;
  }
  ctx.Launch(ctx.Kernel("gemm.cl",
                        Defines(ctx, c, trans_a_k, false,
                                TypeDefine("A", a_type) + TypeDefine("B", b_type) +
                                    TypeDefine("C", g.c_type)),
                        "gemm_tiled"),
             NDRange(CeilDiv(M, mr), CeilDiv(N, nr)), NDRange(1, 1), M, N, K, g.alpha, A,
             a_off_k, lda_k, a_block, B, b_off_k, ldb_k, b_block, b_cols, g.beta, g.C,
             c_off, ldc, bias, bias_off, row_scale, row_scale_off, epilogue);
}

void Gemm(Context& ctx, const GemmArgs& args) {
  if (GemmRecording* recording = ActiveGemmRecording()) recording->Record(args);
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
