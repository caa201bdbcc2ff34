// How the values of a blob edge (the data and diff a layer writes and the
// next reads) are stored on the device. Only 32-bit float today: every layer
// reads and writes float, so every edge is float. Mixed precision (half and
// bfloat16 edges) adds types here; the Net then gives each edge its type and
// the layers that read or write an edge of another type ask for it (see the
// storage notes in DESIGN.md's closing note of issue 27).
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
