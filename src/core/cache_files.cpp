#include "core/cache_files.hpp"

#include <glog/logging.h>
#include <sys/stat.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "dlcaffe/error.hpp"
#include "dlcaffe/io.hpp"
#include "dlcaffe/run_options.hpp"

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

std::string CacheDirectory(const std::string& setting, const std::string& kind) {
  std::string dir = setting;
  if (dir == "0" || dir == "off") {
    dir.clear();
  } else if (dir.empty()) {
    const std::string root = DefaultCacheRoot();
    if (!root.empty()) dir = root + "/" + kind;
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

namespace {
const char kSealMagic[] = "dlcaffe-cache 1 ";
}  // namespace

std::string SealCacheEntry(const std::string& payload) {
  char header[80];
  std::snprintf(header, sizeof(header), "%s%zu %016" PRIx64 "\n", kSealMagic, payload.size(),
                Fnv1a(payload));
  return header + payload;
}

bool UnsealCacheEntry(const std::string& bytes, std::string* payload, std::string* why) {
  const size_t magic = sizeof(kSealMagic) - 1;
  if (bytes.compare(0, magic, kSealMagic) != 0) {
    *why = "no dlcaffe-cache header (an old-format or foreign file)";
    return false;
  }
  const size_t newline = bytes.find('\n', magic);
  if (newline == std::string::npos || newline > magic + 60) {
    *why = "its header is cut short";
    return false;
  }
  unsigned long long length = 0;
  uint64_t checksum = 0;
  char extra = 0;
  const std::string header = bytes.substr(magic, newline - magic);
  if (std::sscanf(header.c_str(), "%llu %" SCNx64 "%c", &length, &checksum, &extra) != 2) {
    *why = "its header does not parse";
    return false;
  }
  char canonical[80];
  std::snprintf(canonical, sizeof(canonical), "%s%llu %016" PRIx64 "\n", kSealMagic, length,
                checksum);
  if (bytes.compare(0, newline + 1, canonical) != 0) {
    *why = "its header is not in canonical form";
    return false;
  }
  const size_t have = bytes.size() - newline - 1;
  if (have != length) {
    *why = "it holds " + std::to_string(have) + " bytes, its header says " +
           std::to_string(length);
    return false;
  }
  *payload = bytes.substr(newline + 1);
  if (Fnv1a(*payload) != checksum) {
    *why = "its checksum does not match its contents";
    return false;
  }
  return true;
}

bool ReadCacheEntry(const std::string& path, const std::string& kind, std::string* payload) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  const std::string bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  std::string why;
  if (UnsealCacheEntry(bytes, payload, &why)) return true;
  LOG(WARNING) << kind << " cache: ignoring corrupt entry " << path << ": " << why
               << "; it is rebuilt";
  return false;
}

void WriteCacheEntry(const std::string& path, const std::string& kind,
                     const std::string& payload) {
  try {
    WriteFileAtomically(path, SealCacheEntry(payload));
  } catch (const Error& e) {
    LOG(WARNING) << kind << " cache: " << e.what();
  }
}

}  // namespace dlcaffe
