// Conversions between edge storage types (core/storage_convert.hpp), bit for
// bit the host's (dlcaffe/half_conversion.hpp): narrowing rounds to nearest
// even, widening is exact, a NaN stays a NaN.
//
// Half values are touched only through vload_half / vstore_half_rte, which
// are core OpenCL: a `half` pointer may be declared without cl_khr_fp16, but
// no half arithmetic is done (NVIDIA's driver has no cl_khr_fp16). Buffers
// are passed as integers so that no value is ever an operand of float
// arithmetic (no flush of subnormals, no NaN canonicalisation).
//
// NaNs are converted by bit operations instead: the specification leaves
// the payload of a converted NaN to the implementation, and drivers differ
// from the host rule (PoCL 3.1: vstore_half_rte turns every NaN into
// 0x7FFF with its sign, vload_half sets the quiet bit of a signalling NaN;
// every other value of both, all 2^32 floats, matches the host exactly).

// The float bits of half value h.
inline uint float_bits_of_half(const ushort h) {
  if ((h & 0x7FFFu) > 0x7C00u)  // NaN: sign and payload widened
    return ((h & 0x8000u) << 16) | 0x7F800000u | ((h & 0x03FFu) << 13);
  return as_uint(vload_half(0, (const __private half*)&h));
}

// Float bits `x` as a half, rounded to nearest even.
inline ushort half_of_bits(const uint x) {
  if ((x & 0x7FFFFFFFu) > 0x7F800000u)  // NaN: quiet, top payload bits kept
    return (ushort)(((x >> 16) & 0x8000u) | 0x7E00u | ((x >> 13) & 0x03FFu));
  ushort h;
  vstore_half_rte(as_float(x), 0, (__private half*)&h);
  return h;
}

// Float bits as bfloat16: bfloat16_of_bits (common.cl).
inline uint float_bits_of_bfloat16(const ushort b) { return (uint)b << 16; }
// Between the 16-bit types through float32, which holds both exactly: one
// rounding only.
inline ushort bfloat16_of_half(const ushort h) { return bfloat16_of_bits(float_bits_of_half(h)); }
inline ushort half_of_bfloat16(const ushort b) { return half_of_bits(float_bits_of_bfloat16(b)); }

// Each work-item converts a run of CONVERT_RUN consecutive values of the n
// (the last one fewer), fetched and stored as one vector each: one value
// per work-item kept an H200 at a tenth of its memory bandwidth.
// storage_convert.cpp launches ceil(n / CONVERT_RUN) work-items.
#define CONVERT_RUN 4
#define CONVERT_KERNEL(name, SRC, DST, convert_one)                                          \
  __kernel void name(const int n, __global const SRC* src, const int src_off,                \
                     __global DST* dst, const int dst_off) {                                 \
    const int first = GLOBAL_INDEX * CONVERT_RUN;                                            \
    if (first >= n) return;                                                                  \
    src += src_off + first;                                                                  \
    dst += dst_off + first;                                                                  \
    if (n - first >= CONVERT_RUN) {                                                          \
      const SRC##4 x = vload4(0, src);                                                       \
      vstore4((DST##4)(convert_one(x.s0), convert_one(x.s1), convert_one(x.s2),              \
                       convert_one(x.s3)),                                                   \
              0, dst);                                                                       \
    } else {                                                                                 \
      for (int i = 0; i < n - first; ++i) dst[i] = convert_one(src[i]);                      \
    }                                                                                        \
  }

CONVERT_KERNEL(convert_float32_float16, uint, ushort, half_of_bits)
CONVERT_KERNEL(convert_float16_float32, ushort, uint, float_bits_of_half)
CONVERT_KERNEL(convert_float32_bfloat16, uint, ushort, bfloat16_of_bits)
CONVERT_KERNEL(convert_bfloat16_float32, ushort, uint, float_bits_of_bfloat16)
CONVERT_KERNEL(convert_float16_bfloat16, ushort, ushort, bfloat16_of_half)
CONVERT_KERNEL(convert_bfloat16_float16, ushort, ushort, half_of_bfloat16)
