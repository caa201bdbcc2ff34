// Per-channel reductions generated from a description (the arguments and
// conventions of core/pointwise_kernel.hpp): over a blob seen as outer x
// channels x inner, each channel's elements (outer * inner of them) are
// summed or maximised through expressions of the element's values, and a
// finishing body then runs once per channel on the results (one launch, or
// two where channels are split: see below), e.g. BatchNorm's statistics:
//
//   const ChannelReduceKernel kStats("batch_norm_stats",
//       {In("x"), Channel("shift"), ChannelOut("mean"), ChannelOut("stdev"),
//        Scalar("m"), Scalar("eps")},
//       {Sum("sum_d", "x - shift"), Sum("sum_dd", "(x - shift) * (x - shift)")},
//       "const float mu = sum_d / m; mean = shift + mu; "
//       "stdev = sqrt(fmax(sum_dd / m - mu * mu, 0.f) + eps);");
//   kStats.Launch(ctx, workspace, outer, channels, inner,
//                 {x, {x, 0, inner}, mean, stdev}, {float(m), eps});
//
// The expressions see In and Channel arguments as `real` values (see
// pointwise_kernel.hpp; a Channel argument is read only for a channel that
// has elements) and scalars. The finish sees each result as `const
// float name`, Channel and ChannelOut arguments as the channel's value in
// memory (a ChannelOut may be assigned, and read first: `sum += r`), the
// scalars, and `channel`, the channel's index.
//
// Launches: a channel is split into parts (work-groups in the GPU shape,
// work-items in the CPU shape) only when the channels alone would leave the
// device idle. In the GPU shape a blob with inner = 1 (the column sums of a
// matrix, e.g. InnerProduct's bias gradient) is swept by columns instead: a
// work-item per channel and slice of rows, so that neighbouring work-items
// read neighbouring values (a work-group per channel would read one value
// per row, `channels` apart). A channel of one part finishes in the sweep's launch; split
// channels write each part's results to scratch, and a second launch (one
// work-group, or work-item, per channel) adds them up in a fixed order and
// runs the finish. (One work-group per channel, the alternative, leaves
// most of a GPU idle when channels are few and large: 32 channels of 16 x
// 112 x 112.) No atomics and no ticket: a "last part finishes" scheme
// needs the other parts' writes to be visible across work-groups, which
// OpenCL 1.2's mem_fence does not promise (it orders a work-item's own
// accesses; NVIDIA's documentation scopes it to the work-group). The
// kernel boundary does.
#pragma once
#include <string>
#include <vector>

#include "pointwise_kernel.hpp"

namespace dlcaffe {

namespace pointwise {

// One reduction: `expr` over every element of a channel, combined by `op`;
// the finish reads the result as `const float name`. A channel without
// elements sums to 0 and has the maximum -INFINITY.
struct Reduction {
  enum Op { kSum, kMax };
  Op op;
  std::string name;
  std::string expr;
};
inline Reduction Sum(const std::string& name, const std::string& expr) {
  return {Reduction::kSum, name, expr};
}
inline Reduction Max(const std::string& name, const std::string& expr) {
  return {Reduction::kMax, name, expr};
}

}  // namespace pointwise

// The scratch of a ChannelReduceKernel launch: the parts' results. A layer
// keeps one so that its launches reuse the buffer; launches that share one
// must be on the same in-order queue.
class ReduceWorkspace {
 public:
  // Makes room for `partial_floats` results.
  void Reserve(Context& ctx, size_t partial_floats);
  cl_mem partials() const { return partials_ ? partials_->mem() : nullptr; }

 private:
  BufferPtr partials_;
  size_t partial_floats_ = 0;
};

class ChannelReduceKernel : public pointwise::GeneratedKernel {
 public:
  // Takes In, Channel, ChannelOut and scalar arguments.
  ChannelReduceKernel(const std::string& name, std::vector<pointwise::Arg> args,
                      std::vector<pointwise::Reduction> reductions, const std::string& finish);

  // Enqueues the reductions and the finish of every channel of an outer x
  // channels x inner blob (element (o, c, p) at (o * channels + c) * inner +
  // p of each In buffer, after its offset). A layer passes its shape,
  // KernelShapeOf(choices_).
  void Launch(Context& ctx, ReduceWorkspace& workspace, int outer, int channels, int inner,
              const std::vector<pointwise::BufferArg>& buffers,
              const std::vector<pointwise::ScalarArg>& scalars = {},
              KernelShape shape = KernelShape::kDevice) const;

  // How a launch splits each channel (exposed for the tests, which need
  // channels of several parts).
  struct Split {
    int parts = 1;  // per channel
    // CPU shape: part t covers rows [(t / segments) * rows_per_part, +
    // rows_per_part) and, within each, the inner positions [(t % segments)
    // * segment_length, + segment_length).
    int segments = 1, rows_per_part = 1, segment_length = 0;
    // GPU shape, inner = 1: work-item c of a part's work-groups sums
    // channel c over the part's rows [part * rows_per_part, +
    // rows_per_part).
    bool columns = false;
  };
  static Split ChooseSplit(const DeviceInfo& device, bool cpu_shape, int outer, int channels,
                           int inner);
  // The GPU shape's work-group size on this device.
  static int GroupSize(const DeviceInfo& device);

 private:
  std::string Generate() const;
  std::string CpuSweep() const;
  std::string GpuSweep() const;
  std::string ColumnSweep() const;
  std::string StorePartials() const;
  std::string GroupTree() const;
  std::string CombineParts(bool gpu) const;
  std::string Finish() const;

  std::vector<pointwise::Reduction> reductions_;
  std::string finish_;
  std::string code_;  // the user's expressions and finish, for error messages
};

}  // namespace dlcaffe
