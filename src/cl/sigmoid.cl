// Sigmoid: y = 1 / (1 + exp(-x)), computed as 0.5 * tanh(0.5 * x) + 0.5 (as
// Caffe's CPU path), which neither overflows nor loses precision for large |x|.

__kernel void sigmoid_forward(const int n, __global const float* x, __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  y[i] = 0.5f * tanh(0.5f * x[i]) + 0.5f;
}

// dy/dx = y * (1 - y): only y is needed, so in-place use works.
__kernel void sigmoid_backward(const int n, __global const float* y,
                               __global const float* dy, __global float* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const float s = y[i];
  dx[i] = dy[i] * s * (1.f - s);
}
