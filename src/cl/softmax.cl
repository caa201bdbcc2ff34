// Softmax over the channel axis of a blob seen as outer x channels x inner.
// One work-item owns one (outer, inner) position and walks its channels, so
// forward and backward are one kernel each and work in place.
// DATA_TYPE (common.cl's storage codes; float by default): how x, y, dy and
// dx are stored. Every output is computed in float and stored once, so a
// 16-bit output is the rounding of the float one.

#ifndef DATA_TYPE
#define DATA_TYPE 0
#endif
#define DATA_ELEM STORAGE_ELEM(DATA_TYPE)
#define LOAD(p, i) STORAGE_LOAD(DATA_TYPE, p, i)
#define STORE(p, i, v) STORAGE_STORE(DATA_TYPE, p, i, v)

__kernel void softmax_forward(const int positions, const int channels, const int inner,
                              __global const DATA_ELEM* x, __global DATA_ELEM* y) {
  const int i = GLOBAL_INDEX;
  if (i >= positions) return;
  const int base = (i / inner) * channels * inner + i % inner;
  // Subtracting the maximum keeps exp() in range. The exponentials are
  // computed twice rather than stored between passes: one rounding of each
  // output, and x is still there to read when the layer works in place.
  float maxval = -FLT_MAX;
  for (int c = 0; c < channels; ++c) maxval = fmax(maxval, LOAD(x, base + c * inner));
  float sum = 0.f;
  for (int c = 0; c < channels; ++c) sum += exp(LOAD(x, base + c * inner) - maxval);
  for (int c = 0; c < channels; ++c) {
    const int k = base + c * inner;
    STORE(y, k, exp(LOAD(x, k) - maxval) / sum);
  }
}

// dx = y * (dy - sum_c dy * y)
__kernel void softmax_backward(const int positions, const int channels, const int inner,
                               __global const DATA_ELEM* y, __global const DATA_ELEM* dy,
                               __global DATA_ELEM* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= positions) return;
  const int base = (i / inner) * channels * inner + i % inner;
  float dot = 0.f;
  for (int c = 0; c < channels; ++c) {
    const int k = base + c * inner;
    dot += LOAD(dy, k) * LOAD(y, k);
  }
  for (int c = 0; c < channels; ++c) {
    const int k = base + c * inner;
    STORE(dx, k, (LOAD(dy, k) - dot) * LOAD(y, k));
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

__kernel void softmax_forward_rows(const int channels, __global const DATA_ELEM* x,
                                   __global DATA_ELEM* y) {
  __local float scratch[GROUP];
  const size_t base = (size_t)get_group_id(0) * channels;
  const int lid = get_local_id(0);
  float maxval = -FLT_MAX;
  for (int c = lid; c < channels; c += GROUP) maxval = fmax(maxval, LOAD(x, base + c));
  maxval = GroupMax(scratch, maxval);
  float sum = 0.f;
  for (int c = lid; c < channels; c += GROUP) sum += exp(LOAD(x, base + c) - maxval);
  sum = GroupSum(scratch, sum);
  for (int c = lid; c < channels; c += GROUP)
    STORE(y, base + c, exp(LOAD(x, base + c) - maxval) / sum);
}

__kernel void softmax_backward_rows(const int channels, __global const DATA_ELEM* y,
                                    __global const DATA_ELEM* dy, __global DATA_ELEM* dx) {
  __local float scratch[GROUP];
  const size_t base = (size_t)get_group_id(0) * channels;
  const int lid = get_local_id(0);
  float dot = 0.f;
  for (int c = lid; c < channels; c += GROUP) dot += LOAD(dy, base + c) * LOAD(y, base + c);
  dot = GroupSum(scratch, dot);
  for (int c = lid; c < channels; c += GROUP)
    STORE(dx, base + c, (LOAD(dy, base + c) - dot) * LOAD(y, base + c));
}

#endif  // GROUP
