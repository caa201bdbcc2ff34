#include "dlcaffe/run_options.hpp"

#include <cstdlib>
#include <functional>
#include <utility>

#include "dlcaffe/error.hpp"

namespace dlcaffe {

namespace {

using Shape = RunOptions::KernelShape;
using Choice = RunOptions::Choice;

// One switch: what users see (Switches()), how its text sets and shows it.
struct SwitchEntry {
  RunOptions::Switch info;
  std::function<void(RunOptions&, const std::string&)> set;
  std::function<std::string(const RunOptions&)> get;
};

[[noreturn]] void Refuse(const RunOptions::Switch& s, const std::string& value) {
  DLC_FAIL("run option '" << s.name << "' (" << s.environment << ") must be " << s.values
                          << ", not '" << value << "'");
}

// An on/off switch; "1" and "0" are accepted too (DLCAFFE_POISON=1 was the
// documented form).
SwitchEntry OnOff(const char* name, const char* environment, const char* meaning,
                  bool RunOptions::*field) {
  RunOptions::Switch info{name, environment, "on or off (1 or 0)", meaning};
  return {info,
          [info, field](RunOptions& o, const std::string& v) {
            if (v == "on" || v == "1") o.*field = true;
            else if (v == "off" || v == "0") o.*field = false;
            else Refuse(info, v);
          },
          [field](const RunOptions& o) { return std::string(o.*field ? "on" : "off"); }};
}

SwitchEntry AutoOnOff(const char* name, const char* environment, const char* meaning,
                      Choice RunOptions::*field) {
  RunOptions::Switch info{name, environment, "auto, on or off", meaning};
  return {info,
          [info, field](RunOptions& o, const std::string& v) {
            if (v == "auto") o.*field = Choice::kAuto;
            else if (v == "on") o.*field = Choice::kOn;
            else if (v == "off") o.*field = Choice::kOff;
            else Refuse(info, v);
          },
          [field](const RunOptions& o) {
            return std::string(o.*field == Choice::kAuto ? "auto"
                               : o.*field == Choice::kOn ? "on" : "off");
          }};
}

// A free text (a device or a directory).
SwitchEntry Text(const char* name, const char* environment, const char* values,
                 const char* meaning, std::string RunOptions::*field) {
  return {{name, environment, values, meaning},
          [field](RunOptions& o, const std::string& v) { o.*field = v; },
          [field](const RunOptions& o) { return o.*field; }};
}

const std::vector<SwitchEntry>& Entries() {
  static const std::vector<SwitchEntry> entries = [] {
    std::vector<SwitchEntry> e;
    e.push_back(Text("device", "DLCAFFE_DEVICE", "ocl:P:D, a flat device index, or empty",
                     "the OpenCL device (empty: the first GPU, else the fastest CPU device by measurement)",
                     &RunOptions::device));
    e.push_back(OnOff("fusion", "DLCAFFE_FUSION",
                      "the Net's fusions and the importer's pattern fusions",
                      &RunOptions::fusion));
    e.push_back(AutoOnOff("graph_passes", "DLCAFFE_GRAPH_PASSES",
                          "the net description's rewrites (pattern fusions, in-place "
                          "layers): auto on imported ONNX models, on for every net",
                          &RunOptions::graph_passes));
    {
      RunOptions::Switch info{"kernel_shape", "DLCAFFE_KERNEL_SHAPE", "device, cpu or gpu",
                              "kernels shaped as the device prefers, or forced"};
      e.push_back({info,
                   [info](RunOptions& o, const std::string& v) {
                     if (v == "device") o.kernel_shape = Shape::kDevice;
                     else if (v == "cpu") o.kernel_shape = Shape::kCpu;
                     else if (v == "gpu") o.kernel_shape = Shape::kGpu;
                     else Refuse(info, v);
                   },
                   [](const RunOptions& o) {
                     return std::string(o.kernel_shape == Shape::kDevice ? "device"
                                        : o.kernel_shape == Shape::kCpu ? "cpu" : "gpu");
                   }});
    }
    e.push_back(AutoOnOff("winograd", "DLCAFFE_CONV_WINOGRAD",
                          "Winograd F(4x4, 3x3) for 3x3 stride-1 convolutions",
                          &RunOptions::winograd));
    e.push_back(AutoOnOff("implicit_gemm", "DLCAFFE_CONV_IMPLICIT",
                          "2-D convolutions as implicit GEMMs, without a column buffer",
                          &RunOptions::implicit_gemm));
    e.push_back(AutoOnOff("conv_channels_last", "DLCAFFE_CONV_CHANNELS_LAST",
                          "2-D convolutions as implicit GEMMs over channels-last copies of "
                          "their blobs",
                          &RunOptions::conv_channels_last));
    {
      RunOptions::Switch info{"conv_column_floats", "DLCAFFE_CONV_COLUMN_FLOATS",
                              "a whole number above 0",
                              "floats a convolution's column and output buffers take per "
                              "chunk of images"};
      e.push_back({info,
                   [info](RunOptions& o, const std::string& v) {
                     char* end = nullptr;
                     const long long n = std::strtoll(v.c_str(), &end, 10);
                     if (v.empty() || *end != '\0' || n <= 0) Refuse(info, v);
                     o.conv_column_floats = n;
                   },
                   [](const RunOptions& o) { return std::to_string(o.conv_column_floats); }});
    }
    e.push_back(Text("kernel_cache", "DLCAFFE_KERNEL_CACHE", "a directory, off, or empty",
                     "where compiled kernels are kept (empty: the user's cache)",
                     &RunOptions::kernel_cache));
    e.push_back(Text("tuning_cache", "DLCAFFE_TUNING_CACHE", "a directory, off, or empty",
                     "where GEMM tuning results are kept (empty: the user's cache)",
                     &RunOptions::tuning_cache));
    e.push_back(Text("kernel_source_dir", "DLCAFFE_CL_DIR", "a directory, or empty",
                     "read OpenCL sources from there instead of the built-in copies",
                     &RunOptions::kernel_source_dir));
    e.push_back(OnOff("poison", "DLCAFFE_POISON",
                      "fresh device memory starts as NaN (shows reads of unwritten memory)",
                      &RunOptions::poison));
    e.push_back(OnOff("profile", "DLCAFFE_PROFILE", "record every kernel's device time",
                      &RunOptions::profile));
    e.push_back(OnOff("allow_tf32", "DLCAFFE_ALLOW_TF32",
                      "FLOAT math becomes TF32: float32 products on the device's matrix "
                      "engine where it has one",
                      &RunOptions::allow_tf32));
    e.push_back(OnOff("matrix_engine", "DLCAFFE_MATRIX_ENGINE",
                      "products whose math allows it run on the device's matrix engine "
                      "where it has one (off: the float kernels)",
                      &RunOptions::matrix_engine));
    e.push_back(OnOff("matrix_pipeline", "DLCAFFE_MATRIX_PIPELINE",
                      "products on the matrix engine stream their tiles through cp.async "
                      "stages where their operands allow it (off: through registers)",
                      &RunOptions::matrix_pipeline));
    e.push_back(OnOff("matrix_wgmma", "DLCAFFE_MATRIX_WGMMA",
                      "the GEMM rule sends 16-bit products on Hopper's tensor cores to the "
                      "warpgroup (wgmma) kernels where their operands allow it (off, the "
                      "default: mma.sync, faster on every shape measured)",
                      &RunOptions::matrix_wgmma));
    e.push_back(OnOff("matrix_emulate", "DLCAFFE_MATRIX_EMULATE",
                      "the fused attention's tensor-core kernels run with the warp "
                      "instructions written out in OpenCL C, on any device (slow: for "
                      "checking them where there are no tensor cores)",
                      &RunOptions::matrix_emulate));
    e.push_back(OnOff("share_diffs", "DLCAFFE_SHARE_DIFFS",
                      "a solver's train net shares the storage of activation diffs whose "
                      "lifetimes do not overlap (the training memory plan; off keeps every "
                      "blob's diff readable after the backward pass)",
                      &RunOptions::share_diffs));
    e.push_back(OnOff("shared_memory_sum", "DLCAFFE_SHARED_MEMORY_SUM",
                      "under mpirun with every rank on one host, gradients are summed "
                      "through shared memory (off: MPI_Allreduce)",
                      &RunOptions::shared_memory_sum));
    return e;
  }();
  return entries;
}

const SwitchEntry& Find(const std::string& name) {
  std::string names;
  for (const SwitchEntry& e : Entries()) {
    if (name == e.info.name) return e;
    names += (names.empty() ? "" : ", ") + std::string(e.info.name);
  }
  DLC_FAIL("no run option '" << name << "'; the run options are " << names);
}

}  // namespace

// Variables that earlier versions read, and what replaced them: setting one
// is an error rather than a switch that silently does nothing.
const std::pair<const char*, const char*> kRetiredVariables[] = {
    {"DLCAFFE_ONNX_FUSION", "DLCAFFE_GRAPH_PASSES=off"},
    {"DLCAFFE_POINTWISE_SHAPE", "DLCAFFE_KERNEL_SHAPE"},
    {"DLCAFFE_CHANNEL_KERNELS", "DLCAFFE_KERNEL_SHAPE"},
    {"DLCAFFE_CONV_KERNELS", "DLCAFFE_KERNEL_SHAPE"},
    {"DLCAFFE_LAYER_NORM_ROWS", "DLCAFFE_KERNEL_SHAPE"},
};

RunOptions RunOptions::FromEnvironment() {
  for (const auto& [retired, replacement] : kRetiredVariables)
    DLC_REQUIRE(!std::getenv(retired), retired << " is no longer read: use " << replacement
                                               << " (README, 'Run options')");
  RunOptions options;
  for (const SwitchEntry& e : Entries()) {
    const char* value = std::getenv(e.info.environment);
    // Set but empty counts as unset (`DLCAFFE_X= command`).
    if (value && *value) e.set(options, value);
  }
  return options;
}

void RunOptions::Set(const std::string& name, const std::string& value) {
  Find(name).set(*this, value);
}

void RunOptions::SetList(const std::string& list) {
  size_t start = 0;
  while (start < list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    const std::string item = list.substr(start, end - start);
    const size_t eq = item.find('=');
    DLC_REQUIRE(eq != std::string::npos && eq > 0,
                "run options: '" << item << "' is not name=value (in '" << list << "')");
    Set(item.substr(0, eq), item.substr(eq + 1));
    start = end + 1;
  }
}

std::string RunOptions::Get(const std::string& name) const { return Find(name).get(*this); }

const std::vector<RunOptions::Switch>& RunOptions::Switches() {
  static const std::vector<Switch> switches = [] {
    std::vector<Switch> s;
    for (const SwitchEntry& e : Entries()) s.push_back(e.info);
    return s;
  }();
  return switches;
}

bool operator==(const RunOptions& a, const RunOptions& b) {
  for (const RunOptions::Switch& s : RunOptions::Switches())
    if (a.Get(s.name) != b.Get(s.name)) return false;
  return true;
}

std::string DefaultCacheRoot() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME")) return std::string(xdg) + "/dlcaffe";
  if (const char* home = std::getenv("HOME")) return std::string(home) + "/.cache/dlcaffe";
  return "";
}

}  // namespace dlcaffe
