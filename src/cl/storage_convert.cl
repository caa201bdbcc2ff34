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

// The float bits of half `i` of `src`.
inline uint load_half_bits(__global const ushort* src, const int i) {
  const uint h = src[i];
  if ((h & 0x7FFFu) > 0x7C00u)  // NaN: sign and payload widened
    return ((h & 0x8000u) << 16) | 0x7F800000u | ((h & 0x03FFu) << 13);
  return as_uint(vload_half(i, (__global const half*)src));
}

// Stores float bits `x` as half `i` of `dst`, rounded to nearest even.
inline void store_half_bits(const uint x, __global ushort* dst, const int i) {
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) {  // NaN: quiet, top payload bits kept
    dst[i] = (ushort)(((x >> 16) & 0x8000u) | 0x7E00u | ((x >> 13) & 0x03FFu));
    return;
  }
  vstore_half_rte(as_float(x), i, (__global half*)dst);
}

// Float bits as bfloat16: bfloat16_of_bits (common.cl).

__kernel void convert_float32_float16(const int n, __global const uint* src, const int src_off,
                                      __global ushort* dst, const int dst_off) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  store_half_bits(src[src_off + i], dst, dst_off + i);
}

__kernel void convert_float16_float32(const int n, __global const ushort* src, const int src_off,
                                      __global uint* dst, const int dst_off) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  dst[dst_off + i] = load_half_bits(src, src_off + i);
}

__kernel void convert_float32_bfloat16(const int n, __global const uint* src, const int src_off,
                                       __global ushort* dst, const int dst_off) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  dst[dst_off + i] = bfloat16_of_bits(src[src_off + i]);
}

__kernel void convert_bfloat16_float32(const int n, __global const ushort* src, const int src_off,
                                       __global uint* dst, const int dst_off) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  dst[dst_off + i] = (uint)src[src_off + i] << 16;
}

// Between the 16-bit types through float32, which holds both exactly: one
// rounding only.
__kernel void convert_float16_bfloat16(const int n, __global const ushort* src, const int src_off,
                                       __global ushort* dst, const int dst_off) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  dst[dst_off + i] = bfloat16_of_bits(load_half_bits(src, src_off + i));
}

__kernel void convert_bfloat16_float16(const int n, __global const ushort* src, const int src_off,
                                       __global ushort* dst, const int dst_off) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  store_half_bits((uint)src[src_off + i] << 16, dst, dst_off + i);
}
