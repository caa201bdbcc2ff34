// Layout kernels around the convolution GEMMs. On CPU-shaped
// devices the GEMMs work in "column order" [channels][images * area] over a
// chunk of images (GPU-shaped GEMMs read and write the NCHW blobs in place);
// the blobs are NCHW, stored as DATA_TYPE (common.cl). The column-order
// buffers the GEMMs write are float; those copied from a blob for a GEMM to
// read are COL_TYPE: float, or the blob's own 16-bit type (exact copies).
// `nchw_off` (in elements) points at the chunk's first image.
//
// Two shapes of the same work (-DPLANES, as in im2col.cl):
//   PLANES=0 (GPU): one work-item per element, 2-D range (n * area + p,
//     channel).
//   PLANES=1 (CPU): one work-item per (image, channel) plane copying a
//     contiguous run, range (images, channels).
#ifndef PLANES
#define PLANES 0
#endif
#ifndef COL_TYPE
#define COL_TYPE 0
#endif
#define COL_ELEM STORAGE_ELEM(COL_TYPE)
#define COL_STORE(p, i, v) STORAGE_STORE(COL_TYPE, p, i, v)

// top (NCHW) = columns (the bias was added by the GEMM).
__kernel void conv_columns_to_nchw(const int images, const int channels,
                                   const int area, __global const float* columns,
                                   __global DATA_ELEM* y, const int nchw_off) {
#if PLANES
  const int n = get_global_id(0), c = get_global_id(1);
  if (n >= images || c >= channels) return;
  __global const float* src = columns + (c * images + n) * area;
  __global DATA_ELEM* dst = y + nchw_off + (n * channels + c) * area;
  for (int p = 0; p < area; ++p) DATA_STORE(dst, p, src[p]);
#else
  const int q = get_global_id(0), c = get_global_id(1);
  if (q >= images * area || c >= channels) return;
  const int n = q / area, p = q - n * area;
  DATA_STORE(y, nchw_off + (n * channels + c) * area + p, columns[c * images * area + q]);
#endif
}

// columns = top diff (NCHW) in column order, the GEMMs' operand in backward.
__kernel void conv_nchw_to_columns(const int images, const int channels,
                                   const int area, __global const DATA_ELEM* dy,
                                   const int nchw_off, __global COL_ELEM* columns) {
#if PLANES
  const int n = get_global_id(0), c = get_global_id(1);
  if (n >= images || c >= channels) return;
  __global const DATA_ELEM* src = dy + nchw_off + (n * channels + c) * area;
  __global COL_ELEM* dst = columns + (c * images + n) * area;
  for (int p = 0; p < area; ++p) COL_STORE(dst, p, DATA_LOAD(src, p));
#else
  const int q = get_global_id(0), c = get_global_id(1);
  if (q >= images * area || c >= channels) return;
  const int n = q / area, p = q - n * area;
  COL_STORE(columns, c * images * area + q, DATA_LOAD(dy, nchw_off + (n * channels + c) * area + p));
#endif
}

// The data gradient of a stride-1 convolution is a convolution of the top
// diff with each filter turned 180 degrees and the channel roles swapped:
// flipped[g * cin_g + c][o][kh - 1 - ki][kw - 1 - kj] = w[g * cout_g + o][c][ki][kj]
// (a [channels] x [cout_g * kh * kw] matrix per group). A work-item per weight.
__kernel void conv_flip_weights(const int count, const int groups, const int cout_g,
                                const int cin_g, const int kh, const int kw,
                                __global const float* w, __global float* flipped) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int kj = i % kw, ki = i / kw % kh, c = i / (kw * kh) % cin_g;
  const int o_all = i / (kw * kh * cin_g), g = o_all / cout_g, o = o_all % cout_g;
  flipped[(((g * cin_g + c) * cout_g + o) * kh + (kh - 1 - ki)) * kw + (kw - 1 - kj)] = w[i];
}
