// ReLU with Caffe's negative_slope: y = x > 0 ? x : slope * x.

__kernel void relu_forward(const int n, const float slope,
                           __global const float* x, __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const float v = x[i];
  y[i] = v > 0.f ? v : slope * v;
}

// Gradient at exactly 0 is taken as slope, as in Caffe.
__kernel void relu_backward(const int n, const float slope,
                            __global const float* x, __global const float* dy,
                            __global float* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  dx[i] = x[i] > 0.f ? dy[i] : slope * dy[i];
}
