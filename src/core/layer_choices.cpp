#include "dlcaffe/layer_choices.hpp"

#include <tuple>

#include "dlcaffe/context.hpp"

namespace dlcaffe {

namespace {

const char* ChoiceName(RunOptions::Choice choice) {
  return choice == RunOptions::Choice::kOn ? "on" : choice == RunOptions::Choice::kOff ? "off"
                                                                                      : "auto";
}

}  // namespace

bool CpuShapedKernels(const RunOptions& options, const DeviceInfo& device) {
  switch (options.kernel_shape) {
    case RunOptions::KernelShape::kCpu: return true;
    case RunOptions::KernelShape::kGpu: return false;
    default: return device.prefers_cpu_shaped_kernels;
  }
}

LayerChoices DecideLayerChoices(const RunOptions& options, const DeviceInfo& device) {
  LayerChoices c;
  c.cpu_shaped_kernels = CpuShapedKernels(options, device);
  c.winograd = options.winograd;
  c.implicit_gemm = options.implicit_gemm;
  c.channels_last = options.conv_channels_last;
  c.column_floats = options.conv_column_floats;
  c.allow_tf32 = options.allow_tf32;
  c.matrix_emulate = options.matrix_emulate;
  c.matrix_engine = options.matrix_engine;
  c.matrix_pipeline = options.matrix_pipeline;
  c.matrix_wgmma = options.matrix_wgmma;
  return c;
}

std::string LayerChoices::Describe() const {
  const LayerChoices defaults;
  std::string text = cpu_shaped_kernels ? "cpu-shaped kernels" : "gpu-shaped kernels";
  const auto add = [&](const std::string& part) { text += ", " + part; };
  if (winograd != defaults.winograd) add(std::string("winograd ") + ChoiceName(winograd));
  if (implicit_gemm != defaults.implicit_gemm)
    add(std::string("implicit gemm ") + ChoiceName(implicit_gemm));
  if (channels_last != defaults.channels_last)
    add(std::string("channels-last ") + ChoiceName(channels_last));
  if (column_floats != defaults.column_floats)
    add("column floats " + std::to_string(column_floats));
  if (allow_tf32) add("tf32");
  if (matrix_emulate) add("emulated tensor cores");
  if (matrix_engine != defaults.matrix_engine)
    add(matrix_engine ? "matrix engine" : "no matrix engine");
  if (matrix_pipeline != defaults.matrix_pipeline)
    add(matrix_pipeline ? "matrix pipeline" : "no matrix pipeline");
  if (matrix_wgmma != defaults.matrix_wgmma) add(matrix_wgmma ? "wgmma" : "no wgmma");
  return text;
}

bool LayerChoices::operator==(const LayerChoices& o) const {
  return std::tie(cpu_shaped_kernels, winograd, implicit_gemm, channels_last, column_floats,
                  allow_tf32, matrix_emulate, matrix_engine, matrix_pipeline, matrix_wgmma) ==
         std::tie(o.cpu_shaped_kernels, o.winograd, o.implicit_gemm, o.channels_last,
                  o.column_floats, o.allow_tf32, o.matrix_emulate, o.matrix_engine,
                  o.matrix_pipeline, o.matrix_wgmma);
}

}  // namespace dlcaffe
