#include "util/storage_values.hpp"

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

}  // namespace test
}  // namespace dlcaffe
