// Exact conversions between float32 and the two 16-bit storage types
// (storage_type.hpp), on the host: reading and writing blob values and
// snapshots of 16-bit edges. Written with integer operations on the bit
// patterns, so they depend neither on the compiler's _Float16 nor on the
// floating-point environment (flush-to-zero, rounding mode), and give the
// same bits as the device conversions (core/storage_convert.hpp).
//
// Narrowing rounds to nearest, ties to even; values past the largest finite
// one round to infinity as that rule gives. A NaN stays a NaN of the same
// sign, made quiet, with the top bits of its payload that fit (so it never
// turns into an infinity). Widening is exact, NaN payloads included.
#pragma once
#include <cstdint>

#include "dlcaffe/storage_type.hpp"

namespace dlcaffe {

// IEEE binary16: 1 sign, 5 exponent, 10 mantissa bits (max 65504, smallest
// subnormal 2^-24).
uint16_t FloatToHalf(float value);
float HalfToFloat(uint16_t bits);

// bfloat16: the top 16 bits of a float32 (8 exponent, 7 mantissa bits).
uint16_t FloatToBFloat16(float value);
float BFloat16ToFloat(uint16_t bits);

// n values between float and `type` (float32: a plain copy). `dst` holds
// n * StorageBytes(type) bytes for FloatsToStorage, n floats for
// StorageToFloats.
void FloatsToStorage(const float* src, int n, StorageType type, void* dst);
void StorageToFloats(const void* src, int n, StorageType type, float* dst);

}  // namespace dlcaffe
