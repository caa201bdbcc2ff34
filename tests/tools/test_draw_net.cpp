// tools/extra/draw_net.py: LeNet as DOT text (layers with their parameters,
// blob octagons, the in-place ReLU, phase filtering), PNG and SVG through
// Graphviz, caffe_pb2 made from proto/caffe.proto in an empty cache, and one
// clear message for bad input.
#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>

#include <filesystem>
#include <regex>
#include <string>

#include "dlcaffe/io.hpp"
#include "util/run_script.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

const char kLeNet[] = "models/lenet/lenet_train_test.prototxt";

// draw_net.py `net` into a .dot file with `options`: the DOT text.
std::string DrawDot(const std::string& net, const std::string& options = "") {
  const std::string dot = TempDir() + "/net.dot";
  ToolResult r = RunScript("draw_net.py", net + " " + dot + " " + options);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return ReadFileBytes(dot);
}

// The node id of the layer box whose label starts with `name`.
std::string LayerNode(const std::string& dot, const std::string& name) {
  std::smatch m;
  const std::regex re("(layer_\\d+) \\[shape=record[^\\n]*label=\"" + name + "\\\\n");
  return std::regex_search(dot, m, re) ? m[1].str() : "";
}

}  // namespace

TEST(DrawNet, DotShowsLayersWithTheirParametersAndBlobs) {
  const std::string dot = DrawDot(kLeNet);
  EXPECT_TRUE(Contains(dot, "rankdir=LR;")) << dot;
  for (const char* label :
       {R"x(label="conv1\n(Convolution)\nnum_output: 20\nkernel size: 5\nstride: 1\npad: 0")x",
        R"x(label="pool1\n(MAX Pooling)\nkernel size: 2\nstride: 2\npad: 0")x",
        R"x(label="ip1\n(InnerProduct)\nnum_output: 500")x", R"x(label="loss\n(SoftmaxWithLoss)")x",
        R"x(label="accuracy\n(Accuracy)")x"})
    EXPECT_TRUE(Contains(dot, label)) << "missing " << label << " in\n" << dot;
  for (const char* blob : {"data", "label", "conv1", "pool1", "conv2", "pool2", "ip1", "ip2",
                           "loss", "accuracy"})
    EXPECT_TRUE(Contains(dot, "\"blob_" + std::string(blob) +
                                  "\" [shape=octagon, style=filled, fillcolor=\"#E0E0E0\", "
                                  "label=\"" + blob + "\"]"))
        << "missing blob " << blob << " in\n" << dot;
  // Caffe's edge labels: the batch below a data layer, num_output below a layer.
  EXPECT_TRUE(Contains(dot, "-> \"blob_conv1\" [label=\"20\"]")) << dot;
  EXPECT_TRUE(Contains(dot, "[label=\"Batch 64\"]")) << dot;
  // The in-place ReLU: a green box with edges from and back to its blob.
  const std::string relu = LayerNode(dot, "relu1");
  ASSERT_FALSE(relu.empty()) << dot;
  EXPECT_TRUE(Contains(dot, relu + " [shape=record, style=filled, fillcolor=\"#90EE90\"")) << dot;
  EXPECT_TRUE(Contains(dot, "\"blob_ip1\" -> " + relu + ";")) << dot;
  EXPECT_TRUE(Contains(dot, relu + " -> \"blob_ip1\";")) << dot;
}

TEST(DrawNet, PhaseKeepsTheLayersItsRulesAdmit) {
  const std::string all = DrawDot(kLeNet, "--phase ALL");
  const std::string train = DrawDot(kLeNet, "--phase TRAIN");
  const std::string test = DrawDot(kLeNet, "--phase TEST");
  EXPECT_TRUE(Contains(all, "Batch 64") && Contains(all, "Batch 100")) << all;
  EXPECT_TRUE(Contains(train, "Batch 64")) << train;
  EXPECT_FALSE(Contains(train, "Batch 100")) << train;
  EXPECT_FALSE(Contains(train, "(Accuracy)")) << train;
  EXPECT_TRUE(Contains(test, "Batch 100")) << test;
  EXPECT_FALSE(Contains(test, "Batch 64")) << test;
  EXPECT_TRUE(Contains(test, "(Accuracy)")) << test;
  EXPECT_TRUE(Contains(train, "label=\"LeNet (TRAIN)\"")) << train;
}

