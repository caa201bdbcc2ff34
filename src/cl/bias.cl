// Bias (Caffe's Bias layer): y = x + b broadcast over the outer and inner
// dimensions: x is outer x bias_dim x inner, b has bias_dim values.
//
// Two shapes (CPU_SHAPE, channel_sums.hpp's LaunchElementwise): a work-item
// per value (0, GPU), or a work-item per chunk of `chunk` values swept row by
// row in float16 vectors (1, CPU).
#ifndef CPU_SHAPE
#define CPU_SHAPE 0
#endif

__kernel void bias_forward(const int count, const int chunk, const int bias_dim,
                           const int inner, __global const float* x,
                           __global const float* bias, __global float* y) {
#if CPU_SHAPE
  const int begin = (int)get_global_id(0) * chunk, end = min(count, begin + chunk);
  for (int i = begin; i < end;) {  // one row (outer, j) at a time
    const int row = i / inner, row_end = min(end, (row + 1) * inner);
    const float b = bias[row % bias_dim];
    for (; i + 16 <= row_end; i += 16) vstore16(vload16(0, x + i) + b, 0, y + i);
    for (; i < row_end; ++i) y[i] = x[i] + b;
  }
#else
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  y[i] = x[i] + bias[(i / inner) % bias_dim];
#endif
}
