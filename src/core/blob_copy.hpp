// Copies `like.count()` values stored as `like`'s storage type from one
// buffer to another (nothing when they are the same buffer): for layers
// whose top shares its bottom's storage unless a caller gave it its own.
#pragma once
#include "dlcaffe/blob.hpp"
#include "dlcaffe/context.hpp"

namespace dlcaffe {

inline void CopyBlobValues(Context& ctx, const Blob& like, cl_mem from, cl_mem to) {
  if (from != to) ctx.Copy(from, 0, to, 0, like.count() * like.element_bytes());
}

}  // namespace dlcaffe
