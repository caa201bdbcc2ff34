// Prepended to every kernel source by the program cache.
#ifndef DLCAFFE_COMMON_CL
#define DLCAFFE_COMMON_CL
// Index of a work-item in a 1-D launch (Context::Launch1D).
#define GLOBAL_INDEX ((int)get_global_id(0))

// Randomness without device state: a uniform number in [0, 1) (24 random
// bits) from a per-pass seed drawn on the host and an element index, through
// an integer hash. A backward pass re-derives the forward's numbers from the
// same seed.
inline uint hash_uint(uint x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}
inline float uniform_from_hash(const uint seed, const uint index) {
  return (float)(hash_uint(seed ^ hash_uint(index)) >> 8) * (1.0f / 16777216.0f);
}
#endif
