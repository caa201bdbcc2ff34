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

#include <filesystem>
#include <regex>
#include <set>

#include "dlcaffe/io.hpp"
#include "dlcaffe/onnx_import.hpp"
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

// The parameters a training import trains: the names of the gradient files
// (a parameter's, not the input's or output's).
std::set<std::string> ReferenceParameters(const std::string& model_dir) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(model_dir + "/test_data_set_1")) {
    const std::string file = entry.path().filename().string();
    const std::regex grad("grad_(.+)\\.pb");
    std::smatch m;
    if (std::regex_match(file, m, grad) && m[1] != "input_0" && m[1] != "output_0")
      names.insert(m[1]);
  }
  return names;
}

// A plain training import (no list of parameters given) of today's
// exporters' files: torch.export's files say which initializers are
// parameters, so exactly the references' parameters train (its buffers and
// folded constants do not: llama_block's rotary tables, the causal masks);
// and every attention fuses into one Attention layer, whichever exporter
// wrote it -- swin's too, its trained relative-position bias (and shifted
// windows' mask) becoming the Attention's mask bottom, which takes the
// gradient back to the bias table.
TEST(TransformerOnnx, TrainingImportsTrainTheParametersAndFuseEveryAttention) {
  const std::string dir = SourceDir() + "/tests/import/transformer_models";
  for (const std::string& model : OnnxModelDirs(dir)) {
    SCOPED_TRACE(model);
    OnnxImportOptions options;
    options.training = true;
    const OnnxModel imported = ImportOnnx(dir + "/" + model + "/model.onnx", options);
    std::set<std::string> trained;
    int attention = 0, softmax = 0;
    for (const auto& layer : imported.net.layer()) {
      for (const auto& spec : layer.param())
        if (spec.has_name() && spec.lr_mult() != 0.f) trained.insert(spec.name());
      attention += layer.type() == "Attention";
      softmax += layer.type() == "Softmax";
    }
    const bool swin = model.rfind("swin_mini", 0) == 0;
    EXPECT_EQ(attention, swin ? 3 : 2);
    EXPECT_EQ(softmax, 0);
    // TorchScript's files do not tell buffers from parameters: its rotary
    // tables train unless frozen (OnnxImportOptions::frozen_initializers).
    if (model.find("-dynamo-") != std::string::npos || model.rfind("llama_block", 0) != 0)
      EXPECT_EQ(trained, ReferenceParameters(dir + "/" + model));
  }
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
