// The host conversions between float32 and the 16-bit storage types
// (include/dlcaffe/half_conversion.hpp) against references written here from
// the formats' definitions: every 16-bit pattern widened, and narrowing of
// the edge cases (ties, overflow, subnormals, signed zeros, infinities, NaNs)
// and of a million pseudo-random float patterns, rounded by picking the
// nearer of the two neighbouring 16-bit values in exact double arithmetic.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "dlcaffe/half_conversion.hpp"

namespace dlcaffe {
namespace test {
namespace {

uint32_t Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float FromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// A 16-bit format with `mantissa_bits` fraction bits and the exponent field
// above them (sign at bit 15): half is (10, bias 15), bfloat16 (7, bias 127).
struct Format {
  int mantissa_bits;
  int bias;
  uint16_t infinity() const { return static_cast<uint16_t>(0x7FFF & ~((1 << mantissa_bits) - 1)); }
};
const Format kHalf = {10, 15};
const Format kBFloat16 = {7, 127};

// The value of a non-negative finite pattern by the IEEE formula:
// (-1)^s * 2^(e - bias) * 1.m, or 2^(1 - bias) * 0.m for e = 0. The infinity
// pattern gives 2^(emax + 1), the next value a rounding with unbounded
// exponent would reach: rounding towards it means overflow.
double Magnitude(const Format& f, uint16_t pattern) {
  const int e = pattern >> f.mantissa_bits;
  const int m = pattern & ((1 << f.mantissa_bits) - 1);
  if (e == 0) return std::ldexp(static_cast<double>(m), 1 - f.bias - f.mantissa_bits);
  return std::ldexp(static_cast<double>((1 << f.mantissa_bits) + m), e - f.bias - f.mantissa_bits);
}

// The widened value of any pattern; NaN patterns give a NaN.
double Widened(const Format& f, uint16_t pattern) {
  const double sign = (pattern & 0x8000) ? -1.0 : 1.0;
  const uint16_t magnitude = pattern & 0x7FFF;
  if (magnitude > f.infinity()) return std::nan("");
  if (magnitude == f.infinity()) return sign * INFINITY;
  return sign * Magnitude(f, magnitude);
}

// Rounds a non-NaN float to the format: the magnitudes 0 .. infinity are
// increasing, so the neighbours of |x| are found by binary search and the
// nearer taken; at an exact midpoint the even pattern. Exact: every double
// compared (the values and their midpoints) is exactly representable.
class Rounder {
 public:
  explicit Rounder(const Format& f) : format_(f) {
    for (int p = 0; p <= f.infinity(); ++p) magnitudes_.push_back(Magnitude(f, p));
  }
  uint16_t Round(float x) const {
    const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    const double a = std::fabs(static_cast<double>(x));
    if (std::isinf(a)) return sign | format_.infinity();
    // lo: the last magnitude <= a; a is below 2^(emax+1) for both formats'
    // inputs unless it rounds there, so lo < infinity.
    const int lo = static_cast<int>(
        std::upper_bound(magnitudes_.begin(), magnitudes_.end(), a) - magnitudes_.begin() - 1);
    if (lo >= format_.infinity()) return sign | format_.infinity();
    const double mid = (magnitudes_[lo] + magnitudes_[lo + 1]) / 2;
    int pick = lo;
    if (a > mid || (a == mid && (lo & 1))) pick = lo + 1;
    return sign | static_cast<uint16_t>(pick);
  }

