#include "util/storage_values.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "dlcaffe/half_conversion.hpp"

namespace dlcaffe {
namespace test {

std::vector<float> RoundedTo(const std::vector<float>& values, StorageType type) {
  if (type == StorageType::kFloat32) return values;
  const int n = static_cast<int>(values.size());
  std::vector<uint16_t> bits(values.size());
  FloatsToStorage(values.data(), n, type, bits.data());
  std::vector<float> back(values.size());
  StorageToFloats(bits.data(), n, type, back.data());
  return back;
}

BufferPtr UploadAs(Context& ctx, const std::vector<float>& values, StorageType type) {
  BufferPtr buffer = ctx.Allocate(std::max<size_t>(values.size(), 1) * StorageBytes(type));
  std::vector<char> bytes(values.size() * StorageBytes(type));
  FloatsToStorage(values.data(), static_cast<int>(values.size()), type, bytes.data());
  if (!bytes.empty()) ctx.Write(buffer->mem(), 0, bytes.size(), bytes.data());
  return buffer;
}

double Ulp(float v, StorageType type) {
  const int mantissa_bits = type == StorageType::kFloat16 ? 10 : 7;
  const int min_exponent = type == StorageType::kFloat16 ? -14 : -126;
  const int exponent = v == 0.f ? min_exponent : std::max(std::ilogb(std::fabs(v)), min_exponent);
  return std::ldexp(1.0, exponent - mantissa_bits);
}

void ExpectMultipliedAs(const char* what, const std::vector<float>& got,
                        const std::vector<float>& as_multiplied, const std::vector<float>& other,
                        StorageType type) {
  const std::vector<float> expected = RoundedTo(as_multiplied, type), wrong = RoundedTo(other, type);
  ASSERT_EQ(got.size(), expected.size()) << what;
  int told_apart = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_LE(std::fabs(got[i] - expected[i]), Ulp(expected[i], type)) << what << " " << i;
    told_apart += std::fabs(got[i] - wrong[i]) > Ulp(wrong[i], type);
  }
  EXPECT_GT(told_apart, 0) << what << ": the other operand gives the same values";
}

}  // namespace test
}  // namespace dlcaffe
