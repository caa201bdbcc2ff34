// Clip: y = min(max(x, min_value), max_value).

__kernel void clip_forward(const int n, const float min_value, const float max_value,
                           __global const float* x, __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  y[i] = fmin(fmax(x[i], min_value), max_value);
}

// As Caffe: the gradient passes where min <= x <= max (bounds included).
__kernel void clip_backward(const int n, const float min_value, const float max_value,
                            __global const float* x, __global const float* dy,
                            __global float* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const float v = x[i];
  dx[i] = (v >= min_value && v <= max_value) ? dy[i] : 0.f;
}
