// Winograd F(4x4, 3x3) convolution (Lavin & Gray, interpolation points 0,
// +-1, +-2, inf): a 6x6 input tile d and a 3x3 filter g give the 4x4
// correlation output
//   Y = A^T [(G g G^T) .* (B^T d B)] A.
// The element-wise product summed over input channels is 36 GEMMs
// (src/layers/winograd.cpp); these kernels are the three transforms around
// them. Transform matrices:
//   B^T = [4  0 -5  0 1 0]   G = [ 1/4     0    0 ]   A^T = [1 1  1 1  1 0]
//         [0 -4 -4  1 1 0]       [-1/6 -1/6 -1/6 ]         [0 1 -1 2 -2 0]
//         [0  4 -4 -1 1 0]       [-1/6  1/6 -1/6 ]         [0 1  1 4  4 0]
//         [0 -2 -1  2 1 0]       [1/24 1/12  1/6 ]         [0 1 -1 8 -8 1]
//         [0  2 -1 -2 1 0]       [1/24 -1/12 1/6 ]
//         [0  4  0 -5 0 1]       [   0    0    1 ]
// Layouts: U[36][out_channels][in_channels], V[36][in_channels][P],
// M[36][out_channels][P], P = images * tiles; element e = 6 * row + column
// of the 6x6 tile.
// The input and output images may be stored in 16 bits (IN_TYPE, OUT_TYPE:
// storage codes, common.cl; float by default): widened as the input
// transform reads them, rounded once as the output transform stores them.
// The filters, U, V and M are float.
#ifndef IN_TYPE
#define IN_TYPE 0
#endif
#ifndef OUT_TYPE
#define OUT_TYPE 0
#endif
#define IN_ELEM STORAGE_ELEM(IN_TYPE)
#define OUT_ELEM STORAGE_ELEM(OUT_TYPE)
#define IN_LOAD(p, i) STORAGE_LOAD(IN_TYPE, p, i)
#define OUT_STORE(p, i, v) STORAGE_STORE(OUT_TYPE, p, i, v)

// r = B^T d for 6 values d[0], d[stride], ... (a column or row of a tile).
inline void winograd_bt(const float* d, const int stride, float* r, const int r_stride) {
  const float d0 = d[0], d1 = d[stride], d2 = d[2 * stride], d3 = d[3 * stride],
              d4 = d[4 * stride], d5 = d[5 * stride];
  r[0] = 4.f * d0 - 5.f * d2 + d4;
  r[r_stride] = -4.f * (d1 + d2) + d3 + d4;
  r[2 * r_stride] = 4.f * (d1 - d2) - d3 + d4;
  r[3 * r_stride] = 2.f * (d3 - d1) - d2 + d4;
  r[4 * r_stride] = 2.f * (d1 - d3) - d2 + d4;
  r[5 * r_stride] = 4.f * d1 - 5.f * d3 + d5;
}

// r = G g for 3 values g[0], g[stride], g[2 * stride].
inline void winograd_g(const float* g, const int stride, float* r, const int r_stride) {
  const float g0 = g[0], g1 = g[stride], g2 = g[2 * stride];
  r[0] = 0.25f * g0;
  r[r_stride] = (-1.f / 6.f) * (g0 + g1 + g2);
  r[2 * r_stride] = (-1.f / 6.f) * (g0 - g1 + g2);
  r[3 * r_stride] = (1.f / 24.f) * g0 + (1.f / 12.f) * g1 + (1.f / 6.f) * g2;
  r[4 * r_stride] = (1.f / 24.f) * g0 - (1.f / 12.f) * g1 + (1.f / 6.f) * g2;
  r[5 * r_stride] = g2;
}

// r = A^T m for 6 values m[0], m[stride], ...
inline void winograd_at(const float* m, const int stride, float* r, const int r_stride) {
  const float m0 = m[0], m1 = m[stride], m2 = m[2 * stride], m3 = m[3 * stride],
              m4 = m[4 * stride], m5 = m[5 * stride];
  const float sum12 = m1 + m2, diff12 = m1 - m2, sum34 = m3 + m4, diff34 = m3 - m4;
  r[0] = m0 + sum12 + sum34;
  r[r_stride] = diff12 + 2.f * diff34;
  r[2 * r_stride] = sum12 + 4.f * sum34;
  r[3 * r_stride] = diff12 + 8.f * diff34 + m5;
}

