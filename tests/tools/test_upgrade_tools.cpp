// Caffe's upgrade tools: upgrade_net_proto_text, upgrade_net_proto_binary and
// upgrade_solver_proto_text, with Caffe's arguments. Their outputs load and
// run like the current format; bad input is one clear message and a
// non-zero exit.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>

#include "dlcaffe/io.hpp"
#include "dlcaffe/net.hpp"
#include "import/legacy_lenet.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

// "<tool>: error:" once, naming `must_mention` (util/run_dlcaffe).
void ExpectToolError(const std::string& tool, const ToolResult& r,
                     const std::string& must_mention) {
  ExpectCleanToolError(r, tool, must_mention);
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  static const std::string dir = TempDir();
  const std::string path = dir + "/" + name;
  WriteFileAtomically(path, text);
  return path;
}

std::string Dir() {
  static const std::string dir = TempDir();
  return dir;
}

}  // namespace

// The V1 LeNet and its V1 weights, upgraded by the tools, run exactly like
// the model zoo's LeNet with the same weights.
TEST(UpgradeTools, V1LenetThroughTheToolsForwardsLikeV2) {
  const auto weights = LenetWeights(21);
  const std::string v1_net = WriteTemp("v1_lenet.prototxt", V1LenetText());
  const std::string v1_weights = Dir() + "/v1_lenet.caffemodel";
  WriteProtoToBinaryFile(V1LenetCaffemodel(weights), v1_weights);
  const std::string v2_weights = Dir() + "/v2_lenet.caffemodel";
  WriteProtoToBinaryFile(V2LenetCaffemodel(weights), v2_weights);
  const std::string net_out = Dir() + "/upgraded_lenet.prototxt";
  const std::string weights_out = Dir() + "/upgraded_lenet.caffemodel";

  ToolResult text = RunTool("upgrade_net_proto_text", v1_net + " " + net_out);
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_TRUE(Contains(text.output, "Attempting to upgrade input file specified using deprecated "
                                    "V1LayerParameter: " + v1_net))
      << text.output;
  EXPECT_TRUE(Contains(text.output, "Successfully upgraded file specified using deprecated "
                                    "V1LayerParameter"))
      << text.output;
  EXPECT_TRUE(Contains(text.output, "Wrote upgraded NetParameter text proto to " + net_out))
      << text.output;
  ToolResult binary = RunTool("upgrade_net_proto_binary", v1_weights + " " + weights_out);
  ASSERT_EQ(binary.exit_code, 0) << binary.output;
  EXPECT_TRUE(Contains(binary.output, "V1LayerParameter: " + v1_weights)) << binary.output;

  // The outputs are in the current format.
  caffe::NetParameter upgraded_net, upgraded_weights;
  ReadProtoFromTextFile(net_out, &upgraded_net);
  EXPECT_EQ(upgraded_net.layers_size(), 0);
  EXPECT_EQ(upgraded_net.input_size(), 0);
  EXPECT_EQ(upgraded_net.layer_size(), 9);
  EXPECT_EQ(upgraded_net.layer(1).type(), "Convolution");
  EXPECT_EQ(upgraded_net.layer(1).param(1).lr_mult(), 2.f);
  ReadProtoFromBinaryFile(weights_out, &upgraded_weights);
  EXPECT_EQ(upgraded_weights.layers_size(), 0);
  EXPECT_EQ(upgraded_weights.input_size(), 0);
  ASSERT_EQ(upgraded_weights.layer_size(), 8);
  EXPECT_EQ(upgraded_weights.layer(0).name(), "conv1");
  EXPECT_EQ(upgraded_weights.layer(0).blobs_size(), 2);
  EXPECT_FALSE(NetNeedsUpgrade(upgraded_net));
  EXPECT_FALSE(NetNeedsUpgrade(upgraded_weights));

  Net v2(SourceDir() + "/models/lenet/lenet.prototxt", caffe::TEST, TestContext());
  v2.CopyTrainedLayersFrom(v2_weights);
  Net tooled(net_out, caffe::TEST, TestContext());
  tooled.CopyTrainedLayersFrom(weights_out);
  const std::vector<float> expected = ForwardLenet(v2, 9);
  EXPECT_EQ(ForwardLenet(tooled, 9), expected);  // bit for bit
  // The original V1 files load directly too, with the same result.
  Net v1(v1_net, caffe::TEST, TestContext());
  v1.CopyTrainedLayersFrom(v1_weights);
  EXPECT_EQ(ForwardLenet(v1, 9), expected);
}

