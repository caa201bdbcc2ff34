// TanH: y = tanh(x).

__kernel void tanh_forward(const int n, __global const float* x, __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  y[i] = tanh(x[i]);
}

// dy/dx = 1 - y^2: only y is needed, so in-place use works.
__kernel void tanh_backward(const int n, __global const float* y, __global const float* dy,
                            __global float* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const float t = y[i];
  dx[i] = dy[i] * (1.f - t * t);
}
