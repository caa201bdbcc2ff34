// OpenCL kernels generated from a description instead of written by hand:
// a pointwise pass is a few named buffers and scalars and a body in OpenCL C,
// e.g.
//
//   const PointwiseKernel kReluBackward("relu_backward",
//       {In("y"), In("dy"), Out("dx"), Scalar("slope")},
//       "dx = y > 0.f ? dy : slope * dy;");
//   kReluBackward.Launch(ctx, count, {y, dy, dx}, {slope});
//
// The generator writes the kernel around the body (loads, stores, index
// arithmetic, the work split) in the shape asked for (KernelShape), registers the
// text with the program cache (RegisterKernelSource: built once per device,
// kept in the on-disk binary cache, build failures reported with the
// compiler's log) and launches it once per call. Per-channel reductions that
// finish in the same launch are in core/reduce_kernel.hpp.
//
// The body sees every buffer value and every result as a variable of type
// `real`, which is float16 in the CPU shape's vector loop and float
// elsewhere, so it must be valid for both: arithmetic, comparisons, ?: and
// the OpenCL built-ins (fmax, exp, sqrt, sign, ...) are; a scalar `if` on a
// buffer value, or `(float)` casts of one, are not. Scalars stay plain
// float / int (where both arms of ?: would be scalars, write (real)s). Names
// starting with `pw_` are the generator's.
#pragma once
#include <CL/cl.h>

#include <string>
#include <vector>

#include "dlcaffe/blob.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/layer_choices.hpp"

