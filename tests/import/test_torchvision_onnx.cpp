// A few torchvision networks, exported to ONNX by PyTorch and checked
// through onnx_test_runner forward (eval) and backward (training mode)
// against PyTorch's float64 results, at small input sizes
// (tools/onnx/make_torchvision_tests.py --small). docs/onnx.md has all 19 at
// the script's default sizes, as a documented command.
#include <gtest/gtest.h>

#include <regex>

#include "util/run_dlcaffe.hpp"
#include "util/run_script.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

TEST(TorchvisionOnnx, SmallNetsPassForwardAndBackward) {
  // Convolutions and pooling (squeezenet), hard-swish, squeeze-excitation
  // and depthwise convolutions (mobilenet_v3_small), SiLU and BatchNorm
  // training through residual blocks (efficientnet_b0).
  const std::string nets = "squeezenet1_0,mobilenet_v3_small,efficientnet_b0";
  const std::string dir = TempDir();
  const std::string generate = "cd '" + SourceDir() + "' && '" + TestPython() + "' tools/onnx/make_torchvision_tests.py '" +
                               dir + "' --small --nets " + nets + " 2>&1";
  FILE* pipe = popen(generate.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string log;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) log.append(buffer, n);
  ASSERT_EQ(pclose(pipe), 0) << log;

  const ToolResult r = RunTool("onnx_test_runner", "--verbose '" + dir + "'");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "3 passed, 0 failed, 0 skipped")) << r.output;
  // Each net was checked in both directions: gradients were compared.
  for (const char* net : {"squeezenet1_0", "mobilenet_v3_small", "efficientnet_b0"}) {
    const std::regex pass(std::string("PASS ") + net + " \\(worst output error [^,]+, worst gradient error");
    EXPECT_TRUE(std::regex_search(r.output, pass)) << net << "\n" << r.output;
  }
  EXPECT_TRUE(Contains(r.output, "grad_input_0.pb")) << r.output;
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