 private:
  Format format_;
  std::vector<double> magnitudes_;
};

bool IsNan16(const Format& f, uint16_t pattern) { return (pattern & 0x7FFF) > f.infinity(); }

// The narrowed NaN: a NaN of the same sign, quiet (top fraction bit set),
// keeping the top fraction bits of the float's payload below the quiet bit.
void ExpectNarrowedNan(const Format& f, float x, uint16_t got) {
  const uint32_t xb = Bits(x);
  SCOPED_TRACE(testing::Message() << std::hex << "float 0x" << xb << " -> 0x" << got);
  EXPECT_TRUE(IsNan16(f, got));
  EXPECT_EQ(got & 0x8000, (xb >> 16) & 0x8000);
  const uint16_t quiet = static_cast<uint16_t>(1 << (f.mantissa_bits - 1));
  EXPECT_TRUE(got & quiet);
  const uint16_t payload_mask = quiet - 1;
  EXPECT_EQ(got & payload_mask, (xb >> (23 - f.mantissa_bits)) & payload_mask);
}

// Pseudo-random float patterns: half of them any bits, half with the
// exponent in [lo_exp, hi_exp] (where the format's finite values and its
// rounding edges are), any sign and fraction.
std::vector<float> RandomFloats(int n, uint32_t seed, int lo_exp, int hi_exp) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> exponent(lo_exp, hi_exp);
  std::vector<float> values(n);
  for (int i = 0; i < n; ++i) {
    uint32_t bits = rng();
    if (i % 2) bits = (bits & 0x807FFFFF) | (static_cast<uint32_t>(exponent(rng)) << 23);
    values[i] = FromBits(bits);
  }
  return values;
}

float NextUp(float x) { return std::nextafter(x, INFINITY); }
float NextDown(float x) { return std::nextafter(x, -INFINITY); }

// ---- half ----

TEST(HalfConversion, WidensEveryPatternExactly) {
  for (int p = 0; p < 65536; ++p) {
    const uint16_t h = static_cast<uint16_t>(p);
    const float got = HalfToFloat(h);
    const double want = Widened(kHalf, h);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << p;
      ASSERT_EQ(std::signbit(got), (p & 0x8000) != 0) << std::hex << p;
      // The payload moves to the top of the float's fraction, quiet bit
      // included: widening is exact.
      ASSERT_EQ(Bits(got), (static_cast<uint32_t>(p & 0x8000) << 16) | 0x7F800000 |
                               (static_cast<uint32_t>(p & 0x3FF) << 13))
          << std::hex << p;
    } else {
      // Bits, not values: -0 must stay -0.
      ASSERT_EQ(Bits(got), Bits(static_cast<float>(want))) << std::hex << p << " " << want;
      ASSERT_EQ(static_cast<double>(got), want) << std::hex << p;
    }
  }
}

TEST(HalfConversion, RoundTripsEveryNonNanPattern) {
  int checked = 0;
  for (int p = 0; p < 65536; ++p) {
    const uint16_t h = static_cast<uint16_t>(p);
    if (IsNan16(kHalf, h)) continue;
    ASSERT_EQ(FloatToHalf(HalfToFloat(h)), h) << std::hex << p;
    ++checked;
  }
  EXPECT_EQ(checked, 65536 - 2 * 1023);
}

TEST(HalfConversion, NarrowsEdgeCases) {
  const float two_m24 = std::ldexp(1.f, -24), two_m25 = std::ldexp(1.f, -25);
  const float two_m14 = std::ldexp(1.f, -14);
  const struct {
    float x;
    uint16_t want;
  } cases[] = {
      {1.f, 0x3C00},
      {1.f + std::ldexp(1.f, -11), 0x3C00},        // tie, 1 is even
      {NextUp(1.f + std::ldexp(1.f, -11)), 0x3C01},  // just above the tie
      {1.f + 3 * std::ldexp(1.f, -11), 0x3C02},    // tie, 1 + 2^-9 is even
      {1.f + std::ldexp(1.f, -10), 0x3C01},        // exact
      {2049.f, 0x6800},                            // tie at 2048 (ulp 2) -> 2048
      {2051.f, 0x6802},                            // tie -> 2052
      {65504.f, 0x7BFF},                           // largest finite
      {NextDown(65520.f), 0x7BFF},                 // 65519.996
      {65520.f, 0x7C00},                           // tie, 65504 is odd: infinity
      {65536.f, 0x7C00},
      {1e10f, 0x7C00},
      {std::numeric_limits<float>::max(), 0x7C00},
      {-65520.f, 0xFC00},
      {-65504.f, 0xFBFF},
      {two_m24, 0x0001},                  // smallest subnormal
      {two_m25, 0x0000},                  // tie with 0, 0 is even
      {-two_m25, 0x8000},                 // ... keeping the sign
      {NextUp(two_m25), 0x0001},          // just above the tie
      {NextDown(two_m25), 0x0000},
      {3 * std::ldexp(1.f, -26), 0x0001},  // 0.75 * 2^-24
      {3 * two_m25, 0x0002},               // tie between 1 and 2 (x 2^-24): 2
      {5 * two_m25, 0x0002},               // tie between 2 and 3: 2
      {1023 * two_m24, 0x03FF},            // largest subnormal
      {1023.5f * two_m24, 0x0400},         // tie, 1023 odd: smallest normal
      {NextDown(1023.5f * two_m24), 0x03FF},
      {two_m14, 0x0400},                   // smallest normal
      {NextDown(two_m14), 0x0400},         // just below rounds up
      {std::numeric_limits<float>::denorm_min(), 0x0000},
      {-std::numeric_limits<float>::denorm_min(), 0x8000},
      {std::numeric_limits<float>::min(), 0x0000},
      {0.f, 0x0000},
      {-0.f, 0x8000},
      {INFINITY, 0x7C00},
      {-INFINITY, 0xFC00},
      {0.1f, 0x2E66},
      {-2.5f, 0xC100},
  };
  const Rounder reference(kHalf);
  for (const auto& c : cases) {
    EXPECT_EQ(FloatToHalf(c.x), c.want) << std::hexfloat << c.x;
    EXPECT_EQ(reference.Round(c.x), c.want) << "reference, " << std::hexfloat << c.x;
  }
}

TEST(HalfConversion, NarrowsNansToQuietNans) {
  for (uint32_t bits : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu,
                        0xFFFFFFFFu, 0x7FA00000u, 0x7F802000u, 0x7FBFE000u, 0x7FC01234u}) {
    const float x = FromBits(bits);
    ASSERT_TRUE(std::isnan(x));
    ExpectNarrowedNan(kHalf, x, FloatToHalf(x));
  }
}

