// tools/mma_probe --local_limit: one line per size of __local argument,
// each saying whether the launch ran (with the right sums) or what the
// driver returned. On PoCL every size runs (its local memory is the host's);
// on NVIDIA's OpenCL, 48 KiB and above are refused (docs/benchmarks.md).
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "util/run_dlcaffe.hpp"

namespace dlcaffe {
namespace test {

TEST(MmaProbe, LocalLimitAnswersEverySize) {
  const ToolResult r = RunTool("mma_probe", "--local_limit");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("local_limit: CL_DEVICE_LOCAL_MEM_SIZE "), std::string::npos)
      << r.output;
  for (int kib : {16, 32, 47, 48, 64, 200, 228}) {
    const std::regex line("local_limit " + std::to_string(kib) +
                          " KiB: (runs|refused \\(CL_[A-Z_]+\\))\n");
    EXPECT_TRUE(std::regex_search(r.output, line)) << kib << " KiB\n" << r.output;
  }
  // OpenCL's smallest local memory (16 KiB, embedded profile) always runs;
  // a launch that ran never gives wrong sums.
  EXPECT_NE(r.output.find("local_limit 16 KiB: runs\n"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("WRONG"), std::string::npos) << r.output;
}

}  // namespace test
}  // namespace dlcaffe