// dlcaffe's own commands read V1 nets, naming the file they upgrade.
TEST(UpgradeTools, DlcaffeTimesAV1Net) {
  const std::string v1_net = WriteTemp("cli_v1_lenet.prototxt", V1LenetText());
  ToolResult r = RunDlcaffe("time --model=" + v1_net + " --iterations=1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "deprecated V1LayerParameter: " + v1_net)) << r.output;
  EXPECT_TRUE(Contains(r.output, "Average Forward pass: ")) << r.output;
}

TEST(UpgradeTools, V0NetWithPaddingLayer) {
  const std::string v0 = WriteTemp("v0.prototxt", R"(
    name: "v0"
    input: "data" input_dim: 1 input_dim: 3 input_dim: 9 input_dim: 9
    layers { layer { name: "pad1" type: "padding" pad: 2 } bottom: "data" top: "pad1" }
    layers { layer { name: "conv1" type: "conv" num_output: 5 kernelsize: 5 stride: 2 }
             bottom: "pad1" top: "conv1" }
    layers { layer { name: "relu1" type: "relu" } bottom: "conv1" top: "conv1" })");
  const std::string out = Dir() + "/v0_upgraded.prototxt";
  ToolResult r = RunTool("upgrade_net_proto_text", v0 + " " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "deprecated V0LayerParameter: " + v0)) << r.output;
  caffe::NetParameter net;
  ReadProtoFromTextFile(out, &net);
  ASSERT_EQ(net.layer_size(), 3);  // Input, conv1, relu1: the padding layer is gone
  EXPECT_EQ(net.layer(1).type(), "Convolution");
  EXPECT_EQ(net.layer(1).bottom(0), "data");
  ASSERT_EQ(net.layer(1).convolution_param().pad_size(), 1);
  EXPECT_EQ(net.layer(1).convolution_param().pad(0), 2u);
  EXPECT_EQ(net.layer(2).type(), "ReLU");
  Net built(out, caffe::TEST, TestContext());
  EXPECT_EQ(built.blob_by_name("conv1")->shape(), (std::vector<int>{1, 5, 5, 5}));
}

TEST(UpgradeTools, CurrentFilesAreWrittenUnchanged) {
  const std::string out = Dir() + "/lenet_copy.prototxt";
  ToolResult r = RunTool("upgrade_net_proto_text", "models/lenet/lenet.prototxt " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "File already in latest proto format: models/lenet/lenet.prototxt"))
      << r.output;
  caffe::NetParameter original, copy;
  ReadProtoFromTextFile(SourceDir() + "/models/lenet/lenet.prototxt", &original);
  ReadProtoFromTextFile(out, &copy);
  EXPECT_EQ(copy.DebugString(), original.DebugString());
}

