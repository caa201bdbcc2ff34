// Softmax over the channel axis of a blob seen as outer x channels x inner.
// One work-item owns one (outer, inner) position and walks its channels, so
// forward and backward are one kernel each and work in place.

__kernel void softmax_forward(const int positions, const int channels, const int inner,
                              __global const float* x, __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= positions) return;
  const int base = (i / inner) * channels * inner + i % inner;
  // Subtracting the maximum keeps exp() in range.
  float maxval = -FLT_MAX;
  for (int c = 0; c < channels; ++c) maxval = fmax(maxval, x[base + c * inner]);
  float sum = 0.f;
  for (int c = 0; c < channels; ++c) {
    const float e = exp(x[base + c * inner] - maxval);
    y[base + c * inner] = e;
    sum += e;
  }
  for (int c = 0; c < channels; ++c) y[base + c * inner] /= sum;
}

// dx = y * (dy - sum_c dy * y)
__kernel void softmax_backward(const int positions, const int channels, const int inner,
                               __global const float* y, __global const float* dy,
                               __global float* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= positions) return;
  const int base = (i / inner) * channels * inner + i % inner;
  float dot = 0.f;
  for (int c = 0; c < channels; ++c) dot += dy[base + c * inner] * y[base + c * inner];
  for (int c = 0; c < channels; ++c) {
    const int k = base + c * inner;
    dx[k] = (dy[k] - dot) * y[k];
  }
}
