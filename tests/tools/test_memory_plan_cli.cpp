// dlcaffe bench --memory_plan: the plan's bytes in the log, the same output
// bit for bit as without it, and a clear error where it does not apply.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <regex>

#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

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
  const ToolResult plain = RunDlcaffe(kBenchForward);
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  const ToolResult planned = RunDlcaffe(std::string(kBenchForward) + " --memory_plan");
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
