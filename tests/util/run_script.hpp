// Runs the Python scripts of tools/extra from a test (with Debian's python3,
// or DLCAFFE_PYTHON), and the check that a user error ended cleanly.
#pragma once
#include <string>

#include "util/run_dlcaffe.hpp"

namespace dlcaffe {
namespace test {

// The interpreter with the Python packages the tests use (torch,
// torchvision, onnx, matplotlib): DLCAFFE_PYTHON where set (the GPU host's,
// for scripts/gpu_check.sh), else Debian's /usr/bin/python3.
std::string TestPython();

// python3 tools/extra/`script` `args`, run from the source root with `env`
// (VAR=value ...) added to its environment.
ToolResult RunScript(const std::string& script, const std::string& args,
                     const std::string& env = "");

// One "`script`: error: " message that mentions `must_mention`, exit status
// 1, no Python traceback.
void ExpectCleanScriptError(const ToolResult& r, const std::string& script,
                            const std::string& must_mention);

}  // namespace test
}  // namespace dlcaffe
