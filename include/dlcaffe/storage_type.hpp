// How the values of a blob edge (the data and diff a layer writes and the
// next reads) are stored on the device. Only 32-bit float today: every layer
// reads and writes float, so every edge is float. Mixed precision (half and
// bfloat16 edges) adds types here; the execution plan gives each edge its
// type (ExecutionPlan::edge_type) and converts where a layer cannot read or
// write that type.
#pragma once
#include <cstddef>

namespace dlcaffe {

enum class StorageType { kFloat32 };

inline const char* StorageTypeName(StorageType type) {
  switch (type) {
    case StorageType::kFloat32: return "float32";
  }
  return "?";
}

inline size_t StorageBytes(StorageType type) {
  switch (type) {
    case StorageType::kFloat32: return 4;
  }
  return 0;
}

}  // namespace dlcaffe
