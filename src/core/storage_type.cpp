#include "dlcaffe/storage_type.hpp"

#include <sstream>

namespace dlcaffe {

namespace {

// One row per type, in code order. Half goes through vload_half /
// vstore_half_rte (core OpenCL, no cl_khr_fp16); bfloat16 is stored as the
// ushort of its bits (common.cl's conversions round to nearest even).
const StorageTraits kTraits[] = {
    {StorageType::kFloat32, "float32", 4, caffe::FLOAT, "float",  //
     "((p)[i])", "((p)[i] = (v))",                                //
     "vload4(0, (p) + (i))", "vstore4((v), 0, (p) + (i))",        //
     "vload16(0, (p) + (i))", "vstore16((v), 0, (p) + (i))"},
    {StorageType::kFloat16, "float16", 2, caffe::FLOAT16, "half",                //
     "vload_half((i), (p))", "vstore_half_rte((v), (i), (p))",                   //
     "vload_half4(0, (p) + (i))", "vstore_half4_rte((v), 0, (p) + (i))",         //
     "vload_half16(0, (p) + (i))", "vstore_half16_rte((v), 0, (p) + (i))"},
    {StorageType::kBFloat16, "bfloat16", 2, caffe::BFLOAT16, "ushort",           //
     "float_of_bfloat16((p)[i])", "((p)[i] = bfloat16_of_bits(as_uint(v)))",     //
     "float4_of_bfloat16(vload4(0, (p) + (i)))",                                 //
     "vstore4(bfloat16_of_bits4(as_uint4(v)), 0, (p) + (i))",                    //
     "float16_of_bfloat16(vload16(0, (p) + (i)))",                               //
     "vstore16(bfloat16_of_bits16(as_uint16(v)), 0, (p) + (i))"},
};

}  // namespace

const StorageTraits& StorageTraitsOf(StorageType type) {
  return kTraits[static_cast<int>(type)];
}

const std::vector<StorageType>& AllStorageTypes() {
  static const std::vector<StorageType> types = [] {
    std::vector<StorageType> t;
    for (const StorageTraits& row : kTraits) t.push_back(row.type);
    return t;
  }();
  return types;
}

bool StorageTypeOf(caffe::Type type, StorageType* storage) {
  for (const StorageTraits& row : kTraits)
    if (row.caffe_type == type) {
      *storage = row.type;
      return true;
    }
  return false;
}

bool StorageTypeNamed(const std::string& name, StorageType* storage) {
  for (const StorageTraits& row : kTraits)
    if (name == row.name) {
      *storage = row.type;
      return true;
    }
  return false;
}

const std::string& StorageKernelMacros() {
  static const std::string text = [] {
    std::ostringstream s;
    s << "// Generated from the storage types' table (src/core/storage_type.cpp).\n";
    for (const StorageTraits& row : kTraits) {
      const int code = static_cast<int>(row.type);
      s << "#define STORAGE_ELEM_" << code << " " << row.cl_element << "\n"
        << "#define STORAGE_LOAD_" << code << "(p, i) " << row.load << "\n"
        << "#define STORAGE_STORE_" << code << "(p, i, v) " << row.store << "\n"
        << "#define STORAGE_LOAD4_" << code << "(p, i) " << row.load4 << "\n"
        << "#define STORAGE_STORE4_" << code << "(p, i, v) " << row.store4 << "\n"
        << "#define STORAGE_LOAD16_" << code << "(p, i) " << row.load16 << "\n"
        << "#define STORAGE_STORE16_" << code << "(p, i, v) " << row.store16 << "\n";
    }
    return s.str();
  }();
  return text;
}

}  // namespace dlcaffe
