// dlcaffe bench --memory_plan: the plan's bytes in the log, the same output
// bit for bit as without it, and a clear error where it does not apply.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <regex>

#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

struct Result {
  int exit_code;
  std::string output;
};

// Runs the built tools/dlcaffe from the source root, stdout and stderr together.
Result RunDlcaffe(const std::string& args) {
  const std::string cmd =
      "cd '" + SourceDir() + "' && '" + BuildDir() + "/tools/dlcaffe' " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  Result r{-1, ""};
  if (!pipe) return r;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) r.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

void ExpectCleanError(const Result& r, const std::string& must_mention) {
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_LT(r.exit_code, 128) << "killed by a signal:\n" << r.output;
  EXPECT_TRUE(Contains(r.output, "dlcaffe: error: ")) << r.output;
  EXPECT_TRUE(Contains(r.output, must_mention)) << "missing '" << must_mention << "' in:\n"
                                                << r.output;
  EXPECT_FALSE(Contains(r.output, "Check failed")) << r.output;
}

// The "Output 'x': N values, sum S, bit hash H" line bench logs.
std::string OutputLine(const std::string& log) {
  std::smatch match;
  if (!std::regex_search(log, match, std::regex("Output '[^']*': [^\\n]*"))) return "";
  return match.str();
}

const char* kBenchForward =
    "bench --model=models/lenet/lenet.prototxt --mode=forward --iterations=1 --warmup=1";

}  // namespace

TEST(MemoryPlanCli, BenchForwardGivesTheSameOutputWithThePlan) {
  const Result plain = RunDlcaffe(kBenchForward);
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  const Result planned = RunDlcaffe(std::string(kBenchForward) + " --memory_plan");
  ASSERT_EQ(planned.exit_code, 0) << planned.output;
  EXPECT_FALSE(Contains(plain.output, "Inference memory plan")) << plain.output;
  EXPECT_TRUE(Contains(planned.output, "Inference memory plan for net 'LeNet': activations take "))
      << planned.output;
  EXPECT_TRUE(Contains(planned.output, "bench LeNet forward ")) << planned.output;
  ASSERT_FALSE(OutputLine(plain.output).empty()) << plain.output;
  EXPECT_EQ(OutputLine(plain.output), OutputLine(planned.output));
}

TEST(MemoryPlanCli, RefusedWhereItDoesNotApply) {
  ExpectCleanError(RunDlcaffe("bench --model=models/lenet/lenet.prototxt --mode=train "
                              "--memory_plan"),
                   "--memory_plan is for --mode=forward");
  ExpectCleanError(RunDlcaffe("time --model=models/lenet/lenet.prototxt --memory_plan"),
                   "--memory_plan applies to 'bench --mode=forward' only, not to 'time'");
}

}  // namespace test
}  // namespace dlcaffe
