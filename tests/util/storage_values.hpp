// Values as a 16-bit storage type holds them, for the mixed-precision tests.
#pragma once
#include <vector>

#include "dlcaffe/context.hpp"
#include "dlcaffe/storage_type.hpp"

namespace dlcaffe {
namespace test {

// Each value rounded to `type` (nearest even) and widened back to float.
std::vector<float> RoundedTo(const std::vector<float>& values, StorageType type);

// A device buffer holding `values` stored as `type` (rounded to nearest
// even); at least one element's room.
BufferPtr UploadAs(Context& ctx, const std::vector<float>& values, StorageType type);

}  // namespace test
}  // namespace dlcaffe
