// ELU: y = x > 0 ? x : alpha * (exp(x) - 1).

__kernel void elu_forward(const int n, const float alpha, __global const float* x,
                          __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const float v = x[i];
  y[i] = v > 0.f ? v : alpha * expm1(v);
}

// As Caffe: dy/dx = 1 for x > 0, else alpha * exp(x) = alpha + y.
__kernel void elu_backward(const int n, const float alpha, __global const float* x,
                           __global const float* y, __global const float* dy,
                           __global float* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  dx[i] = x[i] > 0.f ? dy[i] : dy[i] * (alpha + y[i]);
}
