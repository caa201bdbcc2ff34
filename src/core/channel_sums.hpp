// Per-channel sums over an outer x channels x inner blob, shared by the
// layers that reduce over all but the channel axis (e.g. Scale's and Bias's
// parameter gradients).
//
// The sums are generated reductions (core/reduce_kernel.hpp) in the shape the
// caller names (a layer's: KernelShapeOf(choices_)): in the CPU shape
// ("runs") a work-item sweeps long contiguous runs in float16 vectors; in the
// GPU shape ("groups") several work-groups share a channel and a second
// launch adds up their results.
#pragma once
#include <CL/cl.h>

#include "../core/reduce_kernel.hpp"
#include "dlcaffe/context.hpp"

namespace dlcaffe {

enum class ChannelSumKind {
  kMoments,   // sums of a - shift_c and (a - shift_c)^2, shift_c = a[c * inner]
  kProducts,  // sums of a and a * b
};

// Where a sum goes: out[offset + c] = sum, or += sum when accumulate.
struct ChannelSumTarget {
  cl_mem out = nullptr;
  int offset = 0;
  bool accumulate = false;
};

// Enqueues the two sums of every channel into `first` and `second` (a
// target with a null `out` is skipped; b may be null for kMoments; for
// kProducts a null b means a), in kernels of `shape`. a and b may be stored
// in 16 bits (their BufferArg's type); the sums are float. A caller that
// keeps a workspace (one per call site) saves allocating the reduction's
// scratch each call.
void ChannelSums(Context& ctx, KernelShape shape, ChannelSumKind kind, int outer, int channels,
                 int inner, const pointwise::BufferArg& a, const pointwise::BufferArg& b,
                 const ChannelSumTarget& first, const ChannelSumTarget& second,
                 ReduceWorkspace* workspace = nullptr);

}  // namespace dlcaffe
