// A layer's scratch buffer, grown to at least `bytes` (and at least one
// float: OpenCL refuses empty buffers) and never shrunk, so that a Reshape
// to a smaller size keeps it and a larger one replaces it.
#pragma once
#include <algorithm>
#include <cstddef>

#include "dlcaffe/context.hpp"

namespace dlcaffe {

inline void GrowBuffer(Context& ctx, BufferPtr* buffer, size_t bytes) {
  bytes = std::max(bytes, sizeof(float));
  if (!*buffer || (*buffer)->bytes() < bytes) *buffer = ctx.Allocate(bytes);
}

}  // namespace dlcaffe
