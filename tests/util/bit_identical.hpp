// Values compared bit for bit: for paths that must run the same kernels in
// the same order (a memory plan moves only where values live).
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace dlcaffe {
namespace test {

inline void ExpectBitIdentical(const std::vector<float>& expected,
                               const std::vector<float>& actual, const std::string& what) {
  ASSERT_EQ(expected.size(), actual.size()) << what;
  for (size_t i = 0; i < expected.size(); ++i) {
    uint32_t expected_bits, actual_bits;
    std::memcpy(&expected_bits, &expected[i], sizeof(float));
    std::memcpy(&actual_bits, &actual[i], sizeof(float));
    ASSERT_EQ(expected_bits, actual_bits)
        << what << "[" << i << "]: " << actual[i] << ", without the plan " << expected[i];
  }
}

}  // namespace test
}  // namespace dlcaffe
