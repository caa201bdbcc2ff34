// The OpenCL build option that makes a kernel's storage macro (A_TYPE,
// DATA_TYPE, PW_TYPE__x, ...) store a StorageType: the kernels read the
// macro's value as the type's storage code (the enum's value, which picks
// the STORAGE_*_<code> macros generated from the storage types' table,
// storage_type.hpp) and store float32 where it is not defined.
#pragma once
#include <string>

#include "dlcaffe/storage_type.hpp"

namespace dlcaffe {

// "" for float32, else " -DMACRO=CODE".
inline std::string StorageOption(const std::string& macro, StorageType type) {
  if (type == StorageType::kFloat32) return "";
  return " -D" + macro + "=" + std::to_string(static_cast<int>(type));
}

}  // namespace dlcaffe
