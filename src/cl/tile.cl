// Tile: the top repeats each block of `inner` floats (the bottom's axes from
// `axis` on) `tiles` times: top[o, t, r] = bottom[o, r].

__kernel void tile_forward(const int n, const int inner, const int tiles,
                           __global const float* x, __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const int o = i / (tiles * inner);
  y[i] = x[o * inner + i % inner];
}

// dx[o, r] = sum over t of dy[o, t, r] (a gather over the copies).
__kernel void tile_backward(const int n, const int inner, const int tiles,
                            __global const float* dy, __global float* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const int o = i / inner;
  const int r = i - o * inner;
  __global const float* d = dy + (size_t)o * tiles * inner + r;
  float sum = 0.f;
  for (int t = 0; t < tiles; ++t) sum += d[(size_t)t * inner];
  dx[i] = sum;
}
