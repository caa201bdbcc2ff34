// Converts a run of device values from one edge storage type to another
// (storage_type.hpp): where the execution plan joins edges of different
// types, and for reading and writing 16-bit blobs as float. The results
// equal the host conversions (dlcaffe/half_conversion.hpp) bit for bit:
// narrowing rounds to nearest even, widening is exact, NaNs stay NaN.
// Internal to the library.
#pragma once
#include <CL/cl.h>

#include "dlcaffe/context.hpp"
#include "dlcaffe/storage_type.hpp"

namespace dlcaffe {

// dst[dst_offset + i] = convert(src[src_offset + i]) for i < count, enqueued
// on ctx's queue; offsets and count are in elements of each buffer's own
// type. Elements of dst outside the range are left as they are. The two
// ranges must not overlap (same type: a buffer copy).
void ConvertStorage(Context& ctx, cl_mem src, int src_offset, StorageType src_type, cl_mem dst,
                    int dst_offset, StorageType dst_type, int count);

}  // namespace dlcaffe
