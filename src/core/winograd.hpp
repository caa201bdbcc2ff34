// Winograd F(4x4, 3x3) convolution (Lavin & Gray): 3x3 stride-1 2-D
// convolution with 2.25 multiplications per output per channel pair
// instead of 9. Each 4x4 output tile comes from a 6x6 input tile:
//   U[36][out][in] = G g G^T          filter transform (src/cl/winograd.cl)
//   V[36][in][P]   = B^T d B          input transform, P = images * tiles
//   M[e]           = U[e] * V[e]      36 GEMMs (out x in) * (in x P)
//   output         = A^T m A (+ bias, ReLU)   output transform
// The Convolution layer runs its forward pass and its data gradient through
// it (the data gradient of a 3x3 stride-1 convolution is one too: the top
// diff convolved with the filters turned 180 degrees, input and output
// channels swapped, pad 2 - pad).
#pragma once
#include <CL/cl.h>

#include "dlcaffe/buffer_pool.hpp"
#include "dlcaffe/storage_type.hpp"

namespace dlcaffe {

class Context;

// A stride-1 3x3 convolution of images x in_channels x height x width into
// images x out_channels x out_h() x out_w(), zero-padded by pad_h, pad_w.
struct WinogradShape {
  int images = 0;
  int in_channels = 0, out_channels = 0;
  int height = 0, width = 0;
  int pad_h = 0, pad_w = 0;

  int out_h() const { return height + 2 * pad_h - 2; }
  int out_w() const { return width + 2 * pad_w - 2; }
  // 4x4 output tiles per image (partial ones at the bottom and right edges).
  int tiles_h() const { return (out_h() + 3) / 4; }
  int tiles_w() const { return (out_w() + 3) / 4; }
  int tiles() const { return tiles_h() * tiles_w(); }
};

// The transformed filters U[36][out_channels][in_channels] of `weights`:
// Caffe's [out_channels][in_channels][3][3] filters, or with rotate_swap
// [in_channels][out_channels][3][3] ones turned 180 degrees (a
// convolution's weights, for its data gradient). A buffer from the pool.
BufferPtr WinogradFilters(Context& ctx, int out_channels, int in_channels, bool rotate_swap,
                          cl_mem weights);

// output (=) = the convolution of `input` by the filters U (from
// WinogradFilters), times scale[out_channels] unless scale is null (a folded
// BatchNorm/Scale; it commutes with the output transform, so the GEMMs apply
// it), + bias[out_channels] unless bias is null, then max(., 0) if relu; both
// blobs whole, from offset 0, stored as input_type and output_type (16-bit
// values are widened on load and the output rounded once; the transforms
// and products are float either way). Images run in chunks whose V and
// M buffers stay at or below max_scratch_floats each (at least one image
// per chunk). The products run under the layer's `choices`.
void WinogradConvolution(Context& ctx, const LayerChoices& choices,
                         const WinogradShape& shape, cl_mem filters,
                         cl_mem input, cl_mem scale, cl_mem bias, bool relu, cl_mem output,
                         long long max_scratch_floats,
                         StorageType input_type = StorageType::kFloat32,
                         StorageType output_type = StorageType::kFloat32);

}  // namespace dlcaffe
