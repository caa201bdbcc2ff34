// Transformer models from PyTorch through onnx_test_runner, forward and
// backward against float64 references (tools/onnx/make_transformer_tests.py):
// a small ViT and Swin, nn.TransformerEncoder pre- and post-norm, a GPT-style
// language model on int64 token ids (tied head, causal mask) and a
// LLaMA-style model (RMSNorm, rotary embedding, grouped-query attention,
// SwiGLU).
//
// Today's exporters live in PyTorch 2.x, which Debian does not have: their
// files, exported on the GPU host with PyTorch 2.11 by both exporters
// (TorchScript and torch.export) at opsets 17, 18 and 20, are committed under
// tests/import/transformer_models/ (README.md there says how). Debian's
// PyTorch 1.13 exports the same models here at test time.
#include <gtest/gtest.h>

#include <regex>

#include "dlcaffe/io.hpp"
#include "util/onnx_model_dirs.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/run_script.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

// Every model passes, with its gradients compared, none skipped.
void ExpectAllPassWithGradients(const std::string& dir, size_t expected) {
  const std::vector<std::string> models = OnnxModelDirs(dir);
  ASSERT_EQ(models.size(), expected) << dir;
  const ToolResult r = RunTool("onnx_test_runner", "'" + dir + "'");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, std::to_string(expected) + " passed, 0 failed, 0 skipped")) << r.output;
  for (const std::string& model : models) {
    const std::regex pass("PASS " + model + " \\(worst output error [^,]+, worst gradient error");
    EXPECT_TRUE(std::regex_search(r.output, pass)) << model << "\n" << r.output;
  }
}

TEST(TransformerOnnx, TodaysExportersFilesPassForwardAndBackward) {
  // 6 models x TorchScript at opsets 17, 18, 20 and torch.export at 18 and
  // 20, and at 17 for the three that onnx's converter takes down (README.md).
  ExpectAllPassWithGradients(SourceDir() + "/tests/import/transformer_models", 33);
}

TEST(TransformerOnnx, DebianPyTorchExportsPassForwardAndBackward) {
  const std::string dir = TempDir();
  const ToolResult made = RunCommand("cd '" + SourceDir() + "' && '" + TestPython() +
                                     "' tools/onnx/make_transformer_tests.py '" + dir +
                                     "' --exporter torchscript --opset 14 2>&1");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  ExpectAllPassWithGradients(dir, 6);
}

// A language model on token ids benches like a classifier: ids in range of
// its embedding, the loss over the vocabulary at every position.
TEST(TransformerOnnx, LanguageModelBenchesForwardAndTraining) {
  const std::string model = SourceDir() + "/tests/import/transformer_models/gpt_lm-dynamo-opset18/model.onnx";
  for (const std::string mode : {"forward", "train"}) {
    const ToolResult r = RunDlcaffe("bench --model='" + model + "' --mode=" + mode + " --iterations=2 --warmup=1");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(Contains(r.output, "bench ")) << r.output;
    EXPECT_TRUE(Contains(r.output, " " + mode + " ")) << r.output;
  }
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