namespace dlcaffe {

// The shapes of a generated kernel, as for the GEMM (core/gemm_config.hpp):
enum class KernelShape {
  kDevice,  // the context's choice (Context::cpu_shaped_kernels), for callers
            // that are not layers: solvers, math.hpp's BLAS-like helpers,
            // tools, tests
  kCpu,     // a work-item sweeps a long contiguous run in float16 vectors
  kGpu,     // a work-item per 4 elements a grid apart (coalesced loads, all
            // issued before any use); a reduction's parts are work-groups
};
// A layer's kernels take the shape the plan decided for it (Layer::choices).
inline KernelShape KernelShapeOf(const LayerChoices& choices) {
  return choices.cpu_shaped_kernels ? KernelShape::kCpu : KernelShape::kGpu;
}
// Whether `shape` means the CPU shape on this device.
bool UsesCpuShape(Context& ctx, KernelShape shape);

// The floats one work-item of the CPU shape takes in a pass over `count`
// floats (a multiple of 16): several items per core, each long next to its
// overhead.
int CpuShapeChunk(int count);

namespace pointwise {

// One argument of a generated kernel, under the name the body uses.
struct Arg {
  enum Kind {
    kIn,          // a buffer read at the element: `const real name`
    kOut,         // a buffer written at the element: `real name`, 0 until the body sets it
    kInOut,       // a buffer read and written at the element
    kChannel,     // a buffer read at the element's channel: `const real name`
    kChannelOut,  // reductions' finish only: the channel's value, read and written
    kScalar,      // a float (plain float, not real)
    kIntScalar,   // an int
  };
  Kind kind;
  std::string name;
  bool is_buffer() const { return kind != kScalar && kind != kIntScalar; }
  bool per_channel() const { return kind == kChannel || kind == kChannelOut; }
};
inline Arg In(const std::string& name) { return {Arg::kIn, name}; }
inline Arg Out(const std::string& name) { return {Arg::kOut, name}; }
inline Arg InOut(const std::string& name) { return {Arg::kInOut, name}; }
inline Arg Channel(const std::string& name) { return {Arg::kChannel, name}; }
inline Arg ChannelOut(const std::string& name) { return {Arg::kChannelOut, name}; }
inline Arg Scalar(const std::string& name) { return {Arg::kScalar, name}; }
inline Arg IntScalar(const std::string& name) { return {Arg::kIntScalar, name}; }

// A buffer bound to a buffer argument: its values start at `offset`
// elements; a per-channel argument reads channel c at offset + c * stride
// (stride 0: one value for every channel). `type` is how its elements are
// stored: a pointwise kernel (not a reduction) reads and writes 16-bit
// buffers as float, converting (a build of its own per set of types).
struct BufferArg {
  BufferArg(cl_mem mem) : mem(mem) {}  // NOLINT: a plain cl_mem is the usual case
  BufferArg(cl_mem mem, int offset, int stride = 1) : mem(mem), offset(offset), stride(stride) {}
  BufferArg(cl_mem mem, StorageType type) : mem(mem), type(type) {}
  cl_mem mem = nullptr;
  int offset = 0;
  int stride = 1;
  StorageType type = StorageType::kFloat32;
};
// A blob's data or diff, in its storage type.
inline BufferArg Data(const Blob& blob) { return {blob.data(), blob.storage_type()}; }
inline BufferArg Diff(const Blob& blob) { return {blob.diff(), blob.storage_type()}; }

// A value bound to a scalar argument (float or int, as declared).
struct ScalarArg {
  ScalarArg(float v) : value(v) {}  // NOLINT
  ScalarArg(double v) : value(static_cast<float>(v)) {}  // NOLINT
  ScalarArg(int v) : is_int(true), int_value(v) {}  // NOLINT
  ScalarArg(bool v) : is_int(true), int_value(v ? 1 : 0) {}  // NOLINT
  bool is_int = false;
  float value = 0.f;
  int int_value = 0;
};

// What one Launch takes: a count and the values bound to the arguments.
struct Segment {
  int count = 0;
  std::vector<BufferArg> buffers;
  std::vector<ScalarArg> scalars;
};

// The generated source's names for argument `name`: its buffer pointer
// (moved to the offset), offset and stride parameters, and its channel's
// value. Distinct from one another and from the generator's own pw_ names.
inline std::string BufferName(const std::string& name) { return "pw__" + name; }
inline std::string OffsetName(const std::string& name) { return "pw_offset__" + name; }
inline std::string StrideName(const std::string& name) { return "pw_stride__" + name; }
inline std::string ChannelValueName(const std::string& name) { return "pw_value__" + name; }

// What the pointwise and reduce generators share: the arguments, their
// checks, the registered source and the binding of a launch's values.
//
// A generated kernel takes its buffers as arguments and every int and float
// (the generator's own sizes, each buffer's offset and stride, the scalars)
// in one struct passed by value: on PoCL each kernel argument costs time at
// every enqueue (docs/benchmarks.md, M8).
class GeneratedKernel {
 public:
  const std::string& name() const { return name_; }
  const std::vector<Arg>& args() const { return args_; }
  // The generated OpenCL text (both shapes; PW_CPU_SHAPE selects).
  const std::string& source() const { return source_; }

 protected:
  // `allowed` says which kinds this generator accepts; `fixed_ints` and
  // `fixed_buffers` name the generator's own values (ints, first in the
  // struct) and buffers (before the arguments' buffers).
  GeneratedKernel(const std::string& generator, const std::string& name, std::vector<Arg> args,
                  const std::vector<Arg::Kind>& allowed, std::vector<std::string> fixed_ints,
                  std::vector<std::string> fixed_buffers = {});
  // Registers `source` under a name that holds its hash.
  void SetSource(std::string source);
  // The kernel for this shape, with `options` added to the -D option that
  // selects it (built on first use; a build failure names this kernel and
  // shows `code`, the user's part of the source).
  cl_kernel Kernel(Context& ctx, bool cpu_shape, const std::string& code,
                   const std::string& options = "") const;
  // Sets every kernel argument: the fixed buffers, the arguments' buffers
  // (declaration order) and the struct of the fixed ints, offsets, strides
  // and scalars (declaration order).
  void Bind(cl_kernel kernel, const std::vector<int>& fixed_ints,
            const std::vector<cl_mem>& fixed_buffers, const std::vector<BufferArg>& buffers,
            const std::vector<ScalarArg>& scalars) const;
  // The struct's words for these values (Bind's last argument).
  std::vector<int> ParamsWords(const std::vector<int>& fixed_ints,
                               const std::vector<BufferArg>& buffers,
                               const std::vector<ScalarArg>& scalars) const;
  // As Kernel, for another registered source of this generator (`kernel`
  // names the function in it).
  cl_kernel KernelFrom(Context& ctx, const std::string& source_name, const std::string& kernel,
                       const std::string& code, const std::string& options) const;
  // The struct's typedef (pw_params), to put before the kernel, and each
  // buffer's storage macros: PW_T__name its element type, PW_LOAD__name(i)
  // and PW_STORE__name(v, i) for one float, PW_LOAD16__name(i) and
  // PW_STORE16__name(v, i) for a float16 vector at element i; float unless
  // the build defines PW_TYPE__name (1 half, 2 bfloat16: TypeOptions).
  std::string ParamsStruct() const;
  // The build options that give `buffers` (bound in declaration order)
  // their storage types ("" when all are float).
  std::string TypeOptions(const std::vector<BufferArg>& buffers) const;
  // The kernel's parameter list, after "__kernel void name(".
  std::string Parameters() const;
  // The kernel's first statements: the fixed ints, strides and scalars as
  // local constants, each buffer pointer moved to its offset.
  std::string UnpackParams() const;
  // In a sweep: each per-channel input's value at channel `channel_expr`
  // (ChannelValueName), read only where `guard` holds (0 elsewhere).
  std::string LoadChannelValues(const std::string& channel_expr,
                                const std::string& guard = "") const;

