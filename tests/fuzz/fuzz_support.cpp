#include "fuzz_support.hpp"

#include <glog/logging.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

#include "dlcaffe/error.hpp"

namespace dlcaffe {
namespace fuzz {

Context& FuzzContext() {
  static std::unique_ptr<Context> ctx = [] {
    FLAGS_minloglevel = 2;  // errors only: rejected inputs would flood the output
    FLAGS_logtostderr = true;
    auto c = Context::Create();
    c->Seed(1701);
    // Small device limits, so that a fuzzed net asking for a huge blob is
    // refused by the buffer pool (the error a user's too-large net gets)
    // rather than allocated: 64 MiB per buffer, 512 MiB in all.
    c->pool().set_device_limits(64u << 20, 512u << 20);
    return c;
  }();
  return *ctx;
}

bool Verbose() {
  static const bool verbose = std::getenv("DLCAFFE_FUZZ_VERBOSE") != nullptr;
  return verbose;
}

namespace {
std::string ScratchRoot() {
  const char* tmp = std::getenv("TMPDIR");
  const std::string root = std::string(tmp ? tmp : "/tmp") + "/dlcaffe_fuzz_" +
                           std::to_string(getpid());
  std::filesystem::create_directories(root);
  return root;
}
}  // namespace

std::string WriteScratchFile(const std::string& name, const uint8_t* data, size_t size) {
  static const std::string root = ScratchRoot();
  const std::string path = root + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

std::string ScratchDirectory(const std::string& name) {
  static const std::string root = ScratchRoot();
  const std::string path = root + "/" + name;
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path;
}

}  // namespace fuzz
}  // namespace dlcaffe
