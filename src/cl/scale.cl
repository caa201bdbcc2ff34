// Scale (Caffe's Scale layer): y = x * s broadcast over the outer and inner
// dimensions: x is outer x scale_dim x inner, s has scale_dim values.
//
// Two shapes (CPU_SHAPE, channel_sums.hpp's LaunchElementwise): a work-item
// per value (0, GPU), or a work-item per chunk of `chunk` values swept row by
// row in float16 vectors (1, CPU).
#ifndef CPU_SHAPE
#define CPU_SHAPE 0
#endif

// y = x * s (+ b, the bias term's blob, when has_bias), clamped at 0 when
// relu (a fused ReLU); x_copy = x when keep_input (the input backward needs,
// when y aliases x).
__kernel void scale_forward(const int count, const int chunk, const int scale_dim,
                            const int inner, __global const float* x,
                            __global const float* scale, const int has_bias,
                            __global const float* bias, const int relu, const int keep_input,
                            __global float* x_copy, __global float* y) {
#if CPU_SHAPE
  const int begin = (int)get_global_id(0) * chunk, end = min(count, begin + chunk);
  for (int i = begin; i < end;) {  // one row (outer, j) at a time
    const int row = i / inner, row_end = min(end, (row + 1) * inner);
    const int j = row % scale_dim;
    // fma(x, s, 0) rounds as x * s does.
    const float s = scale[j], b = has_bias ? bias[j] : 0.f;
    for (; i + 16 <= row_end; i += 16) {
      const float16 xv = vload16(0, x + i);
      if (keep_input) vstore16(xv, 0, x_copy + i);
      const float16 v = fma(xv, (float16)s, (float16)b);
      vstore16(relu ? fmax(v, 0.f) : v, 0, y + i);
    }
    for (; i < row_end; ++i) {
      const float xi = x[i];
      if (keep_input) x_copy[i] = xi;
      const float v = fma(xi, s, b);
      y[i] = relu ? fmax(v, 0.f) : v;
    }
  }
#else
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  const int j = (i / inner) % scale_dim;
  const float xi = x[i];
  if (keep_input) x_copy[i] = xi;
  const float v = has_bias ? fma(xi, scale[j], bias[j]) : xi * scale[j];
  y[i] = relu ? fmax(v, 0.f) : v;
#endif
}

// dx = dy * s; dx may alias dy.
__kernel void scale_bottom_backward(const int count, const int chunk, const int scale_dim,
                                    const int inner, __global const float* dy,
                                    __global const float* scale, __global float* dx) {
#if CPU_SHAPE
  const int begin = (int)get_global_id(0) * chunk, end = min(count, begin + chunk);
  for (int i = begin; i < end;) {
    const int row = i / inner, row_end = min(end, (row + 1) * inner);
    const float s = scale[row % scale_dim];
    for (; i + 16 <= row_end; i += 16) vstore16(vload16(0, dy + i) * s, 0, dx + i);
    for (; i < row_end; ++i) dx[i] = dy[i] * s;
  }
#else
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  dx[i] = dy[i] * scale[(i / inner) % scale_dim];
#endif
}
