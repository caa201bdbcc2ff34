#include "util/run_dlcaffe.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <regex>
#include <string>

#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

ToolResult RunDlcaffe(const std::string& args, const std::string& env) {
  return RunTool("dlcaffe", args, env);
}

ToolResult RunTool(const std::string& tool, const std::string& args, const std::string& env) {
  return RunCommand("cd '" + SourceDir() + "' && " + env + " '" + BuildDir() + "/tools/" + tool +
                    "' " + args);
}

void ExecDlcaffeInChild(const std::vector<std::string>& args, int output_fd) {
  dup2(output_fd, 1);
  dup2(output_fd, 2);
  if (chdir(SourceDir().c_str()) != 0) _exit(126);
  const std::string tool = BuildDir() + "/tools/dlcaffe";
  std::vector<char*> argv{const_cast<char*>(tool.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(tool.c_str(), argv.data());
  _exit(127);
}

ToolResult RunCommand(const std::string& command) {
  const std::string cmd = "{ " + command + "\n} 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  ToolResult r{-1, ""};
  if (!pipe) return r;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) r.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

double LastNumber(const std::string& log, const std::string& pattern) {
  const std::regex re(pattern);
  double value = -1;
  for (std::sregex_iterator it(log.begin(), log.end(), re), end; it != end; ++it)
    value = std::stod((*it)[1]);
  return value;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

void ExpectCleanError(const ToolResult& r, const std::string& must_mention) {
  ExpectCleanToolError(r, "dlcaffe", must_mention);
}

void ExpectCleanToolError(const ToolResult& r, const std::string& tool,
                          const std::string& must_mention) {
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_LT(r.exit_code, 128) << "killed by a signal:\n" << r.output;
  EXPECT_TRUE(Contains(r.output, tool + ": error: ")) << r.output;
  EXPECT_TRUE(Contains(r.output, must_mention)) << "missing '" << must_mention << "' in:\n"
                                                << r.output;
  EXPECT_FALSE(Contains(r.output, "Check failed")) << r.output;
  EXPECT_FALSE(Contains(r.output, "*** ")) << r.output;
}

}  // namespace test
}  // namespace dlcaffe
