// Where dlcaffe keeps files that only speed it up (compiled kernels, GEMM
// tuning results): a directory per kind under the user's cache, overridable
// or disabled by an environment variable, and the hash that names the files.
// Internal to the library.
#pragma once
#include <cstdint>
#include <string>

#include "dlcaffe/context.hpp"

namespace dlcaffe {

// The directory for `kind` ("kernels", "tuning"): the value of `env_var` if
// set ("", "0" or "off": none), else $XDG_CACHE_HOME/dlcaffe/<kind>, else
// $HOME/.cache/dlcaffe/<kind>. Created if missing; "" if disabled or it
// cannot be created (with a warning).
std::string CacheDirectory(const char* env_var, const std::string& kind);

// What identifies a device's compiled code and measured speeds: platform,
// device name, OpenCL version and driver version.
std::string DeviceCacheKey(const DeviceInfo& device);

// FNV-1a: a stable 64-bit hash of text (file names of cache entries).
uint64_t Fnv1a(const std::string& text, uint64_t hash = 1469598103934665603ull);

}  // namespace dlcaffe
