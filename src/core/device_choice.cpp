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

// A small net with one of each kind of layer the benchmark nets spend their
// time in: 3x3 convolutions (32, 64 channels) with ReLU and max pooling, a
// depthwise 3x3 and a 1x1 convolution (MobileNet's block), average pooling
// and two fully connected layers (AlexNet's and VGG's classifier), on 16
// random 64 x 64 RGB images. Products and the small kernels between them
// (whose launch cost differs between implementations as much as their
// arithmetic) both weigh in. On a 2-core EPYC this probe ranked PoCL and
// Intel's runtime as the five benchmark nets did (Intel's faster in 5 of 6
// measurements, 3-26%); a GEMM alone, LeNet, and the net without the
// depthwise block and the wide classifier ranked them otherwise or called
// it a tie.
const char kProbeNet[] = R"(
name: "device_probe"
layer {
  name: "data" type: "DummyData" top: "data" top: "label"
  dummy_data_param {
    shape { dim: 16 dim: 3 dim: 64 dim: 64 } shape { dim: 16 }
    data_filler { type: "gaussian" std: 1 } data_filler { type: "constant" value: 3 }
  }
}
layer {
  name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
  convolution_param { num_output: 32 kernel_size: 3 pad: 1 weight_filler { type: "msra" } }
}
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer {
  name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
  pooling_param { pool: MAX kernel_size: 2 stride: 2 }
}
layer {
  name: "conv2" type: "Convolution" bottom: "pool1" top: "conv2"
  convolution_param { num_output: 64 kernel_size: 3 pad: 1 weight_filler { type: "msra" } }
}
layer { name: "relu2" type: "ReLU" bottom: "conv2" top: "conv2" }
layer {
  name: "pool2" type: "Pooling" bottom: "conv2" top: "pool2"
  pooling_param { pool: MAX kernel_size: 2 stride: 2 }
}
layer {
  name: "depthwise" type: "Convolution" bottom: "pool2" top: "depthwise"
  convolution_param {
    num_output: 64 group: 64 kernel_size: 3 pad: 1 weight_filler { type: "msra" }
  }
}
layer { name: "relu3" type: "ReLU" bottom: "depthwise" top: "depthwise" }
layer {
  name: "pointwise" type: "Convolution" bottom: "depthwise" top: "pointwise"
  convolution_param { num_output: 128 kernel_size: 1 weight_filler { type: "msra" } }
}
layer { name: "relu4" type: "ReLU" bottom: "pointwise" top: "pointwise" }
layer {
  name: "pool3" type: "Pooling" bottom: "pointwise" top: "pool3"
  pooling_param { pool: AVE kernel_size: 4 stride: 4 }
}
layer {
  name: "fc1" type: "InnerProduct" bottom: "pool3" top: "fc1"
  inner_product_param { num_output: 1024 weight_filler { type: "xavier" } }
}
layer { name: "relu5" type: "ReLU" bottom: "fc1" top: "fc1" }
layer {
  name: "fc2" type: "InnerProduct" bottom: "fc1" top: "fc2"
  inner_product_param { num_output: 10 weight_filler { type: "xavier" } }
}
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "fc2" bottom: "label" top: "loss" }
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
  for (int round = 0; round < 4; ++round) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 2; ++i) pass();
    ctx.Finish();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 2;
    best = round == 0 ? seconds : std::min(best, seconds);
  }
  return best;
}

}  // namespace dlcaffe
