// ONNX's own backend node tests (Debian's libonnx-testdata) through
// onnx_test_runner: every test whose ops the importer supports must pass;
// unsupported ones are skipped with their reason. docs/onnx.md keeps the
// counts; the floor below is the count when it was last raised, so that a
// change which turns passing tests into skips is caught too.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <regex>
#include <sstream>

#include "util/onnx_model_builder.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

const char kNodeTests[] = "/usr/share/libonnx-testdata/data/node";

TEST(OnnxConformance, NodeTestsOfSupportedOpsPass) {
  const ToolResult r = RunTool("onnx_test_runner", kNodeTests);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex("\\n(\\d+) passed, (\\d+) failed, (\\d+) skipped")))
      << r.output;
  const int passed = std::stoi(m[1]), failed = std::stoi(m[2]);
  // Every failure, by name and reason.
  std::stringstream lines(r.output);
  std::string line, failures;
  while (std::getline(lines, line))
    if (line.rfind("FAIL ", 0) == 0) failures += line + "\n";
  EXPECT_EQ(failed, 0) << failures;
  EXPECT_GE(passed, 466) << "fewer node tests pass than before:\n" << r.output;
  EXPECT_EQ(r.exit_code, failed == 0 ? 0 : 1);
}

// A test directory for y = x W^T + b (Gemm, transB) with a forward set and a
// training set (dy, and the closed-form gradients), off by `error` in dW.
std::string GemmTestDir(float error) {
  const std::string dir = TempDir();
  OnnxModelBuilder m;
  m.Input("x", {2, 3});
  const std::vector<float> w = {0.5f, -1.f, 2.f, 1.5f, 0.25f, -0.75f}, b = {0.1f, -0.2f};
  m.Initializer("W", {2, 3}, w);
  m.Initializer("b", {2}, b);
  OnnxModelBuilder::SetInt(m.Node("Gemm", {"x", "W", "b"}, {"y"}), "transB", 1);
  m.Output("y");
  m.Save(dir);
  const std::vector<float> x = {1, 2, 3, -1, 0.5f, 2}, dy = {1, -2, 0.5f, 3};
  std::vector<float> y(4), dx(6, 0.f), dw(6, 0.f), db(2, 0.f);
  for (int n = 0; n < 2; ++n)
    for (int o = 0; o < 2; ++o) {
      y[n * 2 + o] = b[o];
      for (int k = 0; k < 3; ++k) {
        y[n * 2 + o] += x[n * 3 + k] * w[o * 3 + k];
        dx[n * 3 + k] += dy[n * 2 + o] * w[o * 3 + k];
        dw[o * 3 + k] += dy[n * 2 + o] * x[n * 3 + k];
      }
      db[o] += dy[n * 2 + o];
    }
  dw[4] += error;
  for (const char* set : {"/test_data_set_0", "/test_data_set_1"}) {
    mkdir((dir + set).c_str(), 0755);
    WriteTensorFile(dir + set + "/input_0.pb", "x", {2, 3}, x);
    WriteTensorFile(dir + set + "/output_0.pb", "y", {2, 2}, y);
  }
  WriteTensorFile(dir + "/test_data_set_1/grad_output_0.pb", "y", {2, 2}, dy);
  WriteTensorFile(dir + "/test_data_set_1/grad_input_0.pb", "x", {2, 3}, dx);
  WriteTensorFile(dir + "/test_data_set_1/grad_W.pb", "W", {2, 3}, dw);
  WriteTensorFile(dir + "/test_data_set_1/grad_b.pb", "b", {2}, db);
  return dir;
}

TEST(OnnxConformance, RunnerChecksOutputsAndGradientsAndCanFail) {
  const ToolResult good = RunTool("onnx_test_runner", GemmTestDir(0.f));
  EXPECT_EQ(good.exit_code, 0) << good.output;
  EXPECT_TRUE(Contains(good.output, "1 passed, 0 failed, 0 skipped")) << good.output;
  // dW off by 0.05 in one element of norm ~6: a relative L2 error above 1e-2.
  const ToolResult bad = RunTool("onnx_test_runner", GemmTestDir(0.5f));
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_TRUE(Contains(bad.output, "FAIL")) << bad.output;
  EXPECT_TRUE(Contains(bad.output, "grad_W.pb")) << bad.output;
  EXPECT_TRUE(Contains(bad.output, "0 passed, 1 failed, 0 skipped")) << bad.output;
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
