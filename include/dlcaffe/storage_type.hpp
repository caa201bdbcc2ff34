// How the values of a blob edge (the data and diff a layer writes and the
// next reads) are stored on the device: 32-bit float, or one of the two
// 16-bit types of mixed precision, IEEE half (float16) and bfloat16 (the top
// half of a float32). Conversions between them are exact and round to
// nearest even: half_conversion.hpp on the host, core/storage_convert.hpp on
// the device. Layers that read and write the 16-bit types come next; the
// execution plan gives each edge its type (ExecutionPlan::edge_type) and
// converts where a layer cannot read or write that type.
#pragma once
#include <cstddef>

namespace dlcaffe {

// The values are the kernels' storage codes (STORAGE_* in src/cl/common.cl).
enum class StorageType { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };

inline const char* StorageTypeName(StorageType type) {
  switch (type) {
    case StorageType::kFloat32: return "float32";
    case StorageType::kFloat16: return "float16";
    case StorageType::kBFloat16: return "bfloat16";
  }
  return "?";
}

inline size_t StorageBytes(StorageType type) {
  switch (type) {
    case StorageType::kFloat32: return 4;
    case StorageType::kFloat16: return 2;
    case StorageType::kBFloat16: return 2;
  }
  return 0;
}

}  // namespace dlcaffe
