// Every run-time switch of dlcaffe in one place: how a net executes (fusion,
// Winograd, implicit GEMM, the kernels' shape), where it caches (compiled
// kernels, GEMM tuning), which device, and the debugging aids. Parsed and
// validated once — from the environment (FromEnvironment), a command line
// (dlcaffe --options=name=value,...) or the C++ API (Set, or the fields) —
// then held by the Context (Context::options) and read from there: nothing
// else in the library reads the environment for a switch.
//
// A value that is not allowed is an error naming the switch (and its
// environment variable) and listing the values it takes.
#pragma once
#include <string>
#include <vector>

namespace dlcaffe {

struct RunOptions {
  // Whether kernels are shaped for a CPU (a work-item walks a run of memory)
  // or for a GPU (work-groups share tiles in __local memory): what the
  // device reports (DeviceInfo::prefers_cpu_shaped_kernels), or forced, so
  // that PoCL can run the kernels a GPU would (the tests do).
  enum class KernelShape { kDevice, kCpu, kGpu };
  // A path a heuristic chooses, or forced on or off everywhere it applies.
  enum class Choice { kAuto, kOn, kOff };

  // DLCAFFE_DEVICE: "" (the first GPU, else the fastest CPU device by
  // measurement: ChooseDevice), "ocl:P:D" (device D of platform P), "N"
  // (the N-th device over all platforms) or "cpu" (the fastest CPU device).
  std::string device;
  // DLCAFFE_FUSION=on|off: the Net's fusions (its execution plan) and the
  // graph passes' pattern fusions; off runs every layer as written.
  bool fusion = true;
  // DLCAFFE_GRAPH_PASSES=auto|on|off: the rewrites of a net description
  // (passes/net_pass.hpp: subgraphs an exporter spelled out op by op fused
  // into one layer, layers made in place): auto runs them on imported ONNX
  // models, on also on every other net (a prototxt's blobs that are neither
  // its inputs nor its outputs may then vanish or be shared), off on none
  // (an ONNX import still makes layers in place). Off also with fusion off.
  Choice graph_passes = Choice::kAuto;
  // DLCAFFE_KERNEL_SHAPE=device|cpu|gpu.
  KernelShape kernel_shape = KernelShape::kDevice;
  // DLCAFFE_CONV_WINOGRAD=auto|on|off: Winograd F(4x4, 3x3) convolutions.
  Choice winograd = Choice::kAuto;
  // DLCAFFE_CONV_IMPLICIT=auto|on|off: convolutions as implicit GEMMs
  // (no column buffer); auto: on GPU-shaped 2-D convolutions.
  Choice implicit_gemm = Choice::kAuto;
  // DLCAFFE_CONV_CHANNELS_LAST=auto|on|off: 2-D convolutions of whole
  // 16-byte chunks of channels as implicit GEMMs over NHWC copies
  // (core/channels_last_convolution.hpp); auto: where the tensor cores'
  // cp.async pipeline streams the blobs' type.
  Choice conv_channels_last = Choice::kAuto;
  // DLCAFFE_CONV_COLUMN_FLOATS=N (N > 0): a convolution's column and output
  // buffers per chunk of images stay under N floats (256 MiB by default).
  long long conv_column_floats = 1LL << 26;
  // DLCAFFE_KERNEL_CACHE / DLCAFFE_TUNING_CACHE: a directory, "off", or ""
  // for the default ($XDG_CACHE_HOME or ~/.cache, then dlcaffe/kernels or
  // dlcaffe/tuning).
  std::string kernel_cache;
  std::string tuning_cache;
  // DLCAFFE_CL_DIR: read OpenCL sources from this directory (src/cl) instead
  // of the copies built in, to develop kernels without rebuilding.
  std::string kernel_source_dir;
  // DLCAFFE_POISON=1|on|0|off: fresh device memory starts as NaN.
  bool poison = false;
  // DLCAFFE_PROFILE=1|on|0|off: record every kernel's device time
  // (kernel_profile.hpp; dlcaffe time/bench --kernels reports them). Once
  // on, a context keeps recording.
  bool profile = false;
  // DLCAFFE_ALLOW_TF32=1|on|0|off: FLOAT math (exact float32 products) is
  // TF32 math instead, wherever a layer's math resolves to it
  // (core/layer_math.hpp), as PyTorch's allow_tf32: float32 nets multiply on
  // the device's matrix engine where it has one for tf32. (Storage types are
  // the net's: Blob::storage_type.)
  bool allow_tf32 = false;
  // DLCAFFE_MATRIX_ENGINE=1|on|0|off: products whose math allows it run on
  // the device's matrix engine where it has one (core/matrix_engine.hpp);
  // off runs every product on the float kernels, whatever its math.
  bool matrix_engine = true;
  // DLCAFFE_MATRIX_PIPELINE=1|on|0|off: products on NVIDIA's tensor cores
  // stream their tiles into __local memory through cp.async stages where
  // their operands allow it (src/cl/gemm_tiled.cl, MMA_STAGES); off stages them
  // through registers (the kernel before the pipeline), for comparing.
  bool matrix_pipeline = true;
  // DLCAFFE_MATRIX_WGMMA=1|on|0|off: the GEMM rule sends 16-bit products
  // on Hopper's tensor cores to the wgmma form (core/gemm_wgmma.hpp) where
  // their operands allow it. Off by default: under OpenCL's 48 KiB of
  // __local memory it measured slower than the mma.sync kernels on every
  // shape timed (docs/benchmarks.md, "The wgmma form"); `dlcaffe tune`
  // weighs it either way.
  bool matrix_wgmma = false;
  // DLCAFFE_MATRIX_EMULATE=1|on|0|off: the fused attention's tensor-core
  // kernels (src/cl/attention_mma.cl) run wherever their math allows them,
  // with NVIDIA's warp instructions (mma.sync, ldmatrix, shfl) written out
  // in OpenCL C: slow, for checking those kernels on devices without tensor
  // cores (the tests on PoCL). Off by default.
  bool matrix_emulate = false;
  // DLCAFFE_SHARE_DIFFS=1|on|0|off: a solver's train net has the training
  // memory plan (Net::PlanTrainingMemory): activation diffs whose lifetimes
  // do not overlap share storage, so an activation's diff holds no value
  // after the backward pass; off keeps each its own, to read them.
  bool share_diffs = true;
  // DLCAFFE_SHARED_MEMORY_SUM=1|on|0|off: under mpirun with every rank on
  // one host, gradients are summed through memory the ranks share
  // (parallel/shared_memory_sum.hpp); off keeps MPI_Allreduce. Every rank
  // must have the same value.
  bool shared_memory_sum = true;

  // The defaults, overridden by every DLCAFFE_* variable that is set (one
  // that earlier versions read and this one does not is an error naming
  // its replacement).
  static RunOptions FromEnvironment();
  // Sets one switch by its name ("fusion", ...; the table below) from its
  // text form, as the environment and the command line give it.
  void Set(const std::string& name, const std::string& value);
  // "name=value,name=value" (dlcaffe --options).
  void SetList(const std::string& list);
  // The text form of one switch's current value.
  std::string Get(const std::string& name) const;

  struct Switch {
    const char* name;
    const char* environment;  // the variable that sets it
    const char* values;       // what it takes, for messages and --help
    const char* meaning;
  };
  // Every switch, in the order of the fields above.
  static const std::vector<Switch>& Switches();
};

bool operator==(const RunOptions& a, const RunOptions& b);
inline bool operator!=(const RunOptions& a, const RunOptions& b) { return !(a == b); }

// The per-user cache root: $XDG_CACHE_HOME/dlcaffe, else ~/.cache/dlcaffe
// ("" when neither is known).
std::string DefaultCacheRoot();

}  // namespace dlcaffe
