// Which device a run takes when nothing names one. A GPU, where there is
// one. On a machine with several CPU devices (two OpenCL implementations for
// the same processor, e.g. PoCL and Intel's CPU runtime) their speed differs
// by machine and by work, and no device query says which is faster (on a
// 2-core AVX-512 EPYC, PoCL trained LeNet 1.3x faster and Intel's runtime
// the five benchmark nets 1.1-1.5x: docs/benchmarks.md), so the choice is
// measured: a small net's training pass on each, the fastest
// taken, remembered per set of devices in the tuning cache.
// Internal to the library.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "dlcaffe/context.hpp"

namespace dlcaffe {

// Seconds one device takes for the probe's work (MeasureDevice below); it
// throws if the device cannot run it.
using DeviceMeasure = std::function<double(const DeviceInfo&)>;

// The default among `devices` (not empty): the first GPU; else the only CPU
// device; else, with several CPU devices, the one `measure` finds fastest,
// remembered in `cache_dir` ("": measured every time) keyed by the CPU
// devices' DeviceCacheKey. A device whose measurement throws is not chosen
// (a warning says why) unless none could be measured (then the first).
// `why`, if given, says how the choice was made (with the figures).
DeviceInfo DefaultDevice(const std::vector<DeviceInfo>& devices, const DeviceMeasure& measure,
                         const std::string& cache_dir, std::string* why = nullptr);

// The probe: seconds per training pass (gradients cleared, forward,
// backward) of a small net on 16 random 64 x 64 images: convolutions,
// a depthwise block, pooling, fully connected layers (device_choice.cpp says
// why this one), the best of four rounds of two
// after one untimed pass (kernels compiled or loaded from the cache).
double MeasureDevice(const DeviceInfo& device);

}  // namespace dlcaffe
