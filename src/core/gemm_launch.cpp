#include "core/gemm_launch.hpp"

#include <limits>
#include <sstream>

#include "core/storage_option.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/error.hpp"

namespace dlcaffe {

bool OperandsInWholeChunks(const GemmArgs& g, int chunk) {
  const LeadingDims ld(g);
  const size_t c = static_cast<size_t>(chunk);
  const auto chunked = [&](size_t ld_values, size_t offset, size_t batch_stride, int group,
                           int image) {
    return ld_values % c == 0 && offset % c == 0 && (g.batch <= 1 || batch_stride % c == 0) &&
           (group == 0 || (group % chunk == 0 && image % chunk == 0));
  };
  const bool ta = g.trans_a == Transpose::kYes, tb = g.trans_b == Transpose::kYes;
  const bool a_whole = chunked(ld.a, g.a_offset, g.a_batch_stride, g.a_group, g.a_image) &&
                       (ta ? g.M : g.K) % chunk == 0;
  const ConvolutionWindow& w = g.b_window;
  if (w.active()) {
    // Windows: only channels-last ones, whose rows are runs of channels
    // (chunks never cross a kernel position); a pixel's channels start on
    // a chunk boundary in every image.
    return a_whole && w.nhwc_channels > 0 && w.nhwc_channels % chunk == 0 &&
           w.image_floats % chunk == 0 && g.b_offset % c == 0 &&
           (g.batch <= 1 || g.b_batch_stride % c == 0);
  }
  return a_whole && chunked(ld.b, g.b_offset, g.b_batch_stride, g.b_group, g.b_image) &&
         (tb ? g.K : g.N) % chunk == 0;
}

int EpilogueFlags(const GemmArgs& g) {
  return (g.bias ? (g.bias_per_column ? 8 : 1) : 0) | (g.relu ? 2 : 0) | (g.row_scale ? 4 : 0);
}

std::string TypeDefine(const char* operand, StorageType type) {
  return StorageOption(std::string(operand) + "_TYPE", type);
}

std::string GemmDefines(const LayerChoices& choices, const GemmConfig& c, bool trans_a,
                        bool trans_b, const std::string& types, int grouped,
                        const ConvolutionWindow& window,
                        VectorLoads vector_loads) {
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
  if (window.nhwc_channels > 0) s << " -DWIN_C=" << window.nhwc_channels;
  // The GPU shape on a CPU (tests): unrolling cost 3 s per PoCL build.
  if (c.use_local && choices.cpu_shaped_kernels) s << " -DUNROLL_HINTS=0";
  if (c.dot_form) s << " -DDOT_FORM=1";
  if (vector_loads.a) s << " -DVEC_LOAD_A=1";
  if (vector_loads.b) s << " -DVEC_LOAD_B=1";
  s << types;
  return s.str();
}

bool RunTiles(Context& ctx, const GemmConfig& c, const GemmArgs& g, TileLauncher launch) {
  const int M = g.M, N = g.N, K = g.K;
  const LeadingDims ld(g);
  const int slices =
      SplitKSlices(ctx.info().compute_units, c, M, N, K, g.batch, StreamsTiles(ctx, c, g));
  const int k_per_slice = RoundUp(CeilDiv(K, slices), c.tk);
  const int used_slices = CeilDiv(K, k_per_slice);
  const int epilogue = EpilogueFlags(g);
  if (used_slices == 1) {
    GemmTarget product;
    product.k_per_slice = K;
    product.C = g.C;
    product.c_off = static_cast<int>(g.c_offset);
    product.ldc = ld.c;
    product.c_group = g.c_group;
    product.c_image = g.c_image;
    product.c_batch = static_cast<int>(g.c_batch_stride);
    product.c_type = g.c_type;
    product.alpha = g.alpha;
    product.beta = g.beta;
    product.epilogue = epilogue;
    return launch(ctx, c, g, product);
  }
  // Each slice's plain product into scratch (per product of the batch, its
  // slices consecutive), then one pass sums them into C.
  const size_t slice_floats = size_t(M) * N;
  DLC_REQUIRE(slice_floats * used_slices * g.batch <= size_t(std::numeric_limits<int>::max()),
              "Gemm: split-K scratch past 2^31 floats");
  BufferPtr partial = ctx.Allocate(sizeof(float) * slice_floats * used_slices * g.batch);
  GemmTarget scratch;
  scratch.slices = used_slices;
  scratch.k_per_slice = k_per_slice;
  scratch.C = partial->mem();
  scratch.ldc = N;
  scratch.c_slice = M * N;
  scratch.c_batch = used_slices * M * N;
  if (!launch(ctx, c, g, scratch)) return false;
  cl_mem bias = g.bias ? g.bias : g.C, row_scale = g.row_scale ? g.row_scale : g.C;
  ctx.Launch(ctx.Kernel("gemm.cl", TypeDefine("C", g.c_type), "gemm_reduce_slices"),
             NDRange(RoundUp(N, 32), RoundUp(M, 8), g.batch), NDRange(32, 8, 1), M, N,
             used_slices, partial->mem(), g.alpha, g.beta, g.C, static_cast<int>(g.c_offset),
             ld.c, g.c_group, g.c_image, static_cast<int>(g.c_batch_stride), bias,
             static_cast<int>(g.bias_offset), row_scale, static_cast<int>(g.row_scale_offset),
             epilogue, static_cast<int>(g.epilogue_batch_stride));
  return true;
}

}  // namespace dlcaffe
