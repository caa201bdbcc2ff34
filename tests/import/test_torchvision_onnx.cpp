// A few torchvision networks, exported to ONNX by PyTorch and checked
// through onnx_test_runner forward (eval) and backward (training mode)
// against PyTorch's float64 results, at small input sizes
// (tools/onnx/make_torchvision_tests.py --small). docs/onnx.md has all 19 at
// the script's default sizes, as a documented command. And one in 16-bit
// storage (onnx_test_runner --storage) against the bounds the script derives
// from PyTorch autocast's distance (--dtypes).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "util/run_dlcaffe.hpp"
#include "util/run_script.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

// make_torchvision_tests.py into `dir` with `args`; its output.
std::string Generate(const std::string& dir, const std::string& args) {
  const ToolResult r = RunCommand("cd '" + SourceDir() + "' && '" + TestPython() +
                                  "' tools/onnx/make_torchvision_tests.py '" + dir + "' " + args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.output;
}

bool Exists(const std::string& path) { return std::ifstream(path).good(); }

// The file names a tolerances*.json gives bounds for.
std::set<std::string> BoundFiles(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  std::set<std::string> files;
  const std::regex key("\"([^\"]+)\"\\s*:");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), key); it != std::sregex_iterator(); ++it)
    files.insert((*it)[1]);
  return files;
}

TEST(TorchvisionOnnx, SmallNetsPassForwardAndBackward) {
  // Convolutions and pooling (squeezenet), hard-swish, squeeze-excitation
  // and depthwise convolutions (mobilenet_v3_small), SiLU and BatchNorm
  // training through residual blocks (efficientnet_b0).
  const std::string nets = "squeezenet1_0,mobilenet_v3_small,efficientnet_b0";
  const std::string dir = TempDir();
  const std::string log = Generate(dir, "--small --nets " + nets);
  ASSERT_FALSE(HasFailure()) << log;

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

// Segmentation (issue 50, item 5): FCN's dilated ResNet-50 with its
// bilinear upsampling, DeepLabV3's atrous pyramid pooling on MobileNetV3
// (global pooling broadcast back), forward and backward against PyTorch.
TEST(TorchvisionOnnx, SegmentationNetsPassForwardAndBackward) {
  const std::string dir = TempDir();
  const std::string log = Generate(dir, "--small --nets fcn_resnet50,deeplabv3_mobilenet_v3_large");
  ASSERT_FALSE(HasFailure()) << log;
  const ToolResult r = RunTool("onnx_test_runner", "--verbose '" + dir + "'");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "2 passed, 0 failed, 0 skipped")) << r.output;
  for (const char* net : {"fcn_resnet50", "deeplabv3_mobilenet_v3_large"}) {
    const std::regex pass(std::string("PASS ") + net + " \\(worst output error [^,]+, worst gradient error");
    EXPECT_TRUE(std::regex_search(r.output, pass)) << net << "\n" << r.output;
  }
}

// --dtypes: one float64 reference, a bound file per 16-bit type with the
// same files as tolerances.json; --storage runs every layer but the Input in
// that type against them. bfloat16's bounds come from CPU autocast where
// there is no GPU; float16's need CUDA autocast with Debian's torch 1.13
// (its CPU autocast takes only bfloat16): without them the FLOAT16 run
// fails, saying which file is missing, rather than judge 16 bits by the
// float32 bounds.
TEST(TorchvisionOnnx, SixteenBitStorageAgainstAutocastBounds) {
  const std::string dir = TempDir();
  const std::string log =
      Generate(dir, "--small --nets squeezenet1_0 --dtypes float32,float16,bfloat16");
  ASSERT_FALSE(HasFailure());
  const std::string net = dir + "/squeezenet1_0";
  for (const char* set : {"/test_data_set_0/", "/test_data_set_1/"}) {
    const std::set<std::string> float32 = BoundFiles(net + set + "tolerances.json");
    EXPECT_GT(float32.size(), 0u) << set;
    EXPECT_EQ(BoundFiles(net + set + "tolerances_bfloat16.json"), float32) << set << "\n" << log;
    if (Exists(net + set + "tolerances_float16.json"))
      EXPECT_EQ(BoundFiles(net + set + "tolerances_float16.json"), float32) << set;
  }

  const ToolResult bf16 = RunTool("onnx_test_runner", "--verbose --storage BFLOAT16 '" + dir + "'");
  EXPECT_EQ(bf16.exit_code, 0) << bf16.output;
  EXPECT_TRUE(Contains(bf16.output, "1 passed, 0 failed, 0 skipped (BFLOAT16 storage)")) << bf16.output;
  // Every layer but the Input stores 16 bits (squeezenet's all have 16-bit kernels).
  EXPECT_TRUE(std::regex_search(bf16.output, std::regex("test_data_set_1: \\d+ of \\d+ layers store "
                                                         "BFLOAT16, 1 Convert layers; in FLOAT: Input x1\n")))
      << bf16.output;
  EXPECT_TRUE(Contains(bf16.output, "grad_input_0.pb")) << bf16.output;

  const ToolResult f16 = RunTool("onnx_test_runner", "--storage FLOAT16 '" + dir + "'");
  if (Exists(net + "/test_data_set_0/tolerances_float16.json")) {
    EXPECT_EQ(f16.exit_code, 0) << f16.output;
    EXPECT_TRUE(Contains(f16.output, "1 passed, 0 failed, 0 skipped (FLOAT16 storage)")) << f16.output;
  } else {
    EXPECT_TRUE(Contains(log, "float16: skipped")) << log;
    EXPECT_NE(f16.exit_code, 0) << f16.output;
    EXPECT_TRUE(Contains(f16.output, "no tolerances_float16.json: the bounds for FLOAT16 storage"))
        << f16.output;
  }

  const ToolResult bad = RunTool("onnx_test_runner", "--storage HALF '" + dir + "'");
  ExpectCleanToolError(bad, "onnx_test_runner", "--storage HALF is not a storage type");
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
