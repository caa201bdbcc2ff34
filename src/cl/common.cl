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

// bfloat16 storage (include/dlcaffe/storage_type.hpp): the top 16 bits of a
// float. Narrowing rounds to nearest even on the low 16 bits; a NaN is
// truncated and kept quiet, so that it cannot carry into infinity (the
// host's rule, dlcaffe/half_conversion.hpp).
inline ushort bfloat16_of_bits(const uint x) {
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (ushort)((x >> 16) | 0x0040u);
  return (ushort)((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}
inline ushort16 bfloat16_of_bits16(const uint16 x) {
  const uint16 rounded = (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
  return convert_ushort16(select(rounded, (x >> 16) | 0x0040u, (x & 0x7FFFFFFFu) > 0x7F800000u));
}
inline float float_of_bfloat16(const ushort b) { return as_float((uint)b << 16); }
inline float16 float16_of_bfloat16(const ushort16 b) { return as_float16(convert_uint16(b) << 16); }
inline float4 float4_of_bfloat16(const ushort4 b) { return as_float4(convert_uint4(b) << 16); }
inline ushort4 bfloat16_of_bits4(const uint4 x) {
  const uint4 rounded = (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
  return convert_ushort4(select(rounded, (x >> 16) | 0x0040u, (x & 0x7FFFFFFFu) > 0x7F800000u));
}

// Kernels that read and write blobs of any storage type, chosen at build
// time by a -D option of the type's code (0 float, 1 half, 2 bfloat16): the
// element type of storage type t, the load of element i of p as float, and
// the store of float v there, rounded to nearest even. Each type's own
// macros (STORAGE_LOAD_<code>, ...) are generated from the storage types'
// table (src/core/storage_type.cpp).
#include "storage_types.cl"
#define STORAGE_CAT_(a, b) a##b
#define STORAGE_CAT(a, b) STORAGE_CAT_(a, b)
#define STORAGE_ELEM(t) STORAGE_CAT(STORAGE_ELEM_, t)
#define STORAGE_LOAD(t, p, i) STORAGE_CAT(STORAGE_LOAD_, t)(p, i)
#define STORAGE_STORE(t, p, i, v) STORAGE_CAT(STORAGE_STORE_, t)(p, i, v)

// A hand-written kernel whose blobs share one storage type takes it as
// -DDATA_TYPE (float when not given) and reads and writes through these.
#ifndef DATA_TYPE
#define DATA_TYPE 0
#endif
#define DATA_ELEM STORAGE_ELEM(DATA_TYPE)
#define DATA_LOAD(p, i) STORAGE_LOAD(DATA_TYPE, p, i)
#define DATA_STORE(p, i, v) STORAGE_STORE(DATA_TYPE, p, i, v)
// Four (sixteen) consecutive elements from element i, for the float4 and
// float16 runs of CPU-shaped kernels.
#define DATA_LOAD4(p, i) STORAGE_CAT(STORAGE_LOAD4_, DATA_TYPE)(p, i)
#define DATA_LOAD16(p, i) STORAGE_CAT(STORAGE_LOAD16_, DATA_TYPE)(p, i)
#define DATA_STORE4(p, i, v) STORAGE_CAT(STORAGE_STORE4_, DATA_TYPE)(p, i, v)

// Caffe's LossParameter.NormalizationMode, as loss layers pass it.
#define NORMALIZE_FULL 0
#define NORMALIZE_VALID 1
#define NORMALIZE_BATCH_SIZE 2
#define NORMALIZE_NONE 3

// Caffe's normalizer: what the summed loss is divided by, at least 1.
inline float loss_normalizer(const int normalization, const int count, const int valid,
                             const int outer) {
  float norm = 1.f;
  if (normalization == NORMALIZE_FULL) norm = (float)count;
  else if (normalization == NORMALIZE_VALID) norm = (float)valid;
  else if (normalization == NORMALIZE_BATCH_SIZE) norm = (float)outer;
  return fmax(norm, 1.f);
}

// The end of a loss indexed by labels: the loss, or NaN with the first label
// out of range (position first_bad; INT_MAX for none) recorded for the
// host's lazy check (src/core/late_label_check.hpp).
inline void write_label_loss(const int first_bad, const float value,
                             __global const float* label, __global float* loss,
                             __global int* label_error) {
  if (first_bad == INT_MAX) {
    loss[0] = value;
    return;
  }
  loss[0] = NAN;
  if (label_error[0] < 0) {
    label_error[0] = first_bad;
    label_error[1] = as_int(label[first_bad]);
  }
}
#endif
