// Dropout. In training each element is kept with probability 1 - ratio and
// multiplied by `scale`; the keep/drop decision is a hash of (seed, index), so
// Backward re-derives the very mask Forward used from the same seed and no
// mask has to be stored. With ratio 0 every element is kept: that is the
// plain y = scale * x of the test phase. DATA_TYPE (common.cl's storage
// types; float by default) is how x, y, dy and dx are stored.

// Kept where the element's uniform number (common.cl) is >= ratio.
inline bool dropout_keeps(const uint seed, const uint index, const float ratio) {
  return uniform_from_hash(seed, index) >= ratio;
}

__kernel void dropout_forward(const int n, const int seed, const float ratio, const float scale,
                              __global const DATA_ELEM* x, __global DATA_ELEM* y) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  DATA_STORE(y, i,
                dropout_keeps((uint)seed, (uint)i, ratio) ? DATA_LOAD(x, i) * scale
                                                          : 0.f);
}

__kernel void dropout_backward(const int n, const int seed, const float ratio,
                               const float scale, __global const DATA_ELEM* dy,
                               __global DATA_ELEM* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  DATA_STORE(dx, i,
                dropout_keeps((uint)seed, (uint)i, ratio) ? DATA_LOAD(dy, i) * scale
                                                          : 0.f);
}
