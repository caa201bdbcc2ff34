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

// One unit in the last place of |v| in `type` (subnormals' at the bottom).
double Ulp(float v, StorageType type);

// A layer's learned float operand, which a 16-bit layer multiplies rounded
// to `type` where the tensor cores would round it (MmaRoundsTo) and as it
// is elsewhere: `got` (the 16-bit layer's values) must be within one unit
// in the last place of `type` of `as_multiplied` (the float32 layer's over
// the operand as the device multiplies it) rounded, the tensor cores
// summing in another order, and further than that from `other` (the
// float32 layer's over the other operand) somewhere, so that the check
// tells the two apart (gtest failures naming `what`).
void ExpectMultipliedAs(const char* what, const std::vector<float>& got,
                        const std::vector<float>& as_multiplied, const std::vector<float>& other,
                        StorageType type);

}  // namespace test
}  // namespace dlcaffe
