// The OpenCL context every test runs on: the default device (DLCAFFE_DEVICE
// picks another), created once per test program.
#pragma once
#include <string>

#include "dlcaffe/context.hpp"

namespace dlcaffe {
namespace test {

Context& TestContext();
// Releases the test context (its queue, programs and buffers) while the
// OpenCL driver is still whole: test_main calls it before main returns.
// Left to a static destructor at exit, the release raced the driver's own
// teardown (PoCL's threads): a segfault after every test had passed.
void ReleaseTestContext();

// The test context's run options (RunOptions), one switch at a time:
// SetTestOption sets one by name from its text form (RunOptions::Set);
// ResetTestOption puts it back to the environment's value, which the test
// program started with.
void SetTestOption(const std::string& name, const std::string& value);
void ResetTestOption(const std::string& name);

// Root of the source tree and of the build tree (set by ctest).
std::string SourceDir();
std::string BuildDir();

// A fresh empty directory under the system temp dir, removed at exit.
std::string TempDir();

// The whole file, byte for byte ("" if it cannot be read).
std::string ReadFileBytes(const std::string& path);

}  // namespace test
}  // namespace dlcaffe
