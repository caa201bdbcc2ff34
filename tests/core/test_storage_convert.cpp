// ConvertStorage (src/core/storage_convert.hpp) on the device against the
// host conversions (include/dlcaffe/half_conversion.hpp, tested on their own
// in test_half_conversion.cpp), bit for bit: every pair of storage types, on
// every 16-bit pattern and on edge and pseudo-random floats, over odd counts
// at non-zero offsets, leaving the elements around the range untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iomanip>
#include <limits>
#include <random>
#include <sstream>
#include <vector>

#include "../../src/core/storage_convert.hpp"
#include "dlcaffe/half_conversion.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

const StorageType kTypes[] = {StorageType::kFloat32, StorageType::kFloat16,
                              StorageType::kBFloat16};

// Values of one storage type, as raw bytes.
struct Values {
  StorageType type;
  std::vector<uint8_t> bytes;
  int count() const { return static_cast<int>(bytes.size() / StorageBytes(type)); }
};

uint32_t Element(const std::vector<uint8_t>& bytes, StorageType type, size_t i) {
  uint32_t bits = 0;
  if (type == StorageType::kFloat32) {
    std::memcpy(&bits, bytes.data() + 4 * i, 4);
  } else {
    uint16_t b16;
    std::memcpy(&b16, bytes.data() + 2 * i, 2);
    bits = b16;
  }
  return bits;
}

float FromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// Floats: the edges of both 16-bit formats (ties, overflow, subnormals,
// zeros, infinities, NaNs that rounding would carry into infinity), every
// half and bfloat16 value widened, and a million pseudo-random patterns (half
// any bits, half with exponents around half's range).
Values FloatInputs() {
  std::vector<float> f;
  const float two_m25 = std::ldexp(1.f, -25);
  for (float x : {1.f, 1.f + std::ldexp(1.f, -11), 1.f + 3 * std::ldexp(1.f, -11),
                  1.f + std::ldexp(1.f, -8), 1.f + 3 * std::ldexp(1.f, -8), 2049.f, 2051.f,
                  65504.f, std::nextafter(65520.f, 0.f), 65520.f, 65536.f, 1e10f,
                  std::numeric_limits<float>::max(), std::ldexp(1.f, -24), two_m25,
                  std::nextafter(two_m25, 1.f), std::nextafter(two_m25, 0.f), 3 * two_m25,
                  1.5f * two_m25, 1023 * std::ldexp(1.f, -24), 1023.5f * std::ldexp(1.f, -24),
                  std::ldexp(1.f, -14), std::nextafter(std::ldexp(1.f, -14), 0.f),
                  std::numeric_limits<float>::min(), std::numeric_limits<float>::denorm_min(),
                  0.f, INFINITY, 0.1f, 2.5f}) {
    f.push_back(x);
    f.push_back(-x);
  }
  for (uint32_t bits : {0x7F7F0000u, 0x7F7F7FFFu, 0x7F7F8000u, 0x00008000u, 0x00008001u,
                        0x00018000u, 0x007F8000u, 0x007FFFFFu, 0x7FC00000u, 0x7F800001u,
                        0x7FFFFFFFu, 0x7FFF8000u, 0x7F808000u, 0x7FA00000u, 0x7F802000u,
                        0x7FBFE000u, 0x7FC01234u}) {
    f.push_back(FromBits(bits));
    f.push_back(FromBits(bits | 0x80000000u));
  }
  for (int p = 0; p < 65536; ++p) {
    f.push_back(HalfToFloat(static_cast<uint16_t>(p)));
    f.push_back(BFloat16ToFloat(static_cast<uint16_t>(p)));
  }
  std::mt19937 rng(97);
  std::uniform_int_distribution<uint32_t> exponent(95, 145);
  for (int i = 0; i < 1000000; ++i) {
    uint32_t bits = rng();
    if (i % 2) bits = (bits & 0x807FFFFF) | (exponent(rng) << 23);
    f.push_back(FromBits(bits));
  }
  Values v{StorageType::kFloat32, std::vector<uint8_t>(f.size() * 4)};
  std::memcpy(v.bytes.data(), f.data(), v.bytes.size());
  return v;
}

// Every 16-bit pattern, in an order that is not monotonic.
Values AllPatterns(StorageType type) {
  Values v{type, std::vector<uint8_t>(65536 * 2)};
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t p = static_cast<uint16_t>(i * 40503u);  // odd: a permutation
    std::memcpy(v.bytes.data() + 2 * i, &p, 2);
  }
  return v;
}

const Values& Inputs(StorageType type) {
  static const Values floats = FloatInputs();
  static const Values halves = AllPatterns(StorageType::kFloat16);
  static const Values bfloats = AllPatterns(StorageType::kBFloat16);
  switch (type) {
    case StorageType::kFloat32: return floats;
    case StorageType::kFloat16: return halves;
    case StorageType::kBFloat16: return bfloats;
  }
  return floats;
}

