#include "dlcaffe/half_conversion.hpp"

#include <glog/logging.h>

#include <cstring>

namespace dlcaffe {

namespace {

uint32_t FloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float BitsFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// Drops the low `shift` bits of `m`, rounding to nearest, ties to even. A
// carry out of the mantissa moves into the exponent field of the caller's
// pattern, which is the right next value (a binade up, or infinity).
uint32_t ShiftRoundEven(uint32_t m, int shift) {
  const uint32_t kept = m >> shift;
  const uint32_t rest = m & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  return kept + (rest > half || (rest == half && (kept & 1)) ? 1 : 0);
}

}  // namespace

uint16_t FloatToHalf(float value) {
  const uint32_t x = FloatBits(value);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t a = x & 0x7FFFFFFF;
  if (a > 0x7F800000)  // NaN: quiet bit set, top 9 payload bits kept
    return sign | 0x7E00 | static_cast<uint16_t>((a >> 13) & 0x03FF);
  // 65520 = 65504 + half an ulp is a tie, and 65504's mantissa is odd: from
  // there on (infinity included) the result is infinity.
  if (a >= 0x477FF000) return sign | 0x7C00;
  if (a >= 0x38800000)  // 2^-14 and up: a normal half; rebias 127 -> 15
    return sign | static_cast<uint16_t>(ShiftRoundEven(a - (112u << 23), 13));
  // Below 2^-14 the half is m * 2^-24. Up to 2^-25 (a tie with 0, even) it
  // is 0; float subnormals are far below.
  if (a <= 0x33000000) return sign;
  const int exponent = static_cast<int>(a >> 23);                // 102..112
  const uint32_t mantissa = (a & 0x007FFFFF) | 0x00800000;       // value = mantissa * 2^(e-150)
  // m = mantissa * 2^(e - 126), rounded; m = 1024 is 2^-14, the smallest
  // normal, whose pattern it is.
  return sign | static_cast<uint16_t>(ShiftRoundEven(mantissa, 126 - exponent));
}

float HalfToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1F;
  uint32_t mantissa = bits & 0x03FF;
  if (exponent == 0x1F) return BitsFloat(sign | 0x7F800000 | (mantissa << 13));
  if (exponent != 0) return BitsFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
  if (mantissa == 0) return BitsFloat(sign);
  // Subnormal m * 2^-24: normalise so that the leading 1 is the implicit bit.
  int e = 113;  // the float exponent field of 2^-14
  while (!(mantissa & 0x0400)) {
    mantissa <<= 1;
    --e;
  }
  return BitsFloat(sign | (static_cast<uint32_t>(e) << 23) | ((mantissa & 0x03FF) << 13));
}

uint16_t FloatToBFloat16(float value) {
  const uint32_t x = FloatBits(value);
  // A NaN is kept quiet and truncated; rounding could carry it into infinity
  // (0x7FFFFFFF) or drop a payload that lives only in the low bits.
  if ((x & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((x >> 16) | 0x0040);
  // Round to nearest even on the low 16 bits; the carry past the largest
  // finite value gives infinity, and subnormals round like normals (same
  // exponent range as float32).
  return static_cast<uint16_t>((x + 0x7FFF + ((x >> 16) & 1)) >> 16);
}

float BFloat16ToFloat(uint16_t bits) { return BitsFloat(static_cast<uint32_t>(bits) << 16); }

void FloatsToStorage(const float* src, int n, StorageType type, void* dst) {
  CHECK_GE(n, 0);
  uint16_t* out = static_cast<uint16_t*>(dst);
  switch (type) {
    case StorageType::kFloat32:
      if (n > 0) std::memcpy(dst, src, n * sizeof(float));
      return;
    case StorageType::kFloat16:
      for (int i = 0; i < n; ++i) out[i] = FloatToHalf(src[i]);
      return;
    case StorageType::kBFloat16:
      for (int i = 0; i < n; ++i) out[i] = FloatToBFloat16(src[i]);
      return;
  }
  LOG(FATAL) << "unknown storage type";
}

void StorageToFloats(const void* src, int n, StorageType type, float* dst) {
  CHECK_GE(n, 0);
  const uint16_t* in = static_cast<const uint16_t*>(src);
  switch (type) {
    case StorageType::kFloat32:
      if (n > 0) std::memcpy(dst, src, n * sizeof(float));
      return;
    case StorageType::kFloat16:
      for (int i = 0; i < n; ++i) dst[i] = HalfToFloat(in[i]);
      return;
    case StorageType::kBFloat16:
      for (int i = 0; i < n; ++i) dst[i] = BFloat16ToFloat(in[i]);
      return;
  }
  LOG(FATAL) << "unknown storage type";
}

}  // namespace dlcaffe
