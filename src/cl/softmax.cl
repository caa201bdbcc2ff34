// Softmax over the channel axis of a blob seen as outer x channels x inner.
// One work-item owns one (outer, inner) position and walks its channels, so
// forward and backward are one kernel each and work in place.
// DATA_TYPE (common.cl's storage codes; float by default): how x, y, dy and
// dx are stored. Every output is computed in float and stored once, so a
// 16-bit output is the rounding of the float one.

__kernel void softmax_forward(const int positions, const int channels, const int inner,
                              __global const DATA_ELEM* x, __global DATA_ELEM* y) {
  const int i = GLOBAL_INDEX;
  if (i >= positions) return;
  const int base = (i / inner) * channels * inner + i % inner;
  // Subtracting the maximum keeps exp() in range. The exponentials are
  // computed twice rather than stored between passes: one rounding of each
  // output, and x is still there to read when the layer works in place.
  float maxval = -FLT_MAX;
  for (int c = 0; c < channels; ++c) maxval = fmax(maxval, DATA_LOAD(x, base + c * inner));
  float sum = 0.f;
  for (int c = 0; c < channels; ++c) sum += exp(DATA_LOAD(x, base + c * inner) - maxval);
  for (int c = 0; c < channels; ++c) {
    const int k = base + c * inner;
    DATA_STORE(y, k, exp(DATA_LOAD(x, k) - maxval) / sum);
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
    dot += DATA_LOAD(dy, k) * DATA_LOAD(y, k);
  }
  for (int c = 0; c < channels; ++c) {
    const int k = base + c * inner;
    DATA_STORE(dx, k, (DATA_LOAD(dy, k) - dot) * DATA_LOAD(y, k));
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
  for (int c = lid; c < channels; c += GROUP) maxval = fmax(maxval, DATA_LOAD(x, base + c));
  maxval = GroupMax(scratch, maxval);
  float sum = 0.f;
  for (int c = lid; c < channels; c += GROUP) sum += exp(DATA_LOAD(x, base + c) - maxval);
  sum = GroupSum(scratch, sum);
  for (int c = lid; c < channels; c += GROUP)
    DATA_STORE(y, base + c, exp(DATA_LOAD(x, base + c) - maxval) / sum);
}

__kernel void softmax_backward_rows(const int channels, __global const DATA_ELEM* y,
                                    __global const DATA_ELEM* dy, __global DATA_ELEM* dx) {
  __local float scratch[GROUP];
  const size_t base = (size_t)get_group_id(0) * channels;
  const int lid = get_local_id(0);
  float dot = 0.f;
  for (int c = lid; c < channels; c += GROUP) dot += DATA_LOAD(dy, base + c) * DATA_LOAD(y, base + c);
  dot = GroupSum(scratch, dot);
  for (int c = lid; c < channels; c += GROUP)
    DATA_STORE(dx, base + c, (DATA_LOAD(dy, base + c) - dot) * DATA_LOAD(y, base + c));
}

#endif  // GROUP