TEST(HalfConversion, NarrowsRandomFloatsLikeTheReference) {
  const Rounder reference(kHalf);
  // Exponent fields 95..145: 2^-32 .. 2^18, past both ends of half.
  const std::vector<float> values = RandomFloats(1000000, 1234, 95, 145);
  int nans = 0, subnormals = 0, normals = 0, infinities = 0;
  for (float x : values) {
    const uint16_t got = FloatToHalf(x);
    if (std::isnan(x)) {
      ExpectNarrowedNan(kHalf, x, got);
      ++nans;
      continue;
    }
    ASSERT_EQ(got, reference.Round(x)) << std::hexfloat << x << std::hex << " bits 0x" << Bits(x);
    const int e = (got >> 10) & 0x1F;
    if (e == 0x1F) ++infinities;
    else if (e == 0) ++subnormals;
    else ++normals;
  }
  // The mix reaches every kind of result.
  EXPECT_GT(nans, 100);
  EXPECT_GT(subnormals, 10000);
  EXPECT_GT(normals, 100000);
  EXPECT_GT(infinities, 100000);
}

// ---- bfloat16 ----

TEST(BFloat16Conversion, WidensEveryPatternExactly) {
  for (int p = 0; p < 65536; ++p) {
    const uint16_t b = static_cast<uint16_t>(p);
    const float got = BFloat16ToFloat(b);
    const double want = Widened(kBFloat16, b);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << p;
      ASSERT_EQ(std::signbit(got), (p & 0x8000) != 0) << std::hex << p;
      ASSERT_EQ(Bits(got), static_cast<uint32_t>(p) << 16) << std::hex << p;
    } else {
      ASSERT_EQ(Bits(got), Bits(static_cast<float>(want))) << std::hex << p << " " << want;
      ASSERT_EQ(static_cast<double>(got), want) << std::hex << p;
    }
  }
}

TEST(BFloat16Conversion, RoundTripsEveryNonNanPattern) {
  int checked = 0;
  for (int p = 0; p < 65536; ++p) {
    const uint16_t b = static_cast<uint16_t>(p);
    if (IsNan16(kBFloat16, b)) continue;
    ASSERT_EQ(FloatToBFloat16(BFloat16ToFloat(b)), b) << std::hex << p;
    ++checked;
  }
  EXPECT_EQ(checked, 65536 - 2 * 127);
}

TEST(BFloat16Conversion, NarrowsEdgeCases) {
  const float max_bf16 = FromBits(0x7F7F0000);  // 3.3895314e38
  const struct {
    float x;
    uint16_t want;
  } cases[] = {
      {1.f, 0x3F80},
      {1.f + std::ldexp(1.f, -8), 0x3F80},          // tie, 1 is even
      {NextUp(1.f + std::ldexp(1.f, -8)), 0x3F81},  // just above
      {1.f + 3 * std::ldexp(1.f, -8), 0x3F82},      // tie, up to even
      {NextDown(1.f + 3 * std::ldexp(1.f, -8)), 0x3F81},
      {max_bf16, 0x7F7F},
      {FromBits(0x7F7F7FFF), 0x7F7F},                 // below the midpoint to 2^128
      {FromBits(0x7F7F8000), 0x7F80},                 // the midpoint; 0x7F7F odd: infinity
      {std::numeric_limits<float>::max(), 0x7F80},
      {FromBits(0xFF7F8000), 0xFF80},
      {-max_bf16, 0xFF7F},
      {FromBits(0x00000001), 0x0000},                 // float subnormals:
      {FromBits(0x00008000), 0x0000},                 // tie with 0
      {FromBits(0x00008001), 0x0001},                 // smallest bf16 subnormal
      {FromBits(0x00018000), 0x0002},                 // tie, up to even
      {FromBits(0x007F8000), 0x0080},                 // largest subnormal + tie: 2^-126
      {FromBits(0x807FFFFF), 0x8080},
      {std::numeric_limits<float>::min(), 0x0080},
      {0.f, 0x0000},
      {-0.f, 0x8000},
      {INFINITY, 0x7F80},
      {-INFINITY, 0xFF80},
      {0.1f, 0x3DCD},
      {-2.5f, 0xC020},
  };
  const Rounder reference(kBFloat16);
  for (const auto& c : cases) {
    EXPECT_EQ(FloatToBFloat16(c.x), c.want) << std::hexfloat << c.x;
    EXPECT_EQ(reference.Round(c.x), c.want) << "reference, " << std::hexfloat << c.x;
  }
}

