// The layout kernels of channels-last convolution
// (core/channels_last_convolution.hpp): NCHW blobs copied to NHWC, and the
// filters reordered so that each output's weights run (ki, kj, c), c fastest,
// the order of the channels-last window rows the GEMM reads.
// DATA_TYPE: how the blobs store their values (common.cl); the copies move
// the stored bits, never converting. (common.cl comes first: program_cache.)

#ifndef DATA_TYPE
#define DATA_TYPE 0
#endif
#if DATA_TYPE == 0
#define RAW uint
#else
#define RAW ushort
#endif

#define TILE 32
#define TILE_ROWS 8  // the work-group's rows: each work-item moves TILE / TILE_ROWS values

// Image get_global_id(2) of `in` (channels x area, from in_off) into `out`
// as area x padded (padded >= channels; the channels past `channels` are
// zero), through a 32 x 32 __local tile so that both the reads and the
// writes run along a row.
__kernel __attribute__((reqd_work_group_size(TILE, TILE_ROWS, 1))) void to_channels_last(
    const int channels, const int padded, const int area, __global const RAW* in,
    const int in_off, __global RAW* out) {
  __local RAW tile[TILE][TILE + 1];
  const int image = get_global_id(2);
  const int p0 = get_group_id(0) * TILE, c0 = get_group_id(1) * TILE;
  const int lx = get_local_id(0), ly = get_local_id(1);
  in += in_off + image * channels * area;
  out += image * padded * area;
  for (int r = ly; r < TILE; r += TILE_ROWS) {
    const int c = c0 + r, p = p0 + lx;
    if (c < channels && p < area) tile[r][lx] = in[c * area + p];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int r = ly; r < TILE; r += TILE_ROWS) {
    const int p = p0 + r, c = c0 + lx;
    if (c < padded && p < area) out[p * padded + c] = c < channels ? tile[lx][r] : 0;
  }
}

// Caffe's float filters w [outputs][inputs][kh][kw] reordered and stored in
// DATA_TYPE (rounded to nearest even): out [o][ki][kj][c] for the forward
// product, c < padded (zero past `inputs`: the padded channels of the
// channels-last copy); `flipped`, out [c][ki][kj][o] =
// w[o][c][kh-1-ki][kw-1-kj] for the data gradient (a convolution of the top
// diff by the filters turned 180 degrees, inputs and outputs swapped).
__kernel void channels_last_filters(const int count, const int outputs, const int inputs,
                                    const int padded, const int kh, const int kw,
                                    const int flipped, __global const float* w,
                                    __global STORAGE_ELEM(DATA_TYPE)* out) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int fastest = flipped ? outputs : padded;
  const int x = i % fastest, r = i / fastest;
  const int kj = r % kw, ki = r / kw % kh, row = r / (kw * kh);
  const int o = flipped ? x : row, c = flipped ? row : x;
  const int si = flipped ? kh - 1 - ki : ki, sj = flipped ? kw - 1 - kj : kj;
  STORAGE_STORE(DATA_TYPE, out, i, c < inputs ? w[((o * inputs + c) * kh + si) * kw + sj] : 0.f);
}

// diff [o][c][ki][kj] += g [o][ki][kj][c] (g's channels padded to `padded`):
// a channels-last weight gradient added into Caffe's layout.
__kernel void channels_last_filter_diff_add(const int count, const int inputs, const int padded,
                                            const int kh, const int kw, __global const float* g,
                                            __global float* diff) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int kj = i % kw, ki = i / kw % kh, c = i / (kw * kh) % inputs, o = i / (kw * kh * inputs);
  diff[i] += g[((o * kh + ki) * kw + kj) * padded + c];
}