TEST(DrawNet, StagesAndLevelsFilterAsTheNetDoes) {
  const std::string net = TempDir() + "/staged.prototxt";
  WriteFileAtomically(net, R"(name: "staged"
    layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 1 dim: 4 } } }
    layer { name: "deploy_only" type: "ReLU" bottom: "x" top: "x" include { stage: "deploy" } }
    layer { name: "deep" type: "TanH" bottom: "x" top: "y" include { min_level: 2 } }
    layer { name: "not_deploy" type: "Sigmoid" bottom: "x" top: "z"
            exclude { phase: TEST stage: "deploy" } })");
  const std::string plain = DrawDot(net, "--phase TEST");
  EXPECT_FALSE(Contains(plain, "deploy_only")) << plain;
  EXPECT_FALSE(Contains(plain, "label=\"deep")) << plain;
  EXPECT_TRUE(Contains(plain, "not_deploy")) << plain;
  const std::string deploy = DrawDot(net, "--phase TEST --stage deploy --level 2");
  EXPECT_TRUE(Contains(deploy, "deploy_only")) << deploy;
  EXPECT_TRUE(Contains(deploy, "label=\"deep")) << deploy;
  EXPECT_FALSE(Contains(deploy, "not_deploy")) << deploy;
}

TEST(DrawNet, VerticalGraphsPutTheLabelOnOneLine) {
  const std::string dot = DrawDot(kLeNet, "--rankdir TB");
  EXPECT_TRUE(Contains(dot, "rankdir=TB;")) << dot;
  EXPECT_TRUE(Contains(dot, R"x(label="ip1 (InnerProduct) num_output: 500")x")) << dot;
}

TEST(DrawNet, PngAndSvgThroughGraphvizFromAFreshCache) {
  // An empty cache: caffe_pb2 is generated from proto/caffe.proto first.
  const std::string cache = TempDir();
  const std::string dir = TempDir();
  for (const char* name : {"/lenet.png", "/lenet.svg"}) {
    ToolResult r = RunScript("draw_net.py", std::string(kLeNet) + " " + dir + name,
                             "XDG_CACHE_HOME='" + cache + "'");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const cv::Mat image = cv::imread(dir + "/lenet.png", cv::IMREAD_COLOR);
  ASSERT_FALSE(image.empty());
  EXPECT_GT(image.cols, image.rows) << "rankdir LR draws a wide graph";
  const std::string svg = ReadFileBytes(dir + "/lenet.svg");
  EXPECT_TRUE(Contains(svg, "<svg")) << svg;
  EXPECT_TRUE(Contains(svg, "conv1")) << svg;
  int generated = 0;
  for (const auto& entry : std::filesystem::directory_iterator(cache + "/dlcaffe/python"))
    generated += std::filesystem::exists(entry.path() / "caffe_pb2.py");
  EXPECT_EQ(generated, 1) << "one caffe_pb2.py, made once and reused";
}

TEST(DrawNet, BadInputsEndInOneMessage) {
  const std::string dir = TempDir();
  WriteFileAtomically(dir + "/bad.prototxt", "name: \"x\"\nlayer {\n  name: \"a\"\n  typo: 1\n}\n");
  ExpectCleanScriptError(RunScript("draw_net.py", dir + "/bad.prototxt " + dir + "/x.png"),
                         "draw_net.py", dir + "/bad.prototxt:4:");
  ExpectCleanScriptError(RunScript("draw_net.py", "/nonexistent/net.prototxt " + dir + "/x.png"),
                         "draw_net.py", "/nonexistent/net.prototxt");
  ExpectCleanScriptError(RunScript("draw_net.py", std::string(kLeNet) + " " + dir + "/x.gif"),
                         "draw_net.py", "x.gif");
  WriteFileAtomically(dir + "/both.prototxt", R"(layer { name: "r" type: "ReLU" bottom: "x"
    top: "x" include { phase: TRAIN } exclude { phase: TEST } })");
  ExpectCleanScriptError(RunScript("draw_net.py", dir + "/both.prototxt " + dir + "/x.dot"),
                         "draw_net.py", "'r'");
  EXPECT_FALSE(FileExists(dir + "/x.png"));
}

}  // namespace test
}  // namespace dlcaffe
