// SSD's Normalize (src/layers/normalize.cpp): x over its L2 norm, times a
// scale. A norm's group g is the sample n (across_spatial) or the position
// n * inner + s (across the channels); r_g = sqrt(sum over the group of x^2
// + eps).

// sums[n * inner + s] = sum over c of a[n, c, s] * b[n, c, s] (* the channel's
// scale with `scaled`).
__kernel void normalize_channel_dot(int locations, int C, int inner, __global const float* a,
                                    __global const float* b, __global const float* scale,
                                    int scaled, int shared, __global float* sums) {
  const int j = get_global_id(0);
  if (j >= locations) return;
  const int n = j / inner, s = j % inner;
  const size_t base = (size_t)n * C * inner + s;
  float sum = 0.f;
  for (int c = 0; c < C; ++c) {
    const size_t i = base + (size_t)c * inner;
    sum += a[i] * b[i] * (scaled ? scale[shared ? 0 : c] : 1.f);
  }
  sums[j] = sum;
}

inline int normalize_group(int i, int C, int inner, int across) {
  const int n = i / (C * inner);
  return across ? n : n * inner + i % inner;
}

// xhat = x / r, y = xhat * scale.
__kernel void normalize_forward(int count, int C, int inner, int across, float eps,
                                __global const float* x, __global const float* sumsq,
                                __global const float* scale, int shared, __global float* xhat,
                                __global float* y) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const float r = sqrt(sumsq[normalize_group(i, C, inner, across)] + eps);
  const float value = x[i] / r;
  xhat[i] = value;
  y[i] = value * scale[shared ? 0 : (i / inner) % C];
}

// out = dy * scale: what the per-sample dot of the backward sums against x.
__kernel void normalize_scale_diff(int count, int C, int inner, __global const float* dy,
                                   __global const float* scale, int shared, __global float* out) {
  const int i = get_global_id(0);
  if (i >= count) return;
  out[i] = dy[i] * scale[shared ? 0 : (i / inner) % C];
}

// dx = (scale * dy - x * dot / r^2) / r, dot = the group's sum of scale * dy * x.
__kernel void normalize_backward(int count, int C, int inner, int across, float eps,
                                 __global const float* x, __global const float* dy,
                                 __global const float* sumsq, __global const float* dot,
                                 __global const float* scale, int shared, __global float* dx) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int g = normalize_group(i, C, inner, across);
  const float r2 = sumsq[g] + eps, r = sqrt(r2);
  dx[i] = (dy[i] * scale[shared ? 0 : (i / inner) % C] - x[i] * dot[g] / r2) / r;
}
