// Bias (Caffe's Bias layer): y = x + b broadcast over the outer and inner
// dimensions: x is outer x bias_dim x inner, b has bias_dim values.

__kernel void bias_forward(const int count, const int bias_dim, const int inner,
                           __global const float* x, __global const float* bias,
                           __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  y[i] = x[i] + bias[(i / inner) % bias_dim];
}
