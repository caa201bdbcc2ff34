// The GPU shape (src/cl/gemm_tiled.cl) as a GEMM form: work-groups of
// tiles staged in __local memory, the products on the float units or, where
// the math and the device allow, on NVIDIA's tensor cores through mma.sync
// (with the cp.async pipeline where the operands allow it). It takes every
// product: any layout, storage types, batch, image-grouped operands and
// implicit convolution windows.
#include "core/gemm_launch.hpp"
#include "core/matrix_engine.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/error.hpp"
#include "dlcaffe/program_cache.hpp"

#include <algorithm>

namespace dlcaffe {

// WARPS_M of the tensor-core form of GPU-shaped `c` (gemm_tiled.cl, MMA): the
// cut of its tile into warps that reads the fewest values from __local
// memory per k step (8 per 16-row block, 4 per 8-column block: 64 x 32 per
// warp in the 128 x 128 tile); 0 where the tile does not cut into whole
// warps of 16 x 8 blocks or its depth is not a multiple of the
// instruction's k.
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
  const LayerChoices choices = ProductChoices(ctx, g);
  if (!c.use_local || c.stages == 1 || !choices.matrix_pipeline) return 0;
  const MmaForm form = MmaFormFor(ctx, choices, g.math);
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
  // Channels-last windows run along their rows: k for op(B) = windows.
  const bool b_along_k = g.b_window.active() ? !tb : tb;
  if (tm % 16 || tn % 16 || (tn / (warps / warps_m) / 8) % 2 ||
      !power_of_two((ta ? tm : c.tk) / chunk) || !power_of_two((b_along_k ? c.tk : tn) / chunk))
    return 0;
  // Whole 16-byte chunks on 16-byte boundaries, never across an image.
  if (!OperandsInWholeChunks(g, chunk)) return 0;
  const size_t stage_bytes = size_t(bytes) * (tm + tn) * c.tk;
  const int fit = static_cast<int>(
      std::min<uint64_t>(4, ctx.info().local_mem_bytes / std::max<size_t>(1, stage_bytes)));
  const int stages = c.stages > 1 ? std::min(c.stages, fit) : fit;
  return stages >= 2 ? stages : 0;
}

namespace {

// The GPU-shaped kernel, on the tensor cores in `form` (MmaFormFor) where
// the tile permits, through `stages` cp.async stages
// where that is not 0 (MmaPipelineStages), built from `pipelined_defines`;
// else from `staged_defines` (which keep the vector fetches the register-
// staged kernels use and the pipeline does not). A form that does not build
// is turned off for the device, and the float kernel built instead; a
// pipeline that does not build, likewise, for the form's register-staged
// kernel.
cl_kernel TiledKernel(Context& ctx, const GemmConfig& c, MmaForm form,
                      const std::string& staged_defines, const std::string& pipelined_defines,
                      int stages) {
  const int warps_m = form == MmaForm::kNone ? 0 : MmaWarpsM(c, form);
  if (warps_m) {
    const std::string mma = " -DMMA=" + std::to_string(static_cast<int>(form)) +
                            " -DWARPS_M=" + std::to_string(warps_m);
    if (stages) {
      try {
        return ctx.Kernel("gemm_tiled.cl",
                          pipelined_defines + mma + " -DMMA_STAGES=" + std::to_string(stages),
                          "gemm_tiled");
      } catch (const Error& e) {
        DisableMmaPipeline(ctx, form, FirstBuildLogLine(e.what()));
      }
    }
    try {
      return ctx.Kernel("gemm_tiled.cl", staged_defines + mma, "gemm_tiled");
    } catch (const Error& e) {
      DisableMmaForm(ctx, form, FirstBuildLogLine(e.what()));
    }
  }
  return ctx.Kernel("gemm_tiled.cl", staged_defines, "gemm_tiled");
}

}  // namespace

VectorLoads UsesVectorLoads(const GemmConfig& c, const GemmArgs& g) {
  VectorLoads v;
  if (!c.use_local || !c.vector_loads) return v;
  // Vector fetches need every row of the operand, in every product of the
  // batch, to start on a 4-element boundary, image groups whose four
  // consecutive indices never straddle two images, and tiles that split into
  // whole 4-vectors per work-item (VEC_LOAD_A/B in gemm_tiled.cl). An implicit B
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

bool LaunchTiledTiles(Context& ctx, const GemmConfig& c, const GemmArgs& g,
                      const GemmTarget& t) {
  const bool ta = g.trans_a == Transpose::kYes, tb = g.trans_b == Transpose::kYes;
  const LeadingDims ld(g);
  const int tile_m = c.wg_m * c.mr, tile_n = c.wg_n * c.nr;
  const NDRange global(CeilDiv(g.N, tile_n) * c.wg_n, CeilDiv(g.M, tile_m) * c.wg_m,
                       size_t(t.slices) * g.batch);
  const NDRange local(c.wg_n, c.wg_m, 1);
  // Split-K writes its slices plainly, as float partial sums; the reduction
  // groups C and gives it its type.
  const int grouped_operands =
      (g.a_group ? 1 : 0) | (g.b_group ? 2 : 0) | (g.c_group && !t.partial() ? 4 : 0);
  const std::string types = TypeDefine("A", g.a_type) + TypeDefine("B", g.b_type) +
                            (t.partial() ? std::string() : TypeDefine("C", g.c_type));
  const int stages = MmaPipelineStages(ctx, c, g);
  const LayerChoices choices = ProductChoices(ctx, g);
  const auto defines = [&](VectorLoads vector_loads) {
    return GemmDefines(choices, c, ta, tb, types, grouped_operands, g.b_window, vector_loads);
  };
  cl_kernel kernel = TiledKernel(ctx, c, MmaFormFor(ctx, choices, g.math),
                                 defines(UsesVectorLoads(c, g)),
                                 stages ? defines(VectorLoads()) : std::string(), stages);
  // An implicit B's images are b_image floats apart; unused buffer
  // arguments get C.
  const int b_image = g.b_window.active() ? g.b_window.image_floats : g.b_image;
  cl_mem bias = g.bias ? g.bias : g.C, row_scale = g.row_scale ? g.row_scale : g.C;
  ctx.Launch(kernel, global, local, g.M, g.N, g.K, t.alpha, g.A,
             static_cast<int>(g.a_offset), ld.a, g.B, static_cast<int>(g.b_offset), ld.b,
             t.beta, t.C, t.c_off, t.ldc, g.a_group, g.a_image, g.b_group, b_image, t.c_group,
             t.c_image, t.slices, t.k_per_slice, t.c_slice, static_cast<int>(g.a_batch_stride),
             static_cast<int>(g.b_batch_stride), t.c_batch, bias, static_cast<int>(g.bias_offset),
             row_scale, static_cast<int>(g.row_scale_offset), t.epilogue,
             t.partial() ? 0 : static_cast<int>(g.epilogue_batch_stride));
  return true;
}

}  // namespace dlcaffe
