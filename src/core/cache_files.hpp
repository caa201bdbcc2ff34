// Where dlcaffe keeps files that only speed it up (compiled kernels, GEMM
// tuning results): a directory per kind under the user's cache, moved or
// disabled by a run option, and the hash that names the files.
// Internal to the library.
#pragma once
#include <cstdint>
#include <string>

#include "dlcaffe/context.hpp"

namespace dlcaffe {

// The directory for `kind` ("kernels", "tuning"): `setting` (a run option:
// "0" or "off": none), or where it is empty DefaultCacheRoot()/<kind>.
// Created if missing; "" if disabled or it cannot be created (with a
// warning).
std::string CacheDirectory(const std::string& setting, const std::string& kind);

// What identifies a device's compiled code and measured speeds: platform,
// device name, OpenCL version and driver version.
std::string DeviceCacheKey(const DeviceInfo& device);

// FNV-1a: a stable 64-bit hash of text (file names of cache entries).
uint64_t Fnv1a(const std::string& text, uint64_t hash = 1469598103934665603ull);

// On-disk cache entries carry their length and checksum, so that a file that
// was truncated, bit-flipped, written by an older version or by anything else
// is found out and rebuilt instead of loaded. An entry is one header line,
// "dlcaffe-cache 1 <payload bytes> <FNV-1a of the payload, 16 hex>\n", then
// the payload. Entries are written with WriteFileAtomically, so that
// processes sharing a cache never see a torn file; the checksum guards
// against everything else.
std::string SealCacheEntry(const std::string& payload);
// The payload of a sealed entry; false, with the reason in `why`, if `bytes`
// is not one (an old-format entry included).
bool UnsealCacheEntry(const std::string& bytes, std::string* payload, std::string* why);
// Reads the entry at `path`: false if there is none (silently) or it is not a
// valid sealed entry (with a warning naming the file; the caller rebuilds it
// and writes it anew).
bool ReadCacheEntry(const std::string& path, const std::string& kind, std::string* payload);
// Writes a sealed entry atomically; failures are warnings (a cache only
// speeds things up).
void WriteCacheEntry(const std::string& path, const std::string& kind,
                     const std::string& payload);

}  // namespace dlcaffe
