// Per-channel sums over an outer x channels x inner blob (src/cl/channel_sums.cl),
// shared by the layers that reduce over all but the channel axis: BatchNorm's
// statistics and gradient, Scale's and Bias's parameter gradients.
#pragma once
#include <CL/cl.h>

namespace dlcaffe {

class Context;

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
// target with a null `out` is skipped; b may be null for kMoments).
void ChannelSums(Context& ctx, ChannelSumKind kind, int outer, int channels, int inner,
                 cl_mem a, cl_mem b, const ChannelSumTarget& first,
                 const ChannelSumTarget& second);

}  // namespace dlcaffe
