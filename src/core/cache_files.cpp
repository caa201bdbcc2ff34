#include "core/cache_files.hpp"

#include <glog/logging.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>

namespace dlcaffe {

namespace {

bool MakeDirs(const std::string& path) {
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos == path.size() || path[pos] == '/') {
      std::string prefix = path.substr(0, pos);
      if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return false;
    }
  }
  return true;
}

}  // namespace

std::string CacheDirectory(const char* env_var, const std::string& kind) {
  std::string dir;
  if (const char* setting = std::getenv(env_var)) {
    dir = setting;
    if (dir == "0" || dir == "off") dir.clear();
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME")) {
    dir = std::string(xdg) + "/dlcaffe/" + kind;
  } else if (const char* home = std::getenv("HOME")) {
    dir = std::string(home) + "/.cache/dlcaffe/" + kind;
  }
  if (!dir.empty() && !MakeDirs(dir)) {
    LOG(WARNING) << kind << " cache disabled: cannot create " << dir;
    dir.clear();
  }
  return dir;
}

std::string DeviceCacheKey(const DeviceInfo& device) {
  return device.platform_name + "|" + device.name + "|" + device.version + "|" +
         device.driver_version;
}

uint64_t Fnv1a(const std::string& text, uint64_t hash) {
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

}  // namespace dlcaffe
