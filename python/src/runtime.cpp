#include "runtime.hpp"

#include <glog/logging.h>
#include <pybind11/stl.h>

#include <deque>
#include <map>
#include <mutex>
#include <optional>

#include "dlcaffe/error.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "dlcaffe/run_options.hpp"
#include "dlcaffe/solver.hpp"
#include "dlcaffe/version.hpp"

namespace dlcaffe_python {
namespace {

enum class Mode { kDefault, kGpu, kCpu };

struct Runtime {
  Mode mode = Mode::kDefault;
  int gpu_index = 0;
  std::string device_spec;  // set_device("ocl:P:D"): wins over the mode
  std::optional<uint64_t> seed;
  std::map<int, dlcaffe::Context*> contexts;  // by flat device index
  dlcaffe::Context* current = nullptr;
};

Runtime& State() {
  static Runtime* runtime = new Runtime;  // never destroyed, as the contexts
  return *runtime;
}

std::string DeviceList() {
  std::string list;
  for (const dlcaffe::DeviceInfo& info : dlcaffe::ListDevices())
    list += "\n  " + info.Describe();
  return list.empty() ? " none" : list;
}

// The device spec ("ocl:P:D", or "" for the default) the settings name.
std::string ResolveSpec(const Runtime& state) {
  if (!state.device_spec.empty()) return state.device_spec;
  if (state.mode == Mode::kDefault) return "";
  if (state.mode == Mode::kCpu) {
    // dlcaffe's own choice among CPU devices (the fastest, by measurement).
    for (const dlcaffe::DeviceInfo& info : dlcaffe::ListDevices())
      if (info.is_cpu()) return "cpu";
    DLC_FAIL("set_mode_cpu: there is no OpenCL CPU device (on Debian, install pocl-opencl-icd); "
             "the devices are:" << DeviceList());
  }
  int seen = 0;
  for (const dlcaffe::DeviceInfo& info : dlcaffe::ListDevices()) {
    if (info.is_gpu() && seen++ == state.gpu_index)
      return "ocl:" + std::to_string(info.platform_index) + ":" +
             std::to_string(info.device_index);
  }
  DLC_FAIL("set_mode_gpu: there is no OpenCL GPU number " << state.gpu_index
                                                         << "; the devices are:" << DeviceList());
}

// Collects log lines from any thread; FlushLog writes them under the GIL.
class LineQueue : public google::LogSink {
 public:
  void send(google::LogSeverity severity, const char*, const char* base_filename, int line,
            const google::LogMessageTime& time, const char* message, size_t length) override {
    std::string text = ToString(severity, base_filename, line, time, message, length);
    std::lock_guard<std::mutex> lock(mutex_);
    lines_.push_back(std::move(text));
  }
  std::deque<std::string> Take() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::deque<std::string> taken;
    taken.swap(lines_);
    return taken;
  }

 private:
  std::mutex mutex_;
  std::deque<std::string> lines_;
};

LineQueue& Lines() {
  static LineQueue* queue = new LineQueue;
  return *queue;
}

// glog's lines go to the queue only: not to the process's stderr (a
// notebook would not show them) and not to files.
void RouteLogging() {
  if (!google::IsGoogleLoggingInitialized()) google::InitGoogleLogging("dlcaffe");
  FLAGS_logtostderr = false;
  FLAGS_alsologtostderr = false;
  google::SetStderrLogging(google::GLOG_FATAL);
  for (int severity = 0; severity < google::NUM_SEVERITIES; ++severity)
    google::SetLogDestination(severity, "");
  google::AddLogSink(&Lines());
}

bool& LogToStdout() {
  static bool to_stdout = false;
  return to_stdout;
}

}  // namespace

dlcaffe::Context& CurrentContext() {
  Runtime& state = State();
  if (state.current) return *state.current;
  dlcaffe::RunOptions options = dlcaffe::RunOptions::FromEnvironment();
  const std::string spec = ResolveSpec(state);
  if (!spec.empty()) options.device = spec;
  std::unique_ptr<dlcaffe::Context> made = dlcaffe::Context::Create(options);
  const int index = made->info().flat_index;
  auto it = state.contexts.find(index);
  if (it == state.contexts.end()) {
    if (state.seed) made->Seed(*state.seed);
    it = state.contexts.emplace(index, made.release()).first;
  }
  state.current = it->second;
  return *state.current;
}

