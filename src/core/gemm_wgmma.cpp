#include "core/gemm_wgmma.hpp"

#include <glog/logging.h>

#include <mutex>
#include <set>

#include "core/matrix_engine.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/error.hpp"
#include "dlcaffe/program_cache.hpp"

namespace dlcaffe {

namespace {

std::mutex disabled_mutex;
std::set<cl_device_id>& DisabledDevices() {
  static std::set<cl_device_id>* devices = new std::set<cl_device_id>;
  return *devices;
}

// Work-items of a work-group: a warpgroup of 128 per 64 rows.
int Threads(const GemmConfig& c) { return c.mr / 64 * 128; }

}  // namespace

std::string WgmmaKernelName(StorageType type, const GemmConfig& c) {
  return std::string("gemm_wgmma_") + (type == StorageType::kFloat16 ? "f16_" : "bf16_") +
         std::to_string(c.mr) + "x" + std::to_string(c.nr) + "x" + std::to_string(c.tk) + "_s" +
         std::to_string(c.stages) + "_k" + std::to_string(c.in_flight);
}

GemmConfig WgmmaConfig(int tile_m, int tile_n, int depth, int stages, int in_flight) {
  GemmConfig c;
  c.form = GemmForm::kWgmma;
  c.use_local = true;
  c.wg_m = c.wg_n = 1;  // the tile is mr x nr (SplitKSlices reads wg * r)
  c.mr = tile_m;
  c.nr = tile_n;
  c.vw = 1;
  c.tk = depth;
  c.stages = stages;
  c.in_flight = in_flight;
  c.vector_loads = false;
  return c;
}

std::vector<GemmConfig> WgmmaConfigs() {
  return {WgmmaConfig(128, 256, 16, 4, 1), WgmmaConfig(128, 128, 16, 6, 0)};
}

bool WgmmaAvailable(const Context& ctx, const LayerChoices& choices, MatrixMath math) {
  const MmaForm form = MmaFormFor(ctx, choices, math);
  if (form != MmaForm::kF16 && form != MmaForm::kBF16) return false;
  if (NvidiaComputeCapability(ctx.info()) != 90) return false;
  std::lock_guard<std::mutex> lock(disabled_mutex);
  return !DisabledDevices().count(ctx.info().device_id);
}

bool WgmmaOperandsFit(const GemmArgs& g, StorageType own) {
  // 16-bit values, 8 to a 16-byte chunk.
  return !g.b_window.active() && g.a_type == own && g.b_type == own &&
         OperandsInWholeChunks(g, 8);
}

bool WgmmaRuns(const Context& ctx, const GemmConfig& c, const GemmArgs& g) {
  // Its epilogue adds a bias per row only (gemm_wgmma.cu).
  const LayerChoices choices = ProductChoices(ctx, g);
  return c.form == GemmForm::kWgmma && WgmmaAvailable(ctx, choices, g.math) &&
         !g.bias_per_column &&
         WgmmaOperandsFit(g, MmaInputType(MmaFormFor(ctx, choices, g.math)));
}

bool LaunchWgmma(Context& ctx, const GemmConfig& c, const GemmArgs& g, const GemmTarget& l) {
  const MmaForm form = MmaFormFor(ctx, ProductChoices(ctx, g), g.math);
  cl_kernel kernel = nullptr;
  try {
    kernel = ctx.Kernel("gemm_wgmma.ptx", "", WgmmaKernelName(MmaInputType(form), c));
  } catch (const Error& e) {
    std::lock_guard<std::mutex> lock(disabled_mutex);
    if (DisabledDevices().insert(ctx.info().device_id).second)
      LOG(WARNING) << ctx.info().Describe()
                   << ": the wgmma GEMM did not load, so products run the mma.sync kernels ("
                   << FirstBuildLogLine(e.what()) << ")";
    return false;
  }
  const bool ta = g.trans_a == Transpose::kYes, tb = g.trans_b == Transpose::kYes;
  const LeadingDims ld(g);
  const int lda = ld.a, ldb = ld.b;
  const int tiles_m = (g.M + c.mr - 1) / c.mr, tiles_n = (g.N + c.nr - 1) / c.nr;
  const int b_image = g.b_image;
  cl_mem bias = g.bias ? g.bias : g.C, row_scale = g.row_scale ? g.row_scale : g.C;
  ctx.Launch(kernel, NDRange(size_t(tiles_n) * Threads(c), tiles_m, size_t(l.slices) * g.batch),
             NDRange(Threads(c), 1, 1), g.M, g.N, g.K, l.alpha, g.A,
             static_cast<int>(g.a_offset), lda, g.B, static_cast<int>(g.b_offset), ldb, l.beta,
             l.C, l.c_off, l.ldc, g.a_group, g.a_image, g.b_group, b_image, l.c_group,
             l.c_image, l.slices, l.k_per_slice, l.c_slice,
             static_cast<int>(g.a_batch_stride), static_cast<int>(g.b_batch_stride), l.c_batch,
             bias, static_cast<int>(g.bias_offset), row_scale,
             static_cast<int>(g.row_scale_offset), l.epilogue,
             l.partial() ? 0 : static_cast<int>(g.epilogue_batch_stride), ta ? 1 : 0, tb ? 1 : 0,
             static_cast<int>(l.c_type));
  return true;
}

}  // namespace dlcaffe