TEST(UpgradeTools, SolverTypeEnumBecomesTypeString) {
  const std::string solver = WriteTemp("old_solver.prototxt", R"(
    net: "models/lenet/lenet_train_test.prototxt"
    base_lr: 0.01
    momentum: 0.9
    lr_policy: "fixed"
    solver_type: NESTEROV)");
  const std::string out = Dir() + "/new_solver.prototxt";
  ToolResult r = RunTool("upgrade_solver_proto_text", solver + " " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "deprecated 'solver_type' field (enum)': " + solver)) << r.output;
  EXPECT_TRUE(Contains(r.output, "Wrote upgraded SolverParameter text proto to " + out))
      << r.output;
  caffe::SolverParameter upgraded;
  ReadProtoFromTextFile(out, &upgraded);
  EXPECT_EQ(upgraded.type(), "Nesterov");
  EXPECT_FALSE(upgraded.has_solver_type());
  EXPECT_EQ(upgraded.net(), "models/lenet/lenet_train_test.prototxt");
  EXPECT_FLOAT_EQ(upgraded.momentum(), 0.9f);

  // Each enum value.
  for (const auto& [old_name, name] : std::vector<std::pair<std::string, std::string>>{
           {"SGD", "SGD"}, {"ADAGRAD", "AdaGrad"}, {"RMSPROP", "RMSProp"},
           {"ADADELTA", "AdaDelta"}, {"ADAM", "Adam"}}) {
    const std::string in = WriteTemp("s_" + old_name + ".prototxt", "solver_type: " + old_name);
    ASSERT_EQ(RunTool("upgrade_solver_proto_text", in + " " + out).exit_code, 0);
    caffe::SolverParameter p;
    ReadProtoFromTextFile(out, &p);
    EXPECT_EQ(p.type(), name) << old_name;
    EXPECT_FALSE(p.has_solver_type()) << old_name;
  }

  // Disagreeing old and new fields: an error, and the output is not written.
  const std::string both = WriteTemp("both.prototxt", "solver_type: ADAM type: 'SGD'");
  const std::string not_written = Dir() + "/not_written.prototxt";
  ExpectToolError("upgrade_solver_proto_text",
                  RunTool("upgrade_solver_proto_text", both + " " + not_written), both);
  EXPECT_FALSE(FileExists(not_written));
}

TEST(UpgradeTools, BadInputIsAClearError) {
  const std::string out = Dir() + "/never.out";
  // Missing files.
  for (const char* tool :
       {"upgrade_net_proto_text", "upgrade_net_proto_binary", "upgrade_solver_proto_text"}) {
    ExpectToolError(tool, RunTool(tool, "/nonexistent/in.file " + out), "/nonexistent/in.file");
  }
  // Garbage text: file, line and column.
  const std::string garbage = WriteTemp("garbage.prototxt", "name: 'x'\nlayers { type: NOT_A_TYPE }\n");
  ExpectToolError("upgrade_net_proto_text", RunTool("upgrade_net_proto_text", garbage + " " + out),
                  garbage + ":2:");
  const std::string garbage_solver = WriteTemp("garbage_solver.prototxt", "base_lr: lots\n");
  ExpectToolError("upgrade_solver_proto_text",
                  RunTool("upgrade_solver_proto_text", garbage_solver + " " + out),
                  garbage_solver + ":1:");
  // Garbage binary.
  const std::string bad_binary = Dir() + "/garbage.caffemodel";
  WriteFileAtomically(bad_binary, std::string("\x0a\xff\xff\xff\x0f\x01\x02", 7));
  ExpectToolError("upgrade_net_proto_binary",
                  RunTool("upgrade_net_proto_binary", bad_binary + " " + out), bad_binary);
  // Mixed layer and layers.
  const std::string mixed = WriteTemp("mixed.prototxt", R"(
    layer { name: "in" type: "Input" top: "data" input_param { shape { dim: 1 } } }
    layers { name: "old_relu" type: RELU bottom: "data" top: "data" })");
  ToolResult r = RunTool("upgrade_net_proto_text", mixed + " " + out);
  ExpectToolError("upgrade_net_proto_text", r, mixed);
  EXPECT_TRUE(Contains(r.output, "'old_relu'")) << r.output;
  // A V0 layer type that V1 never had.
  const std::string v0 = WriteTemp("v0_unknown.prototxt", R"(
    input: "x" layers { layer { name: "odd" type: "conv3d" } bottom: "x" top: "y" })");
  r = RunTool("upgrade_net_proto_text", v0 + " " + out);
  ExpectToolError("upgrade_net_proto_text", r, v0);
  EXPECT_TRUE(Contains(r.output, "'odd'")) << r.output;
  // Nothing was written for any of these.
  EXPECT_FALSE(FileExists(out));
  // Wrong number of arguments: usage and a non-zero exit.
  for (const char* tool :
       {"upgrade_net_proto_text", "upgrade_net_proto_binary", "upgrade_solver_proto_text"}) {
    ToolResult usage = RunTool(tool, "only_one_argument");
    EXPECT_NE(usage.exit_code, 0) << tool;
    EXPECT_LT(usage.exit_code, 128) << tool;
    EXPECT_TRUE(Contains(usage.output, std::string(tool) + " ")) << usage.output;
  }
}

}  // namespace test
}  // namespace dlcaffe