  // The kinds of buffer argument Bind accepts in 16 bits: the pointwise
  // generator's loads and stores all convert; the reduction's loads do (its
  // per-channel outputs are float).
  std::vector<Arg::Kind> typed_kinds_;
  std::string generator_;
  std::string name_;
  std::vector<Arg> args_;
  std::string source_;
  std::string source_name_;
  std::vector<std::string> fixed_ints_, fixed_buffers_;
  int num_buffers_ = 0, num_scalars_ = 0;
};

}  // namespace pointwise

// For per-channel (kChannel) arguments: the channel of element i is
// (i / inner) % channels.
struct ChannelAxis {
  int channels = 1;
  int inner = 1;
};

// A kernel that computes its outputs element by element from its inputs
// (same count, each at its own offset; an output may be an input: in place),
// per-channel inputs broadcast over a blob seen as outer x channels x inner,
// and scalars.
class PointwiseKernel : public pointwise::GeneratedKernel {
 public:
  PointwiseKernel(const std::string& name, std::vector<pointwise::Arg> args,
                  const std::string& body);

  // Enqueues the kernel over `count` elements: `buffers` bound to the buffer
  // arguments and `scalars` to the scalar ones, each in declaration order. A
  // layer passes its shape, KernelShapeOf(choices_).
  void Launch(Context& ctx, int count, const std::vector<pointwise::BufferArg>& buffers,
              const std::vector<pointwise::ScalarArg>& scalars = {},
              ChannelAxis channel_axis = {}, KernelShape shape = KernelShape::kDevice) const;

  // As Launch for each segment (no per-channel arguments), in fewer launches
  // in the GPU shape: segments under kSmallSegment elements go up to
  // segments_per_launch() to one launch, each work-item finding its segment
  // among their ends. A solver's hundreds of small parameter blobs would
  // otherwise cost a launch each (docs/benchmarks.md, M8); larger segments
  // keep Launch's own shape. The CPU
  // shape launches each segment, its overhead being small next to its sweep.
  void LaunchMany(Context& ctx, const std::vector<pointwise::Segment>& segments,
                  KernelShape shape = KernelShape::kDevice) const;
  static constexpr int kSmallSegment = 1 << 16;
  static constexpr int kMaxManySegments = 8;
  // At most 8, fewer where the arguments would pass OpenCL's guaranteed
  // 1024 bytes of kernel parameters; 1 for kernels with per-channel inputs.
  int segments_per_launch() const { return segments_per_launch_; }

 private:
  // The batched form's source (GPU shape only), registered on its own so
  // that kernels never batched never build it.
  std::string ManySource() const;

  std::string body_;
  int segments_per_launch_ = 1;
  std::string many_source_name_;
};

}  // namespace dlcaffe
