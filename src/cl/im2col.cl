// im2col / col2im for 2-D convolution over a chunk of `images` images at once.
//
// The column buffer is row-major [channels * kernel_h * kernel_w][images *
// out_h * out_w]: row (c, ki, kj), column (n, oh, ow) holds input pixel
// (n, c, oh * stride_h - pad_h + ki * dilation_h, ow * stride_w - pad_w +
// kj * dilation_w), 0 outside the image. A group's rows are contiguous, so a
// convolution is one GEMM per group over the whole chunk.
//
// `x_off` / `dx_off` (in elements) point at the chunk's first image in NCHW.
// The images are stored as DATA_TYPE (common.cl: float unless a 16-bit
// convolution asks). im2col writes its columns as COL_TYPE: float, or the
// images' own 16-bit type (exact copies, half the bytes, and operands the
// GEMM's cp.async pipeline streams as they are). col2im reads float columns
// (the sums of a GEMM).
//
// Two shapes of the same work (-DPLANES):
//   PLANES=0 (GPU): one work-item per element, 2-D range (column index,
//     row index) for im2col and (n * height * width pixel index, channel)
//     for col2im.
//   PLANES=1 (CPU, ../shared/notes/pocl-performance.md): one work-item per (image,
//     channel) plane, range (images, channels), looping over contiguous runs
//     with no divisions inside the loops.
#ifndef PLANES
#define PLANES 0
#endif
#ifndef COL_TYPE
#define COL_TYPE 0
#endif
#define COL_ELEM STORAGE_ELEM(COL_TYPE)
#define COL_STORE(p, i, v) STORAGE_STORE(COL_TYPE, p, i, v)
// Columns per work-item of the GPU-shaped im2col (a multiple of 4).
#define IM2COL_RUN 8

#if PLANES
// Output columns ow in [*lo, *hi) read input columns w = ow * stride + first
// inside [0, size).
inline void valid_outputs(const int first, const int stride, const int size,
                          const int outputs, int* lo, int* hi) {
  const int begin = first >= 0 ? 0 : (-first + stride - 1) / stride;
  const int end = size - 1 - first >= 0 ? (size - 1 - first) / stride + 1 : 0;
  *lo = min(begin, outputs);
  *hi = max(*lo, min(end, outputs));
}
#endif

__kernel void im2col(const int images, const int channels, const int height,
                     const int width, const int kernel_h, const int kernel_w,
                     const int pad_h, const int pad_w, const int stride_h,
                     const int stride_w, const int dilation_h, const int dilation_w,
                     const int out_h, const int out_w, __global const DATA_ELEM* x,
                     const int x_off, __global COL_ELEM* col) {
  const int out_area = out_h * out_w;
  const int columns = images * out_area;
#if PLANES
  const int n = get_global_id(0), c = get_global_id(1);
  if (n >= images || c >= channels) return;
  __global const DATA_ELEM* plane = x + x_off + (n * channels + c) * height * width;
  for (int ki = 0; ki < kernel_h; ++ki)
    for (int kj = 0; kj < kernel_w; ++kj) {
      const int r = (c * kernel_h + ki) * kernel_w + kj;
      __global COL_ELEM* dst = col + r * columns + n * out_area;
      const int w_first = kj * dilation_w - pad_w;  // input column of ow = 0
      int lo, hi;
      valid_outputs(w_first, stride_w, width, out_w, &lo, &hi);
      for (int oh = 0; oh < out_h; ++oh, dst += out_w) {
        const int h = oh * stride_h - pad_h + ki * dilation_h;
        if (h < 0 || h >= height) {
          for (int ow = 0; ow < out_w; ++ow) COL_STORE(dst, ow, 0.f);
          continue;
        }
        // Row start index; may be negative, only [lo, hi) is read.
        const int base = h * width + w_first;
        for (int ow = 0; ow < lo; ++ow) COL_STORE(dst, ow, 0.f);
        if (stride_w == 1)
          for (int ow = lo; ow < hi; ++ow) COL_STORE(dst, ow, DATA_LOAD(plane, base + ow));
        else
          for (int ow = lo; ow < hi; ++ow)
            COL_STORE(dst, ow, DATA_LOAD(plane, base + ow * stride_w));
        for (int ow = hi; ow < out_w; ++ow) COL_STORE(dst, ow, 0.f);
      }
    }
#else
  // Work-item (q block, r): the IM2COL_RUN consecutive columns from q0 of
  // row r, decoded once and stepped (no divisions per element), stored 4 at
  // a time where the run is whole and aligned. One element per work-item
  // left a 16-bit vgg16 step spending half its time here on an H100.
  const int rows = channels * kernel_h * kernel_w;
  const int q0 = get_global_id(0) * IM2COL_RUN, r = get_global_id(1);
  if (q0 >= columns || r >= rows) return;
  const int kernel_area = kernel_h * kernel_w;
  const int c = r / kernel_area, kk = r - c * kernel_area;
  const int ki = kk / kernel_w, kj = kk - ki * kernel_w;
  int n = q0 / out_area;
  const int p = q0 - n * out_area;
  int oh = p / out_w, ow = p - oh * out_w;
  const int h_first = ki * dilation_h - pad_h, w_first = kj * dilation_w - pad_w;
  float v[IM2COL_RUN];
#pragma unroll
  for (int i = 0; i < IM2COL_RUN; ++i) {
    const int h = oh * stride_h + h_first, w = ow * stride_w + w_first;
    const bool inside = q0 + i < columns && h >= 0 && h < height && w >= 0 && w < width;
    v[i] = inside ? DATA_LOAD(x, x_off + ((n * channels + c) * height + h) * width + w) : 0.f;
    if (++ow == out_w) {
      ow = 0;
      if (++oh == out_h) oh = 0, ++n;
    }
  }
  const int at = r * columns + q0;
  if (q0 + IM2COL_RUN <= columns && at % 4 == 0) {
#pragma unroll
    for (int i = 0; i < IM2COL_RUN; i += 4)
      STORAGE_CAT(STORAGE_STORE4_, COL_TYPE)(col, at + i, (float4)(v[i], v[i + 1], v[i + 2], v[i + 3]));
  } else {
    for (int i = 0; i < IM2COL_RUN && q0 + i < columns; ++i) COL_STORE(col, at + i, v[i]);
  }
#endif
}

