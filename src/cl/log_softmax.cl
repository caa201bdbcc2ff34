// LogSoftmax (the "LogSoftmax" layer) over the channel axis of a blob seen
// as outer x channels x inner. One work-item owns one (outer, inner) position
// and walks its channels (as softmax.cl), so forward and backward are one
// kernel each and work in place: every element is read before it is written,
// by the work-item that writes it.

// y = x - max - log(sum_c exp(x - max)): the maximum keeps exp() in range.
__kernel void log_softmax_forward(const int positions, const int channels, const int inner,
                                  __global const float* x, __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= positions) return;
  const size_t base = (size_t)(i / inner) * channels * inner + i % inner;
  float maxval = -INFINITY;
  for (int c = 0; c < channels; ++c) maxval = fmax(maxval, x[base + (size_t)c * inner]);
  float sum = 0.f;
  for (int c = 0; c < channels; ++c) sum += exp(x[base + (size_t)c * inner] - maxval);
  const float shift = maxval + log(sum);
  for (int c = 0; c < channels; ++c) {
    const size_t k = base + (size_t)c * inner;
    y[k] = x[k] - shift;
  }
}

// dx = dy - exp(y) * sum_c dy
__kernel void log_softmax_backward(const int positions, const int channels, const int inner,
                                   __global const float* y, __global const float* dy,
                                   __global float* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= positions) return;
  const size_t base = (size_t)(i / inner) * channels * inner + i % inner;
  float sum = 0.f;
  for (int c = 0; c < channels; ++c) sum += dy[base + (size_t)c * inner];
  for (int c = 0; c < channels; ++c) {
    const size_t k = base + (size_t)c * inner;
    dx[k] = dy[k] - exp(y[k]) * sum;
  }
}
