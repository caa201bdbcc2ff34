#include "util/storage_values.hpp"

#include <algorithm>
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

}  // namespace test
}  // namespace dlcaffe