// Sum of the column elements copied from input pixel (n, c, h, w): each
// kernel tap (ki, kj) that reads it from an output inside the columns.
inline float col2im_gather(__global const float* col, const int columns, const int n,
                           const int c, const int h, const int w, const int kernel_h,
                           const int kernel_w, const int pad_h, const int pad_w,
                           const int stride_h, const int stride_w, const int dilation_h,
                           const int dilation_w, const int out_h, const int out_w) {
  __global const float* col_image = col + n * out_h * out_w;
  float sum = 0.f;
  for (int ki = 0; ki < kernel_h; ++ki) {
    // Output row oh reads input row h through kernel row ki when
    // oh * stride_h = h + pad_h - ki * dilation_h.
    const int h_span = h + pad_h - ki * dilation_h;
    if (h_span < 0) break;  // grows more negative with ki
    if (h_span % stride_h != 0) continue;
    const int oh = h_span / stride_h;
    if (oh >= out_h) continue;
    for (int kj = 0; kj < kernel_w; ++kj) {
      const int w_span = w + pad_w - kj * dilation_w;
      if (w_span < 0) break;
      if (w_span % stride_w != 0) continue;
      const int ow = w_span / stride_w;
      if (ow >= out_w) continue;
      const int r = (c * kernel_h + ki) * kernel_w + kj;
      sum += col_image[r * columns + oh * out_w + ow];
    }
  }
  return sum;
}

// The adjoint of im2col without atomics: every input pixel is written (=) by
// exactly one work-item, which gathers all the column elements copied from it.
// With has_bias, bias[c] is added to each pixel's sum before it is stored
// (Deconvolution's bias: a 16-bit top is rounded once); without, bias is any
// buffer and is not read.
__kernel void col2im(const int images, const int channels, const int height,
                     const int width, const int kernel_h, const int kernel_w,
                     const int pad_h, const int pad_w, const int stride_h,
                     const int stride_w, const int dilation_h, const int dilation_w,
                     const int out_h, const int out_w, __global const float* col,
                     __global DATA_ELEM* dx, const int dx_off, const int has_bias,
                     __global const float* bias) {
  const int area = height * width;
  const int out_area = out_h * out_w;
  const int columns = images * out_area;
#if PLANES
  const int n = get_global_id(0), c = get_global_id(1);
  if (n >= images || c >= channels) return;
  __global DATA_ELEM* plane = dx + dx_off + (n * channels + c) * area;
#if DATA_TYPE == 0
  // The work-item owns plane (n, c) and adds each kernel tap's column rows
  // into it, run by run.
  for (int i = 0; i < area; ++i) plane[i] = 0.f;
  for (int ki = 0; ki < kernel_h; ++ki)
    for (int kj = 0; kj < kernel_w; ++kj) {
      const int r = (c * kernel_h + ki) * kernel_w + kj;
      __global const float* src = col + r * columns + n * out_area;
      const int w_first = kj * dilation_w - pad_w;
      int lo, hi;
      valid_outputs(w_first, stride_w, width, out_w, &lo, &hi);
      for (int oh = 0; oh < out_h; ++oh, src += out_w) {
        const int h = oh * stride_h - pad_h + ki * dilation_h;
        if (h < 0 || h >= height) continue;
        const int base = h * width + w_first;
        if (stride_w == 1)
          for (int ow = lo; ow < hi; ++ow) plane[base + ow] += src[ow];
        else
          for (int ow = lo; ow < hi; ++ow) plane[base + ow * stride_w] += src[ow];
      }
    }
  if (has_bias)
    for (int i = 0; i < area; ++i) plane[i] += bias[c];
#else
  // A 16-bit plane would round at every addition: gather each pixel's sum
  // in float and store it once.
  for (int h = 0; h < height; ++h)
    for (int w = 0; w < width; ++w) {
      const float sum =
          col2im_gather(col, columns, n, c, h, w, kernel_h, kernel_w, pad_h, pad_w, stride_h,
                        stride_w, dilation_h, dilation_w, out_h, out_w);
      DATA_STORE(plane, h * width + w, has_bias ? sum + bias[c] : sum);
    }
#endif
#else
  // The work-item owns pixel (n, c, h, w).
  const int q = get_global_id(0), c = get_global_id(1);
  if (q >= images * area || c >= channels) return;
  const int n = q / area, hw = q - n * area;
  const int h = hw / width, w = hw - h * width;
  const float sum = col2im_gather(col, columns, n, c, h, w, kernel_h, kernel_w, pad_h, pad_w,
                                 stride_h, stride_w, dilation_h, dilation_w, out_h, out_w);
  DATA_STORE(dx, dx_off + (n * channels + c) * area + hw, has_bias ? sum + bias[c] : sum);
#endif
}


