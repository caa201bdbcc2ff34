#include "core/storage_convert.hpp"

#include <glog/logging.h>

#include <string>

namespace dlcaffe {

void ConvertStorage(Context& ctx, cl_mem src, int src_offset, StorageType src_type, cl_mem dst,
                    int dst_offset, StorageType dst_type, int count) {
  CHECK_GE(src_offset, 0);
  CHECK_GE(dst_offset, 0);
  CHECK_GE(count, 0);
  if (count == 0) return;
  if (src_type == dst_type) {
    const size_t bytes = StorageBytes(src_type);
    ctx.Copy(src, src_offset * bytes, dst, dst_offset * bytes, count * bytes);
    return;
  }
  // storage_convert.cl names each kernel after its two types.
  const std::string kernel =
      std::string("convert_") + StorageTypeName(src_type) + "_" + StorageTypeName(dst_type);
  // A work-item per run of 4 values (CONVERT_RUN in storage_convert.cl).
  ctx.Launch1D(ctx.Kernel("storage_convert.cl", "", kernel), (size_t(count) + 3) / 4,
               static_cast<cl_int>(count), src, static_cast<cl_int>(src_offset), dst,
               static_cast<cl_int>(dst_offset));
}

}  // namespace dlcaffe
