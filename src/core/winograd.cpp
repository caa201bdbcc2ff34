#include "core/winograd.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <limits>

#include "core/storage_option.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/error.hpp"
#include "dlcaffe/math.hpp"

namespace dlcaffe {

namespace {

constexpr int kTileElements = 36;  // a 6x6 transformed tile
constexpr size_t kGroup = 64;      // work-group width of the tile transforms (along P)

// M[e] = U[e] * V[e] for the 36 tile elements: U[e] is out x in, V[e] in x P,
// M[e] out x P, each packed row-major one after another, rows scaled by
// scale[out] unless it is null. One batched GEMM (one launch on a GPU).
void TileProducts(Context& ctx, const LayerChoices& choices, int out_channels,
                  int in_channels, int P, cl_mem U, cl_mem V, cl_mem scale, cl_mem M) {
  GemmArgs g;
  g.choices = choices;
  // math stays kFloat32 whatever the layer's: the transforms' coefficients
  // (up to 8 and 1/24) already cost F(4x4, 3x3) 10-100x a direct sum's
  // rounding error (layers/convolution.cpp), and rounding U and V to 16 or
  // 10-bit mantissas would multiply that. (Where Convolution::UseWinograd
  // picks Winograd, a layer's TF32/FLOAT16/BFLOAT16 math is not used.)
  g.row_scale = scale;
  g.M = out_channels;
  g.N = P;
  g.K = in_channels;
  g.A = U;
  g.B = V;
  g.C = M;
  g.batch = kTileElements;
  g.a_batch_stride = size_t(out_channels) * in_channels;
  g.b_batch_stride = size_t(in_channels) * P;
  g.c_batch_stride = size_t(out_channels) * P;
  Gemm(ctx, g);
}

}  // namespace

BufferPtr WinogradFilters(Context& ctx, int out_channels, int in_channels, bool rotate_swap,
                          cl_mem weights) {
  const int pairs = out_channels * in_channels;
  BufferPtr filters = ctx.Allocate(sizeof(float) * kTileElements * size_t(pairs));
  ctx.Launch1D(ctx.Kernel("winograd.cl", "", "winograd_filter_transform"), pairs,
               out_channels, in_channels, rotate_swap ? 1 : 0, weights, filters->mem());
  return filters;
}

void WinogradConvolution(Context& ctx, const LayerChoices& choices, const WinogradShape& s,
                         cl_mem filters, cl_mem input, cl_mem scale, cl_mem bias, bool relu,
                         cl_mem output, long long max_scratch_floats, StorageType input_type,
                         StorageType output_type) {
  CHECK(s.out_h() > 0 && s.out_w() > 0) << "Winograd: empty output";
  // Images per chunk: V and M of one image are 36 x channels x tiles floats.
  const long long per_image =
      1LL * kTileElements * std::max(s.in_channels, s.out_channels) * s.tiles();
  DLC_REQUIRE(per_image <= std::numeric_limits<int>::max(),
              "Winograd convolution: one image of " << s.in_channels << " x " << s.height
                                                    << " x " << s.width
                                                    << " needs past 2^31 floats of scratch");
  // (The kernels index V and M with 32-bit ints.)
  const long long limit =
      std::min<long long>(max_scratch_floats, std::numeric_limits<int>::max());
  const int chunk =
      static_cast<int>(std::max(1LL, std::min<long long>(s.images, limit / per_image)));
  const int chunk_P = chunk * s.tiles();
  BufferPtr V = ctx.Allocate(sizeof(float) * kTileElements * size_t(s.in_channels) * chunk_P);
  BufferPtr M = ctx.Allocate(sizeof(float) * kTileElements * size_t(s.out_channels) * chunk_P);
  cl_kernel input_transform = ctx.Kernel(
      "winograd.cl", StorageOption("IN_TYPE", input_type), "winograd_input_transform");
  cl_kernel output_transform = ctx.Kernel(
      "winograd.cl", StorageOption("OUT_TYPE", output_type), "winograd_output_transform");
  const int in_image = s.in_channels * s.height * s.width;
  const int out_image = s.out_channels * s.out_h() * s.out_w();
  for (int n0 = 0; n0 < s.images; n0 += chunk) {
    const int images = std::min(chunk, s.images - n0);
    const int P = images * s.tiles();
    ctx.Launch(input_transform, NDRange(RoundUp(P, kGroup), s.in_channels), NDRange(kGroup, 1),
               images, s.in_channels, s.height, s.width, s.pad_h, s.pad_w, s.tiles_h(),
               s.tiles_w(), input, n0 * in_image, V->mem());
    TileProducts(ctx, choices, s.out_channels, s.in_channels, P, filters, V->mem(), scale,
                 M->mem());
    ctx.Launch(output_transform, NDRange(RoundUp(P, kGroup), s.out_channels),
               NDRange(kGroup, 1), images, s.out_channels, s.out_h(), s.out_w(), s.tiles_h(),
               s.tiles_w(), M->mem(), bias ? bias : M->mem(), bias ? 1 : 0, relu ? 1 : 0,
               output, n0 * out_image);
  }
}

}  // namespace dlcaffe