// im2col / col2im for any number of spatial axes (Caffe's im2col_nd), one
// element per work-item. `geometry` holds 6 * num_axes ints: the image's
// spatial shape, the columns' spatial shape, kernel, pad, stride, dilation.
// Axes run slowest to fastest, as in the blobs. The column buffer is
// [channels * kernel_area][images * column_area], as above.
#define ND_IMAGE(d) geometry[d]
#define ND_COLUMN(d) geometry[num_axes + (d)]
#define ND_KERNEL(d) geometry[2 * num_axes + (d)]
#define ND_PAD(d) geometry[3 * num_axes + (d)]
#define ND_STRIDE(d) geometry[4 * num_axes + (d)]
#define ND_DILATION(d) geometry[5 * num_axes + (d)]

// Range (images * column_area, channels * kernel_area).
__kernel void im2col_nd(const int images, const int channels, const int num_axes,
                        __global const int* geometry, const int image_area,
                        const int column_area, const int kernel_area,
                        __global const DATA_ELEM* x, const int x_off, __global COL_ELEM* col) {
  const int columns = images * column_area;
  const int q = get_global_id(0), r = get_global_id(1);
  if (q >= columns || r >= channels * kernel_area) return;
  const int n = q / column_area, c = r / kernel_area;
  int p = q - n * column_area, kk = r - c * kernel_area;
  int index = 0, image_stride = 1;
  bool inside = true;
  for (int d = num_axes - 1; d >= 0; --d) {
    const int o = p % ND_COLUMN(d), k = kk % ND_KERNEL(d);
    p /= ND_COLUMN(d);
    kk /= ND_KERNEL(d);
    const int i = o * ND_STRIDE(d) - ND_PAD(d) + k * ND_DILATION(d);
    inside = inside && i >= 0 && i < ND_IMAGE(d);
    index += i * image_stride;
    image_stride *= ND_IMAGE(d);
  }
  COL_STORE(col, r * columns + q,
            inside ? DATA_LOAD(x, x_off + (n * channels + c) * image_area + index) : 0.f);
}

// The adjoint, gathering: the work-item owns image element (n, c, position)
// and sums every column element copied from it, plus bias[c] with has_bias
// (as col2im). Range (images * image_area, channels).
__kernel void col2im_nd(const int images, const int channels, const int num_axes,
                        __global const int* geometry, const int image_area,
                        const int column_area, const int kernel_area,
                        __global const float* col, __global DATA_ELEM* dx, const int dx_off,
                        const int has_bias, __global const float* bias) {
  const int columns = images * column_area;
  const int q = get_global_id(0), c = get_global_id(1);
  if (q >= images * image_area || c >= channels) return;
  const int n = q / image_area, position = q - n * image_area;
  __global const float* col_image = col + n * column_area;
  float sum = 0.f;
  for (int kk = 0; kk < kernel_area; ++kk) {
    // Kernel tap kk reads this element from output o where, on every axis,
    // o * stride = i + pad - k * dilation.
    int rest_k = kk, rest_i = position, o_flat = 0, o_stride = 1;
    bool hit = true;
    for (int d = num_axes - 1; d >= 0 && hit; --d) {
      const int k = rest_k % ND_KERNEL(d), i = rest_i % ND_IMAGE(d);
      rest_k /= ND_KERNEL(d);
      rest_i /= ND_IMAGE(d);
      const int span = i + ND_PAD(d) - k * ND_DILATION(d);
      const int o = span / ND_STRIDE(d);
      hit = span >= 0 && span - o * ND_STRIDE(d) == 0 && o < ND_COLUMN(d);
      o_flat += o * o_stride;
      o_stride *= ND_COLUMN(d);
    }
    if (hit) sum += col_image[(c * kernel_area + kk) * columns + o_flat];
  }
  DATA_STORE(dx, dx_off + (n * channels + c) * image_area + position,
             has_bias ? sum + bias[c] : sum);
}