// U[e][o][i] = (G g G^T)[e], one work-item per (o, i). The filter g is
// weights[o][i] (Caffe's [out][in][3][3]), or with rotate_swap
// weights[i][o] turned 180 degrees: the filters of a convolution's data
// gradient, whose input channels are the convolution's outputs.
__kernel void winograd_filter_transform(const int out_channels, const int in_channels,
                                        const int rotate_swap,
                                        __global const float* weights, __global float* U) {
  const int i = GLOBAL_INDEX;
  const int pairs = out_channels * in_channels;
  if (i >= pairs) return;
  const int o = i / in_channels, c = i % in_channels;
  float g[9];
  if (rotate_swap) {
    __global const float* w = weights + (c * out_channels + o) * 9;
    for (int k = 0; k < 9; ++k) g[k] = w[8 - k];
  } else {
    __global const float* w = weights + i * 9;
    for (int k = 0; k < 9; ++k) g[k] = w[k];
  }
  float t[18], u[36];  // t = G g (6 x 3), u = t G^T (6 x 6)
  for (int col = 0; col < 3; ++col) winograd_g(g + col, 3, t + col, 3);
  for (int row = 0; row < 6; ++row) winograd_g(t + 3 * row, 1, u + 6 * row, 1);
  for (int e = 0; e < 36; ++e) U[e * pairs + i] = u[e];
}

// V[e][c][p] = (B^T d B)[e] for the 6x6 input patch d of tile p in channel
// c, read from `input` (images x channels x height x width, from
// input_offset) with zeros outside the image. Tile (ty, tx) of an image
// covers output rows 4ty..4ty+3 and columns 4tx..4tx+3, so its patch starts
// at input row 4ty - pad_h, column 4tx - pad_w. One work-item per (p, c):
// neighbouring work-items write neighbouring p.
__kernel void winograd_input_transform(const int images, const int channels,
                                       const int height, const int width, const int pad_h,
                                       const int pad_w, const int tiles_h, const int tiles_w,
                                       __global const IN_ELEM* input, const int input_offset,
                                       __global float* V) {
  const int p = get_global_id(0), c = get_global_id(1);
  const int tiles = tiles_h * tiles_w, P = images * tiles;
  if (p >= P) return;
  const int n = p / tiles, t = p % tiles;
  const int y0 = (t / tiles_w) * 4 - pad_h, x0 = (t % tiles_w) * 4 - pad_w;
  __global const IN_ELEM* plane = input + input_offset + (n * channels + c) * height * width;
  float d[36], r[36];
  for (int y = 0; y < 6; ++y)
    for (int x = 0; x < 6; ++x) {
      const int iy = y0 + y, ix = x0 + x;
      d[6 * y + x] =
          iy >= 0 && iy < height && ix >= 0 && ix < width ? IN_LOAD(plane, iy * width + ix) : 0.f;
    }
  for (int x = 0; x < 6; ++x) winograd_bt(d + x, 6, r + x, 6);      // columns: B^T d
  for (int y = 0; y < 6; ++y) winograd_bt(r + 6 * y, 1, d + 6 * y, 1);  // rows: (B^T d) B
  __global float* out = V + c * P + p;
  const int stride = channels * P;
  for (int e = 0; e < 36; ++e) out[e * stride] = d[e];
}

// output (=) = A^T m A for tile p of out channel o, m[e] = M[e][o][p], plus
// bias[o] when has_bias, then max(., 0) when relu. Writes the part of the
// 4x4 tile inside the out_h x out_w image (images x out_channels x out_h x
// out_w from output_offset). One work-item per (p, o).
__kernel void winograd_output_transform(const int images, const int out_channels,
                                        const int out_h, const int out_w, const int tiles_h,
                                        const int tiles_w, __global const float* M,
                                        __global const float* bias, const int has_bias,
                                        const int relu, __global OUT_ELEM* output,
                                        const int output_offset) {
  const int p = get_global_id(0), o = get_global_id(1);
  const int tiles = tiles_h * tiles_w, P = images * tiles;
  if (p >= P) return;
  const int n = p / tiles, t = p % tiles;
  const int y0 = (t / tiles_w) * 4, x0 = (t % tiles_w) * 4;
  float m[36], r[24], y[16];
  __global const float* in = M + o * P + p;
  const int stride = out_channels * P;
  for (int e = 0; e < 36; ++e) m[e] = in[e * stride];
  for (int x = 0; x < 6; ++x) winograd_at(m + x, 6, r + x, 6);      // columns: A^T m (4 x 6)
  for (int row = 0; row < 4; ++row) winograd_at(r + 6 * row, 1, y + 4 * row, 1);  // rows
  const float b = has_bias ? bias[o] : 0.f;
  __global OUT_ELEM* plane = output + output_offset + (n * out_channels + o) * out_h * out_w;
  for (int row = 0; row < 4; ++row)
    for (int col = 0; col < 4; ++col) {
      const int oy = y0 + row, ox = x0 + col;
      if (oy >= out_h || ox >= out_w) continue;
      const float v = y[4 * row + col] + b;
      OUT_STORE(plane, oy * out_w + ox, relu ? fmax(v, 0.f) : v);
    }
}
