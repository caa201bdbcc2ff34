// One OpenCL device with an in-order command queue, its program cache and its
// buffer pool. Passed explicitly to whatever needs it; there is no global mode.
// Work is enqueued asynchronously: nothing here waits for the device unless it
// has to hand data to the host.
#pragma once
#include <CL/cl.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dlcaffe/buffer_pool.hpp"
#include "dlcaffe/kernel_profile.hpp"
#include "dlcaffe/layer_choices.hpp"
#include "dlcaffe/program_cache.hpp"
#include "dlcaffe/run_options.hpp"

namespace dlcaffe {

struct TunedGemmSnapshot;  // core/gemm_tuning.cpp
class GemmRecording;       // core/gemm_tuning.hpp
struct GemmShapeKey;
struct GemmConfig;

struct DeviceInfo {
  int platform_index = 0;
  int device_index = 0;   // index within its platform
  int flat_index = 0;     // index over all platforms
  std::string platform_name;
  std::string name;
  std::string vendor;
  std::string version;
  std::string driver_version;
  cl_device_type type = 0;
  bool is_gpu() const { return (type & CL_DEVICE_TYPE_GPU) != 0; }
  bool is_cpu() const { return (type & CL_DEVICE_TYPE_CPU) != 0; }
  uint64_t global_mem_bytes = 0;
  uint64_t local_mem_bytes = 0;
  uint64_t max_alloc_bytes = 0;
  int compute_units = 0;
  size_t max_work_group_size = 0;
  // Whether the device runs CPU-shaped kernels better than GPU-shaped ones:
  // a CPU, or any device whose __local memory is ordinary global memory
  // (staging tiles there gains nothing). Read once, with the rest.
  bool prefers_cpu_shaped_kernels = false;
  int native_vector_width_float = 1;
  std::string extensions;  // CL_DEVICE_EXTENSIONS, space-separated
  bool has_extension(const std::string& name) const;
  cl_platform_id platform_id = nullptr;
  cl_device_id device_id = nullptr;
  std::string Describe() const;  // "ocl:P:D name (platform, driver)"
};

// Every device of every platform, in platform order.
std::vector<DeviceInfo> ListDevices();

// The device options.device names ("ocl:P:D", a flat index, or "cpu": the
// CPU device a run without a GPU would take), or where it is empty the default: the first GPU; else the only CPU device; else the CPU
// device a short measurement finds fastest (two OpenCL implementations of
// one processor differ by machine), remembered in the tuning cache
// (src/core/device_choice.hpp). Fails with the list of devices when there is
// none such. `why`, if given, says how the device was chosen.
DeviceInfo ChooseDevice(const RunOptions& options, std::string* why = nullptr);

// A global or local work size of 1 to 3 dimensions.
struct NDRange {
  NDRange() : dims(0), size{{1, 1, 1}} {}
  NDRange(size_t x) : dims(1), size{{x, 1, 1}} {}
  NDRange(size_t x, size_t y) : dims(2), size{{x, y, 1}} {}
  NDRange(size_t x, size_t y, size_t z) : dims(3), size{{x, y, z}} {}
  unsigned dims;
  std::array<size_t, 3> size;
};

// Marks a __local kernel argument of the given byte size.
struct LocalMemory {
  size_t bytes;
};

// Rounds n up to a multiple of m.
inline size_t RoundUp(size_t n, size_t m) { return (n + m - 1) / m * m; }

// A seedable random generator whose state can be saved and restored.
using Rng = std::mt19937_64;

// SplitMix64's step: a well-spread seed from a counter-like one (the next
// seed of a sequence, or the seed of replica k from a run's seed).
inline uint64_t MixSeed(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Which replica a context serves in data-parallel training
// (data_parallel.hpp), one context per replica: replica `index` of `count`.
// TRAIN-phase data layers deliver the records whose position in the data
// set's order is `index` modulo `count`, so that no two replicas read the
// same record in an epoch and together they read them all; only replica 0
// tests and writes snapshots. {0, 1}: training on one device.
struct ReplicaInfo {
  int index = 0;
  int count = 1;
  // The same on every replica of a run: what replicas must draw alike (the
  // shuffled order of a list they share) comes from it.
  uint64_t shared_seed = 0;
};

class Context {
 public:
  // The device options.device names (RunOptions::device), run with `options`.
  static std::unique_ptr<Context> Create(const RunOptions& options);
  // The environment's options (RunOptions::FromEnvironment), on the device
  // `spec` names where it is not empty ("ocl:P:D" or a flat index).
  static std::unique_ptr<Context> Create(const std::string& spec = "");
  explicit Context(const DeviceInfo& info,
                   const RunOptions& options = RunOptions::FromEnvironment());
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const DeviceInfo& info() const { return info_; }
  // The run-time switches everything on this context follows.
  const RunOptions& options() const { return options_; }
  // Takes effect for what is decided from here on: layers set up, nets
  // (re)planned, kernels and caches opened after the call (options.device
  // is ignored: the device is this one).
  void set_options(const RunOptions& options);
  // The kernel shape to build: the device's preference unless the options
  // force one (RunOptions::kernel_shape).
  bool cpu_shaped_kernels() const;
  // The choices these options make (DecideLayerChoices), for products and
  // kernels no layer asks for: solvers, tools, tests. A layer's own come
  // from its net's plan (Layer::choices).
  LayerChoices default_choices() const;
  cl_context cl() const { return context_; }
  cl_command_queue queue() const { return queue_; }
  cl_device_id device() const { return info_.device_id; }
  ProgramCache& programs() { return *programs_; }
  BufferPool& pool() { return *pool_; }
  Rng& rng() { return rng_; }
  void Seed(uint64_t seed) { rng_.seed(seed); }
  const ReplicaInfo& replica() const { return replica_; }
  void set_replica(const ReplicaInfo& replica) { replica_ = replica; }

  // Shorthand for programs().Kernel(...).
  cl_kernel Kernel(const std::string& source, const std::string& options,
                   const std::string& name) {
    return programs_->Kernel(source, options, name);
  }

  // Sets the arguments and enqueues. An empty `local` lets the driver choose.
  // `global` is used as given: round it up to a multiple of `local` first.
  template <typename... Args>
  void Launch(cl_kernel kernel, const NDRange& global, const NDRange& local,
              const Args&... args) {
    SetArgs(kernel, 0, args...);
    Enqueue(kernel, global, local);
  }
  void Enqueue(cl_kernel kernel, const NDRange& global, const NDRange& local);

  // One work-item per element i < n: the kernel must return for i >= n
  // (the global size is rounded up to the work-group size).
  template <typename... Args>
  void Launch1D(cl_kernel kernel, size_t n, const Args&... args) {
    if (n == 0) return;
    Launch(kernel, NDRange(RoundUp(n, kElementwiseGroup)),
           NDRange(kElementwiseGroup), args...);
  }
  static constexpr size_t kElementwiseGroup = 64;

  // Host <-> device transfers. Reads block; writes block too (the host memory
  // may be reused by the caller right after).
  void Write(cl_mem dst, size_t offset_bytes, size_t bytes, const void* src);
  void Read(cl_mem src, size_t offset_bytes, size_t bytes, void* dst);
  void Copy(cl_mem src, size_t src_offset_bytes, cl_mem dst,
            size_t dst_offset_bytes, size_t bytes);
  // Sets `count` floats starting at element `offset` to `value`.
  void Fill(cl_mem dst, size_t offset, size_t count, float value);
  // Repeats a pattern of `pattern_bytes` (1, 2, 4, ... 128) over `bytes`
  // bytes from `offset_bytes` (a 16-bit blob's value, for one).
  void FillPattern(cl_mem dst, size_t offset_bytes, size_t bytes, const void* pattern,
                   size_t pattern_bytes);
  void Finish();

  // A device buffer of at least `bytes` bytes from the pool. Its contents
  // are undefined (whatever an earlier owner left), or NaN under poison.
  BufferPtr Allocate(size_t bytes);

  // Poison mode (RunOptions::poison, DLCAFFE_POISON=1): every buffer the
  // pool hands out, and so every blob's data and diff when allocated,
  // starts as NaN instead of whatever the device left there (PoCL's fresh
  // memory is zero, a GPU's is not), so that a read of memory no kernel
  // wrote shows on any device.
  bool poison() const { return options_.poison; }
  // What fresh blob storage holds: 0 (Caffe's contract), NaN under poison.
  float fresh_value() const;

  // From now on, record every kernel's device time (kernel_profile.hpp), and
  // that of transfers and fills (labelled in parentheses):
  // waits for the queue and replaces it by one with profiling enabled. Call
  // it before anything holds events of the old queue.
  void EnableKernelProfile();
  // nullptr unless enabled.
  KernelProfile* kernel_profile() { return profile_.get(); }

  // The stored GEMM winners as the products of this context look them up
  // (core/gemm_tuning.cpp): resolved once per options rather than at every
  // product; set_options drops them.
  const TunedGemmSnapshot* tuned_gemms() const { return tuned_gemms_.get(); }
  const TunedGemmSnapshot* set_tuned_gemms(std::shared_ptr<const TunedGemmSnapshot> s) const {
    tuned_gemms_ = std::move(s);
    return tuned_gemms_.get();
  }
  // What a tuner or a test sets for a while (core/gemm_tuning.hpp): the
  // recording of this context's products, and configurations that stand in
  // for the stored winners. Null when none; per context, so that replicas
  // on their own threads and devices never see each other's.
  GemmRecording* gemm_recording() const { return gemm_recording_; }
  void set_gemm_recording(GemmRecording* recording) { gemm_recording_ = recording; }
  using GemmChoices = std::map<GemmShapeKey, GemmConfig>;
  const GemmChoices* gemm_choices() const { return gemm_choices_; }
  void set_gemm_choices(const GemmChoices* choices) { gemm_choices_ = choices; }

 private:
  static void SetArgs(cl_kernel, cl_uint) {}
  template <typename T, typename... Rest>
  static void SetArgs(cl_kernel kernel, cl_uint index, const T& arg,
                      const Rest&... rest) {
    SetArg(kernel, index, arg);
    SetArgs(kernel, index + 1, rest...);
  }
  template <typename T>
  static void SetArg(cl_kernel kernel, cl_uint index, const T& arg) {
    static_assert(std::is_trivially_copyable<T>::value, "kernel argument");
    CheckSetArg(clSetKernelArg(kernel, index, sizeof(T), &arg), kernel, index);
  }
  static void SetArg(cl_kernel kernel, cl_uint index, const LocalMemory& local) {
    CheckSetArg(clSetKernelArg(kernel, index, local.bytes, nullptr), kernel, index);
  }
  static void CheckSetArg(cl_int err, cl_kernel kernel, cl_uint index);
  // With a kernel profile: where a transfer's event goes, then recording it
  // under `label` (nothing without one).
  cl_event* ProfileEvent();
  void RecordProfileEvent(const char* label);

  DeviceInfo info_;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  std::shared_ptr<BufferPool> pool_;
  std::unique_ptr<ProgramCache> programs_;
  Rng rng_;
  ReplicaInfo replica_;
  std::unique_ptr<KernelProfile> profile_;
  cl_event pending_event_ = nullptr;
  RunOptions options_;
  mutable std::shared_ptr<const TunedGemmSnapshot> tuned_gemms_;
  GemmRecording* gemm_recording_ = nullptr;
  const GemmChoices* gemm_choices_ = nullptr;
};

// Name of an OpenCL error code ("CL_OUT_OF_RESOURCES").
const char* ClErrorName(cl_int err);

}  // namespace dlcaffe

// For OpenCL calls whose failure is an environment problem (out of memory,
// lost device): throws dlcaffe::Error naming the call and the error code.
#define DLC_CL_CHECK(call)                                                  \
  do {                                                                      \
    cl_int dlc_cl_err_ = (call);                                            \
    if (dlc_cl_err_ != CL_SUCCESS) ::dlcaffe::ThrowClError(#call, dlc_cl_err_); \
  } while (0)

namespace dlcaffe {
[[noreturn]] void ThrowClError(const char* what, cl_int err);
}
