// What the execution plan decides for each layer and hands to it
// (Layer::set_choices) before the layer is set up or reshaped: the shape of
// its kernels, the switches of the convolution algorithms, the math of its
// products and the GEMM forms they may take. DecideLayerChoices makes them
// from the net's run options and the device; a layer reads these and never
// the options, and hands them on to its products (GemmArgs::choices) and
// generated kernels (KernelShapeOf). So a net given other options
// (Net::set_options) re-decides them and reshapes every layer to follow.
// Where a switch is auto, the layer's own rule picks from its shapes (a
// convolution's Winograd and channels-last rules, core/base_convolution.hpp);
// `dlcaffe time|bench --explain` prints what each layer runs.
#pragma once
#include <string>

#include "dlcaffe/run_options.hpp"

namespace dlcaffe {

struct DeviceInfo;

struct LayerChoices {
  // CPU-shaped kernels (a work-item walks a run of memory) or GPU-shaped
  // ones (work-groups share tiles in __local memory): what the device
  // prefers unless the options force one.
  bool cpu_shaped_kernels = false;
  // Convolutions: Winograd F(4x4, 3x3), implicit GEMM, channels-last
  // products (RunOptions' conv_* switches), and the floats a chunk's column
  // buffers may take.
  RunOptions::Choice winograd = RunOptions::Choice::kAuto;
  RunOptions::Choice implicit_gemm = RunOptions::Choice::kAuto;
  RunOptions::Choice channels_last = RunOptions::Choice::kAuto;
  long long column_floats = 1LL << 26;
  // FLOAT math multiplies as TF32 (core/layer_math.hpp).
  bool allow_tf32 = false;
  // The fused attention's tensor-core kernels with NVIDIA's warp
  // instructions written out in OpenCL C (RunOptions::matrix_emulate).
  bool matrix_emulate = false;
  // The GEMM forms its products may take (RunOptions' matrix_engine,
  // matrix_pipeline, matrix_wgmma; core/matrix_engine.hpp): the device's
  // matrix engine, its cp.async pipeline, Hopper's wgmma under the rule.
  bool matrix_engine = true;
  bool matrix_pipeline = true;
  bool matrix_wgmma = false;

  // "gpu-shaped kernels, tf32" and the like: what differs from the defaults.
  std::string Describe() const;
  bool operator==(const LayerChoices& other) const;
  bool operator!=(const LayerChoices& other) const { return !(*this == other); }
};

// The kernel shape `options` give on `device` (RunOptions::kernel_shape,
// else the device's preference).
bool CpuShapedKernels(const RunOptions& options, const DeviceInfo& device);
// The choices for a layer of a net run with `options` on `device`.
LayerChoices DecideLayerChoices(const RunOptions& options, const DeviceInfo& device);

}  // namespace dlcaffe
