// bench/bench_nets.sh as the README shows it, at a tiny size: it runs, and
// its tables have a row for every net and mode, each net's best modes and
// the training step's device memory;
// bench/attention_bench.sh gives its row in each mode, causal or not.
// (Speed is never judged here: benchmarks are for the GPU host.) PyTorch is
// the CPU reference in the same command, in the modes PyTorch's CPU build
// runs (float32, and tf32, which on a CPU is float32 too; its CPU autocast
// lacks float16 and some bfloat16 backward passes).
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "util/run_script.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

TEST(BenchScripts, BenchNetsGivesEveryModeAndTheBestOfEach) {
  const std::string python = TestPython();
  const ToolResult torch = RunCommand(python + " -c 'import torch, torchvision' 2>&1");
  ASSERT_EQ(torch.exit_code, 0) << python << " has no torch/torchvision (scripts/install_deps.sh "
                             << "installs them): " << torch.output;
  const std::string command =
      "cd " + SourceDir() + " && BATCH=1 ITERS=1 WARMUP=1 NETS=mobilenet_v2 "
      "MODES='float32 tf32' DLCAFFE=" + BuildDir() + "/tools/dlcaffe "
      "TORCH_REF='" + python + " bench/torch_ref.py --device cpu --iters 1 --threads 2' "
      "bash bench/bench_nets.sh 2>&1";
  const ToolResult r = RunCommand(command);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string number = R"(\d+\.\d\d)";
  for (const char* mode : {"float32", "tf32"}) {
    // net | mode | ours fwd | torch fwd | ratio | ours train | torch train | ratio
    const std::regex row("\\| mobilenet_v2 \\| " + std::string(mode) + " \\| " + number +
                         " \\| " + number + " \\| " + number + " \\| " + number + " \\| " +
                         number + " \\| " + number + " \\|");
    EXPECT_TRUE(std::regex_search(r.output, row)) << "no full row for " << mode << ":\n"
                                                  << r.output;
  }
  for (const char* pass : {"forward", "train"}) {
    const std::regex best("\\| mobilenet_v2 \\| " + std::string(pass) + " \\| " + number +
                          " \\((float32|tf32)\\) \\| " + number + " \\((float32|tf32)\\) \\| " +
                          number + " \\|");
    EXPECT_TRUE(std::regex_search(r.output, best)) << "no best-mode row for " << pass << ":\n"
                                                   << r.output;
  }
  // The training step's device memory: ours always, PyTorch's on CUDA only.
  for (const char* mode : {"float32", "tf32"}) {
    const std::regex memory("\\| mobilenet_v2 \\| " + std::string(mode) +
                            R"( \| \d+\.\d \| (n/a|\d+\.\d) \|)");
    EXPECT_TRUE(std::regex_search(r.output, memory)) << "no memory row for " << mode << ":\n"
                                                     << r.output;
  }
  EXPECT_EQ(r.output.find("failed"), std::string::npos) << r.output;
}

// A mode the script does not know is refused before anything runs.
TEST(BenchScripts, BenchNetsRefusesAnUnknownMode) {
  const ToolResult r = RunCommand("cd " + SourceDir() + " && MODES='float32 int8' DLCAFFE=" +
                                  BuildDir() + "/tools/dlcaffe bash bench/bench_nets.sh 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("unknown mode 'int8'"), std::string::npos) << r.output;
}

// attention_bench.sh without PyTorch's reference (SDPA needs CUDA): a row
// of figures per length, in a 16-bit mode and in float32, causal and not.
TEST(BenchScripts, AttentionBenchGivesItsRowInEachMode) {
  for (const auto& [mode, causal] : {std::pair{"bfloat16", "0"}, std::pair{"float32", "1"}}) {
    const ToolResult r = RunCommand("cd " + SourceDir() + " && B=1 H=2 D=16 ITERS=1 MODE=" + mode +
                                    " CAUSAL=" + causal + " DLCAFFE=" + BuildDir() +
                                    "/tools/dlcaffe bash bench/attention_bench.sh 40 2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find(std::string("causal ") + causal + ", mode " + mode),
              std::string::npos)
        << r.output;
    const std::regex row(R"(\n40 +\d+\.\d{3} +\d+\.\d{3} +\d+\.\d\d +dlcaffe)");
    EXPECT_TRUE(std::regex_search(r.output, row)) << "no row for T 40:\n" << r.output;
  }
  const ToolResult refused = RunCommand("cd " + SourceDir() + " && MODE=int8 DLCAFFE=" +
                                        BuildDir() + "/tools/dlcaffe bash bench/attention_bench.sh 2>&1");
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("unknown mode 'int8'"), std::string::npos) << refused.output;
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