TEST(BFloat16Conversion, NarrowsNansToQuietNans) {
  // 0x7FFFFFFF and 0x7FFF8000 would carry into the sign or infinity by plain
  // rounding; 0x7F800001 has its payload only in the low bits.
  for (uint32_t bits : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu,
                        0xFFFFFFFFu, 0x7FFF8000u, 0x7F808000u, 0x7FA00000u, 0x7FC01234u}) {
    const float x = FromBits(bits);
    ASSERT_TRUE(std::isnan(x));
    ExpectNarrowedNan(kBFloat16, x, FloatToBFloat16(x));
  }
}

TEST(BFloat16Conversion, NarrowsRandomFloatsLikeTheReference) {
  const Rounder reference(kBFloat16);
  // Every exponent: bfloat16 covers float32's range.
  const std::vector<float> values = RandomFloats(1000000, 5678, 0, 255);
  int nans = 0;
  for (float x : values) {
    const uint16_t got = FloatToBFloat16(x);
    if (std::isnan(x)) {
      ExpectNarrowedNan(kBFloat16, x, got);
      ++nans;
      continue;
    }
    ASSERT_EQ(got, reference.Round(x)) << std::hexfloat << x << std::hex << " bits 0x" << Bits(x);
  }
  EXPECT_GT(nans, 1000);
}

// ---- bulk ----

TEST(StorageConversionOnHost, BulkHelpersConvertEachElement) {
  std::vector<float> values = RandomFloats(1000, 42, 100, 145);
  values.push_back(-0.f);
  values.push_back(FromBits(0x7FFFFFFF));
  const int n = static_cast<int>(values.size());

  std::vector<float> floats(n);
  FloatsToStorage(values.data(), n, StorageType::kFloat32, floats.data());
  std::vector<float> back(n);
  StorageToFloats(floats.data(), n, StorageType::kFloat32, back.data());
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(Bits(floats[i]), Bits(values[i])) << i;
    EXPECT_EQ(Bits(back[i]), Bits(values[i])) << i;
  }

  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    SCOPED_TRACE(StorageTypeName(type));
    const bool half = type == StorageType::kFloat16;
    std::vector<uint16_t> stored(n + 1, 0xABCD);
    FloatsToStorage(values.data(), n, type, stored.data());
    StorageToFloats(stored.data(), n, type, back.data());
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(stored[i], half ? FloatToHalf(values[i]) : FloatToBFloat16(values[i])) << i;
      ASSERT_EQ(Bits(back[i]), Bits(half ? HalfToFloat(stored[i]) : BFloat16ToFloat(stored[i])))
          << i;
    }
    EXPECT_EQ(stored[n], 0xABCD);  // n elements written, no more
  }
  FloatsToStorage(nullptr, 0, StorageType::kFloat16, nullptr);  // empty is fine
  StorageToFloats(nullptr, 0, StorageType::kFloat32, nullptr);
}

TEST(StorageConversionOnHost, TypesNameTheirSize) {
  EXPECT_STREQ(StorageTypeName(StorageType::kFloat32), "float32");
  EXPECT_STREQ(StorageTypeName(StorageType::kFloat16), "float16");
  EXPECT_STREQ(StorageTypeName(StorageType::kBFloat16), "bfloat16");
  EXPECT_EQ(StorageBytes(StorageType::kFloat32), 4u);
  EXPECT_EQ(StorageBytes(StorageType::kFloat16), 2u);
  EXPECT_EQ(StorageBytes(StorageType::kBFloat16), 2u);
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
