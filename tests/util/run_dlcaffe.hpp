// Runs the built dlcaffe tool from a test, and the check that a user error
// ended cleanly (shared by the CLI, memory-plan and model-zoo tests).
#pragma once
#include <string>
#include <vector>

namespace dlcaffe {
namespace test {

struct ToolResult {
  int exit_code;       // 128 + signal when killed
  std::string output;  // stdout and stderr together
};

// build/tools/dlcaffe `args`, run from the source root with `env` (VAR=value
// ...) added to its environment.
ToolResult RunDlcaffe(const std::string& args, const std::string& env = "");
// Any built tool: build/tools/`tool` `args`, the same way.
ToolResult RunTool(const std::string& tool, const std::string& args, const std::string& env = "");

// In a forked child: stdout and stderr to `output_fd`, the source root as the
// working directory, then build/tools/dlcaffe `args` in place of the child
// (for tests that need the pid: signals, resource limits). Never returns.
[[noreturn]] void ExecDlcaffeInChild(const std::vector<std::string>& args, int output_fd);

// Any shell command (run by /bin/sh), stdout and stderr together.
ToolResult RunCommand(const std::string& command);

bool Contains(const std::string& text, const std::string& part);

// The number captured by the last match of `pattern` (one group) in a log;
// -1 when nothing matches ("Test net output #0: accuracy = ([0-9.eE+-]+)").
double LastNumber(const std::string& log, const std::string& pattern);

// A user error: one "dlcaffe: error:" message that mentions `must_mention`,
// a non-zero exit, no signal, no CHECK failure or abort trace.
void ExpectCleanError(const ToolResult& r, const std::string& must_mention);
// The same for another tool, whose messages start with "`tool`: error: ".
void ExpectCleanToolError(const ToolResult& r, const std::string& tool,
                          const std::string& must_mention);

}  // namespace test
}  // namespace dlcaffe
