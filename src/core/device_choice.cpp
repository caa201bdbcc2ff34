#include "core/device_choice.hpp"

#include <glog/logging.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/cache_files.hpp"
#include "dlcaffe/error.hpp"
#include "dlcaffe/net.hpp"

namespace dlcaffe {

namespace {

// LeNet's training net (models/lenet) at batch 64 on random images: products
// of several sizes and the small kernels between them, whose launch cost
// differs as much between implementations as their arithmetic (a GEMM alone
// picked the implementation that ran LeNet 2.8x slower).
const char kProbeNet[] = R"(
name: "device_probe"
layer {
  name: "data" type: "DummyData" top: "data" top: "label"
  dummy_data_param {
    shape { dim: 64 dim: 1 dim: 28 dim: 28 } shape { dim: 64 }
    data_filler { type: "gaussian" std: 1 } data_filler { type: "constant" value: 3 }
  }
}
layer {
  name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
  convolution_param { num_output: 20 kernel_size: 5 weight_filler { type: "xavier" } }
}
layer {
  name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
  pooling_param { pool: MAX kernel_size: 2 stride: 2 }
}
layer {
  name: "conv2" type: "Convolution" bottom: "pool1" top: "conv2"
  convolution_param { num_output: 50 kernel_size: 5 weight_filler { type: "xavier" } }
}
layer {
  name: "pool2" type: "Pooling" bottom: "conv2" top: "pool2"
  pooling_param { pool: MAX kernel_size: 2 stride: 2 }
}
layer {
  name: "ip1" type: "InnerProduct" bottom: "pool2" top: "ip1"
  inner_product_param { num_output: 500 weight_filler { type: "xavier" } }
}
layer { name: "relu1" type: "ReLU" bottom: "ip1" top: "ip1" }
layer {
  name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2"
  inner_product_param { num_output: 10 weight_filler { type: "xavier" } }
}
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" }
)";

// A measurement of one device: seconds, or negative where it failed.
struct Measured {
  DeviceInfo device;
  double seconds = -1.0;
};

std::string Label(const DeviceInfo& d) {
  return "ocl:" + std::to_string(d.platform_index) + ":" + std::to_string(d.device_index) +
         " " + d.name + " [" + d.platform_name + "]";
}

// The cache file's payload: one line per device, "<seconds> <key>" with
// seconds -1 for a device that failed the probe.
std::string Serialize(const std::vector<Measured>& measured) {
  std::ostringstream s;
  for (const auto& m : measured) {
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%.9g", m.seconds);
    s << seconds << " " << DeviceCacheKey(m.device) << "\n";
  }
  return s.str();
}

// Fills each measurement's seconds from a payload; false unless it names
// exactly these devices, in this order.
bool Deserialize(const std::string& payload, std::vector<Measured>* measured) {
  std::istringstream lines(payload);
  std::string line;
  size_t i = 0;
  while (std::getline(lines, line)) {
    if (i >= measured->size()) return false;
    const size_t space = line.find(' ');
    if (space == std::string::npos) return false;
    if (line.substr(space + 1) != DeviceCacheKey((*measured)[i].device)) return false;
    char* end = nullptr;
    const double seconds = std::strtod(line.c_str(), &end);
    if (end != line.c_str() + space || !std::isfinite(seconds)) return false;
    (*measured)[i++].seconds = seconds;
  }
  return i == measured->size();
}

}  // namespace

DeviceInfo DefaultDevice(const std::vector<DeviceInfo>& devices, const DeviceMeasure& measure,
                         const std::string& cache_dir, std::string* why) {
  DLC_REQUIRE(!devices.empty(), "DefaultDevice: no devices");
  auto say = [&](const std::string& text) {
    if (why) *why = text;
  };
  for (const auto& d : devices)
    if (d.is_gpu()) {
      say("the first GPU");
      return d;
    }
  std::vector<Measured> measured;
  for (const auto& d : devices)
    if (d.is_cpu()) measured.push_back({d, -1.0});
  if (measured.size() < 2) {
    say(measured.empty() ? "the first device (no GPU or CPU device)" : "the only CPU device");
    return measured.empty() ? devices[0] : measured[0].device;
  }

  std::string key;
  for (const auto& m : measured) key += DeviceCacheKey(m.device) + "\n";
  char name[64];
  std::snprintf(name, sizeof(name), "default-cpu-%016llx",
                static_cast<unsigned long long>(Fnv1a(key)));
  const std::string path = cache_dir.empty() ? "" : cache_dir + "/" + name;
  std::string payload;
  const bool remembered = !path.empty() && ReadCacheEntry(path, "device choice", &payload) &&
                          Deserialize(payload, &measured);
  if (!remembered) {
    for (auto& m : measured) {
      try {
        m.seconds = measure(m.device);
      } catch (const std::exception& e) {
        LOG(WARNING) << "device choice: " << Label(m.device)
                     << " could not run the measurement, so it is not the default: " << e.what();
        m.seconds = -1.0;
      }
    }
    if (!path.empty()) WriteCacheEntry(path, "device choice", Serialize(measured));
  }

  const Measured* best = nullptr;
  for (const auto& m : measured)
    if (m.seconds >= 0 && (!best || m.seconds < best->seconds)) best = &m;
  std::ostringstream s;
  s << "the fastest of " << measured.size() << " CPU devices by measurement (";
  for (size_t i = 0; i < measured.size(); ++i) {
    s << (i ? "; " : "") << Label(measured[i].device) << ": ";
    if (measured[i].seconds >= 0) {
      char ms[32];
      std::snprintf(ms, sizeof(ms), "%.2f ms", measured[i].seconds * 1e3);
      s << ms;
    } else {
      s << "failed";
    }
  }
  s << "; " << (remembered ? "remembered in " + path : path.empty() ? "measured now, not kept"
                                                                   : "measured now, kept in " + path)
    << ")";
  if (!best) {
    say("the first CPU device: none could be measured (" + s.str() + ")");
    return measured[0].device;
  }
  say(s.str());
  return best->device;
}

double MeasureDevice(const DeviceInfo& device) {
  RunOptions options = RunOptions::FromEnvironment();
  options.poison = false;  // DummyData fills its tops
  Context ctx(device, options);
  caffe::NetParameter param;
  const bool parsed = google::protobuf::TextFormat::ParseFromString(kProbeNet, &param);
  DLC_REQUIRE(parsed, "device choice: the probe net does not parse");
  param.mutable_state()->set_phase(caffe::TRAIN);
  Net net(param, ctx);
  // A training step's device work without the solver's update: the
  // gradients cleared, then forward and backward.
  auto pass = [&net] {
    net.ClearParamDiffs();
    net.ForwardBackward();
  };
  pass();  // kernels compiled or loaded, buffers allocated
  ctx.Finish();
  double best = 0;
  // The best round: other work on the machine only ever slows one down.
  for (int round = 0; round < 5; ++round) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 4; ++i) pass();
    ctx.Finish();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 4;
    best = round == 0 ? seconds : std::min(best, seconds);
  }
  return best;
}

}  // namespace dlcaffe