void FlushLog() {
  std::deque<std::string> lines = Lines().Take();
  if (lines.empty()) return;
  py::object stderr_stream = py::module_::import("sys").attr(LogToStdout() ? "stdout" : "stderr");
  if (stderr_stream.is_none()) return;
  for (const std::string& line : lines) stderr_stream.attr("write")(line + "\n");
  if (py::hasattr(stderr_stream, "flush")) stderr_stream.attr("flush")();
}

void BindRuntime(py::module_& m) {
  RouteLogging();
  static py::exception<dlcaffe::Error> error(m, "Error", PyExc_RuntimeError);
  error.doc() = "A user error from dlcaffe: a bad file, shape, layer or value, named in the message.";
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const dlcaffe::Error& e) {
      FlushLog();
      error(e.what());
    }
  });

  m.attr("TRAIN") = static_cast<int>(caffe::TRAIN);
  m.attr("TEST") = static_cast<int>(caffe::TEST);
  m.attr("__version__") = DLCAFFE_VERSION_STRING;

  m.def("set_mode_gpu", [] {
    State().mode = Mode::kGpu;
    State().device_spec.clear();
    State().current = nullptr;
  }, "New nets and solvers run on an OpenCL GPU (number set_device(i), 0 by default).");
  m.def("set_mode_cpu", [] {
    State().mode = Mode::kCpu;
    State().device_spec.clear();
    State().current = nullptr;
  }, "New nets and solvers run on an OpenCL CPU device (with several, e.g. PoCL and "
     "Intel's runtime, the faster by dlcaffe's measurement); an error at the next net if "
     "there is none.");
  m.def("set_device", [](py::object device) {
    Runtime& state = State();
    if (py::isinstance<py::str>(device)) {
      state.device_spec = device.cast<std::string>();
    } else {
      state.gpu_index = device.cast<int>();
      state.device_spec.clear();
      if (state.mode == Mode::kDefault) state.mode = Mode::kGpu;
    }
    state.current = nullptr;
  }, py::arg("device"),
        "GPU number i (as Caffe counts GPUs), or a dlcaffe device name: 'ocl:P:D' "
        "(platform P, device D) or a flat index as a string ('2').");
  m.def("set_random_seed", [](uint64_t seed) {
    State().seed = seed;
    for (auto& [index, context] : State().contexts) context->Seed(seed);
  }, py::arg("seed"), "Seeds fillers, dropout and data shuffling of nets made afterwards.");
  m.def("devices", [] {
    py::list list;
    for (const dlcaffe::DeviceInfo& info : dlcaffe::ListDevices()) {
      py::dict d;
      d["name"] = "ocl:" + std::to_string(info.platform_index) + ":" +
                  std::to_string(info.device_index);
      d["index"] = info.flat_index;
      d["device"] = info.name;
      d["platform"] = info.platform_name;
      d["vendor"] = info.vendor;
      d["driver"] = info.driver_version;
      d["type"] = info.is_gpu() ? "gpu" : info.is_cpu() ? "cpu" : "other";
      d["global_mem_bytes"] = info.global_mem_bytes;
      d["compute_units"] = info.compute_units;
      list.append(d);
    }
    return list;
  }, "Every OpenCL device: dicts with name ('ocl:P:D'), index, device, platform, "
     "vendor, driver, type ('gpu', 'cpu', 'other'), global_mem_bytes, compute_units.");
  m.def("current_device", [] { return CurrentContext().info().Describe(); },
        "The device new nets run on, described (made at first use).");
  m.def("layer_type_list", [] { return dlcaffe::LayerRegistry::Types(); },
        "Every registered layer type.");
  m.def("solver_type_list", [] { return dlcaffe::SolverRegistry::Types(); },
        "Every registered solver type.");
  m.def("init_log", [](int level, bool to_stdout) {
    FLAGS_minloglevel = level;
    LogToStdout() = to_stdout;
  }, py::arg("level") = 0, py::arg("stdout") = false,
        "Shows log lines of this level and above (0 INFO, 1 WARNING, 2 ERROR) on "
        "sys.stderr (sys.stdout with stdout=True).");
  m.def("log", [](const std::string& message) {
    LOG(INFO) << message;
    FlushLog();
  }, py::arg("message"), "Logs a line as dlcaffe's own lines are logged.");
  m.def("_flush_log", &FlushLog);
}

}  // namespace dlcaffe_python
