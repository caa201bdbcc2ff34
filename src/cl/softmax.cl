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

// Rows of many channels (inner 1: a classifier's or a language model's
// logits, e.g. 8192 rows of 50257): a work-group of GROUP (a power of two)
// per row, its work-items striding over the channels so that neighbours read
// neighbouring floats, the maximum and the sums reduced in local memory.
// Works in place. Built with -DGROUP only.
#ifdef GROUP

inline float GroupMax(__local float* scratch, float v) {
  const int lid = get_local_id(0);
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int step = GROUP / 2; step > 0; step /= 2) {
    if (lid < step) scratch[lid] = fmax(scratch[lid], scratch[lid + step]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float result = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE);  // scratch is reused next
  return result;
}

inline float GroupSum(__local float* scratch, float v) {
  const int lid = get_local_id(0);
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int step = GROUP / 2; step > 0; step /= 2) {
    if (lid < step) scratch[lid] += scratch[lid + step];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float result = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return result;
}

__kernel void softmax_forward_rows(const int channels, __global const float* x,
                                   __global float* y) {
  __local float scratch[GROUP];
  const size_t base = (size_t)get_group_id(0) * channels;
  const int lid = get_local_id(0);
  float maxval = -FLT_MAX;
  for (int c = lid; c < channels; c += GROUP) maxval = fmax(maxval, x[base + c]);
  maxval = GroupMax(scratch, maxval);
  float sum = 0.f;
  for (int c = lid; c < channels; c += GROUP) sum += exp(x[base + c] - maxval);
  sum = GroupSum(scratch, sum);
  for (int c = lid; c < channels; c += GROUP) y[base + c] = exp(x[base + c] - maxval) / sum;
}

__kernel void softmax_backward_rows(const int channels, __global const float* y,
                                    __global const float* dy, __global float* dx) {
  __local float scratch[GROUP];
  const size_t base = (size_t)get_group_id(0) * channels;
  const int lid = get_local_id(0);
  float dot = 0.f;
  for (int c = lid; c < channels; c += GROUP) dot += dy[base + c] * y[base + c];
  dot = GroupSum(scratch, dot);
  for (int c = lid; c < channels; c += GROUP) dx[base + c] = (dy[base + c] - dot) * y[base + c];
}

#endif  // GROUP
