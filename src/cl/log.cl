// Log: y = log_base(shift + scale * x) = ln(shift + scale * x) * base_scale,
// with base_scale = 1 / ln(base) (set by the layer).

__kernel void log_forward(const int n, const float scale, const float shift,
                          const float base_scale, __global const float* x,
                          __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  y[i] = log(shift + scale * x[i]) * base_scale;
}

// dy/dx = scale * base_scale / (shift + scale * x).
__kernel void log_backward(const int n, const float scale, const float shift,
                           const float base_scale, __global const float* x,
                           __global const float* dy, __global float* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  dx[i] = dy[i] * (scale * base_scale) / (shift + scale * x[i]);
}
