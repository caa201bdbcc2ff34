// The OpenCL context every test runs on: the default device (DLCAFFE_DEVICE
// picks another), created once per test program.
#pragma once
#include <string>

#include "dlcaffe/context.hpp"

namespace dlcaffe {
namespace test {

Context& TestContext();

// Root of the source tree and of the build tree (set by ctest).
std::string SourceDir();
std::string BuildDir();

// A fresh empty directory under the system temp dir, removed at exit.
std::string TempDir();

// The whole file, byte for byte ("" if it cannot be read).
std::string ReadFileBytes(const std::string& path);

}  // namespace test
}  // namespace dlcaffe
