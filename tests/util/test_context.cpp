#include "util/test_context.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <memory>
#include <vector>

namespace dlcaffe {
namespace test {

namespace {
std::unique_ptr<Context>& TestContextHolder() {
  static std::unique_ptr<Context> ctx;
  return ctx;
}
}  // namespace

Context& TestContext() {
  static Context& ctx = []() -> Context& {  // thread-safe, once
    std::unique_ptr<Context>& holder = TestContextHolder();
    holder = Context::Create();
    holder->Seed(1701);
    return *holder;
  }();
  return ctx;
}

void ReleaseTestContext() { TestContextHolder().reset(); }

void SetTestOption(const std::string& name, const std::string& value) {
  RunOptions options = TestContext().options();
  options.Set(name, value);
  TestContext().set_options(options);
}

void ResetTestOption(const std::string& name) {
  SetTestOption(name, RunOptions::FromEnvironment().Get(name));
}

std::string SourceDir() {
  const char* dir = std::getenv("DLCAFFE_SOURCE_DIR");
  return dir ? dir : ".";
}

std::string BuildDir() {
  const char* dir = std::getenv("DLCAFFE_BUILD_DIR");
  return dir ? dir : "build";
}

namespace {
struct TempDirs {
  std::vector<std::string> dirs;
  ~TempDirs() {
    std::error_code ec;
    for (const auto& d : dirs) std::filesystem::remove_all(d, ec);
  }
};
}  // namespace

std::string TempDir() {
  static TempDirs temp_dirs;
  std::string pattern =
      (std::filesystem::temp_directory_path() / "dlcaffe_test_XXXXXX").string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  char* made = mkdtemp(buffer.data());
  if (!made) return "";
  temp_dirs.dirs.push_back(made);
  return made;
}

std::string ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace test
}  // namespace dlcaffe
