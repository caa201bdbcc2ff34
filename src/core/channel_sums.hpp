// Per-channel sums over an outer x channels x inner blob, shared by the
// layers that reduce over all but the channel axis (Scale's and Bias's
// parameter gradients), and the choice of shape for those layers' and
// BatchNorm's per-channel kernels.
//
// The sums are generated reductions (core/reduce_kernel.hpp), whose shape
// follows the device as the GEMM's does (Context::cpu_shaped_kernels): on a
// CPU ("runs") a work-item sweeps long contiguous runs in float16 vectors; on
// a GPU ("groups") several work-groups share a channel and a second launch
// adds up their results. RunOptions::kernel_shape forces one (the tests run
// both).
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
// kProducts a null b means a). a and b may be stored in 16 bits (their
// BufferArg's type); the sums are float. A caller that keeps a workspace (one per
// call site) saves allocating the reduction's scratch each call.
void ChannelSums(Context& ctx, ChannelSumKind kind, int outer, int channels, int inner,
                 const pointwise::BufferArg& a, const pointwise::BufferArg& b,
                 const ChannelSumTarget& first,
                 const ChannelSumTarget& second, ReduceWorkspace* workspace = nullptr);

// The context's choice of shape (runs: the CPU shape) for generated kernels
// (core/pointwise_kernel.hpp).
KernelShape ChannelKernelShape(Context& ctx);
// The -D option that selects a shape in batch_norm.cl: "-DCPU_SHAPE=1" for
// runs, "-DCPU_SHAPE=0" for groups.
const char* ChannelShapeOption(bool runs);

}  // namespace dlcaffe