// The host's conversion of the first `count` inputs: through float, which
// holds every value of the three types exactly.
std::vector<uint8_t> HostConvert(const Values& in, int count, StorageType dst_type) {
  std::vector<uint8_t> out(count * StorageBytes(dst_type));
  if (in.type == dst_type) {
    std::memcpy(out.data(), in.bytes.data(), out.size());
    return out;
  }
  std::vector<float> floats(count);
  StorageToFloats(in.bytes.data(), count, in.type, floats.data());
  FloatsToStorage(floats.data(), count, dst_type, out.data());
  return out;
}

constexpr uint8_t kSrcGuard = 0x5A, kDstGuard = 0xA5;
constexpr int kTail = 5;  // guard elements after each range

// Converts the first `count` inputs on the device, placed at src_offset of a
// buffer and written to dst_offset of another; checks the destination
// against the host, and that its elements before and after the range kept
// their guard bytes.
void CheckOnDevice(const Values& in, int src_offset, StorageType dst_type, int dst_offset,
                   int count) {
  SCOPED_TRACE(testing::Message() << StorageTypeName(in.type) << " -> "
                                  << StorageTypeName(dst_type) << ", count " << count
                                  << ", offsets " << src_offset << " -> " << dst_offset);
  Context& ctx = TestContext();
  const size_t src_size = StorageBytes(in.type), dst_size = StorageBytes(dst_type);
  const size_t src_bytes = (src_offset + count + kTail) * src_size;
  const size_t dst_bytes = (dst_offset + count + kTail) * dst_size;
  BufferPtr src = ctx.Allocate(src_bytes);
  BufferPtr dst = ctx.Allocate(dst_bytes);
  std::vector<uint8_t> src_host(src_bytes, kSrcGuard);
  std::memcpy(src_host.data() + src_offset * src_size, in.bytes.data(), count * src_size);
  ctx.Write(src->mem(), 0, src_bytes, src_host.data());
  const std::vector<uint8_t> guard(dst_bytes, kDstGuard);
  ctx.Write(dst->mem(), 0, dst_bytes, guard.data());

  ConvertStorage(ctx, src->mem(), src_offset, in.type, dst->mem(), dst_offset, dst_type, count);
  std::vector<uint8_t> got(dst_bytes);
  ctx.Read(dst->mem(), 0, dst_bytes, got.data());

  const std::vector<uint8_t> want = HostConvert(in, count, dst_type);
  std::vector<uint8_t> got_range(got.begin() + dst_offset * dst_size,
                                 got.begin() + (dst_offset + count) * dst_size);
  int mismatches = 0;
  std::ostringstream first;
  for (int i = 0; i < count; ++i) {
    const uint32_t g = Element(got_range, dst_type, i), w = Element(want, dst_type, i);
    if (g == w) continue;
    if (++mismatches <= 10)
      first << std::hex << "\n  input 0x" << Element(in.bytes, in.type, i) << ": device 0x" << g
            << ", host 0x" << w;
  }
  EXPECT_EQ(mismatches, 0) << "first mismatches:" << first.str();
  for (size_t b = 0; b < dst_offset * dst_size; ++b)
    ASSERT_EQ(got[b], kDstGuard) << "byte " << b << " before the range was written";
  for (size_t b = (dst_offset + count) * dst_size; b < dst_bytes; ++b)
    ASSERT_EQ(got[b], kDstGuard) << "byte " << b << " after the range was written";
}

TEST(ConvertStorage, EveryPairOnAllInputsMatchesTheHost) {
  for (StorageType from : kTypes)
    for (StorageType to : kTypes) CheckOnDevice(Inputs(from), 0, to, 0, Inputs(from).count());
}

TEST(ConvertStorage, OddCountsAtOffsetsTouchOnlyTheirRange) {
  for (StorageType from : kTypes)
    for (StorageType to : kTypes)
      for (int count : {1, 3, 13, 127, 65536})
        for (const auto& offsets : {std::make_pair(7, 3), std::make_pair(0, 13),
                                    std::make_pair(1, 0)})
          CheckOnDevice(Inputs(from), offsets.first, to, offsets.second, count);
}

TEST(ConvertStorage, ZeroCountDoesNothing) {
  Context& ctx = TestContext();
  BufferPtr src = ctx.Allocate(16), dst = ctx.Allocate(16);
  const std::vector<uint8_t> guard(16, kDstGuard);
  ctx.Write(dst->mem(), 0, 16, guard.data());
  for (StorageType from : kTypes)
    for (StorageType to : kTypes)
      ConvertStorage(ctx, src->mem(), 1, from, dst->mem(), 1, to, 0);
  std::vector<uint8_t> got(16);
  ctx.Read(dst->mem(), 0, 16, got.data());
  EXPECT_EQ(got, guard);
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
