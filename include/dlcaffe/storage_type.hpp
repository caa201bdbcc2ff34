// How the values of a blob edge (the data and diff a layer writes and the
// next reads) are stored on the device: 32-bit float, or one of the two
// 16-bit types of mixed precision, IEEE half (float16) and bfloat16 (the top
// half of a float32). Conversions between them are exact and round to
// nearest even: half_conversion.hpp on the host, core/storage_convert.hpp on
// the device. passes/assign_storage_types.cpp gives each layer its type and
// inserts Convert layers where a layer cannot read or write a type.
//
// Everything a storage type means is in its row of one table
// (StorageTraitsOf): its name, size, the prototxt's caffe::Type, and the
// OpenCL element and loads and stores every kernel uses, from which the
// kernels' STORAGE_* macros are generated (StorageKernelMacros). A new type
// (an 8-bit one) is a new row here and in that table.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "dlcaffe/caffe.pb.h"

namespace dlcaffe {

// The values are the kernels' storage codes (a -D option's value: the
// STORAGE_*_<code> macros, storage_option.hpp).
enum class StorageType { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };

struct StorageTraits {
  StorageType type;
  const char* name;         // "float32", as logs, keys and files name it
  size_t bytes;             // one element
  caffe::Type caffe_type;   // forward_type / backward_type in a prototxt
  const char* cl_element;   // the OpenCL type of an element in memory
  // OpenCL C of one element's (four's, sixteen's) load from element i of
  // pointer p as float, and store of float v there rounded to nearest even:
  // macro bodies over the parameters p, i and v.
  const char* load;
  const char* store;
  const char* load4;
  const char* store4;
  const char* load16;
  const char* store16;
};

const StorageTraits& StorageTraitsOf(StorageType type);
// Every storage type, in code order.
const std::vector<StorageType>& AllStorageTypes();

inline const char* StorageTypeName(StorageType type) { return StorageTraitsOf(type).name; }
inline size_t StorageBytes(StorageType type) { return StorageTraitsOf(type).bytes; }
inline caffe::Type CaffeTypeOf(StorageType type) { return StorageTraitsOf(type).caffe_type; }
// The storage type a caffe::Type names (false for one that is no storage
// type: DOUBLE, or a math-only type).
bool StorageTypeOf(caffe::Type type, StorageType* storage);
// The storage type of that name (StorageTypeName), false if none.
bool StorageTypeNamed(const std::string& name, StorageType* storage);

// The OpenCL C that defines every type's STORAGE_ELEM_<code>,
// STORAGE_LOAD_<code>(p, i), STORAGE_STORE_<code>(p, i, v) and their 4- and
// 16-wide forms: the shared kernel header (src/cl/common.cl) includes it as
// "storage_types.cl".
const std::string& StorageKernelMacros();

}  // namespace dlcaffe
