// ONNX models with dynamic batch and sequence dimensions: a Net built from
// the .onnx file follows its input blob's shape, the Caffe way (reshape the
// input, Forward), importing the model again for each new shape. Each model
// directory (tools/onnx/make_dynamic_shape_tests.py) has float64 references
// at four input shapes, the last a training set with parameter gradients.
//
// tests/import/dynamic_models/ holds the files PyTorch 2.11 wrote (torch.export
// with Dim.DYNAMIC at opset 18, TorchScript with dynamic_axes at opset 20;
// README.md there); Debian's PyTorch 1.13 exports the same models here at
// test time.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

#include "dlcaffe/io.hpp"
#include "dlcaffe/net.hpp"
#include "dlcaffe/onnx_import.hpp"
#include "util/onnx_model_builder.hpp"
#include "util/onnx_model_dirs.hpp"
#include "util/random_values.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/run_script.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

// The model directories under `dir`, as paths.
std::vector<std::string> ModelDirs(const std::string& dir) {
  std::vector<std::string> paths;
  for (const std::string& name : OnnxModelDirs(dir)) paths.push_back(dir + "/" + name);
  return paths;
}

std::vector<std::string> DataSets(const std::string& model_dir) {
  std::vector<std::string> sets;
  for (int k = 0; FileExists(model_dir + "/test_data_set_" + std::to_string(k) + "/input_0.pb"); ++k)
    sets.push_back(model_dir + "/test_data_set_" + std::to_string(k));
  return sets;
}

// tolerances.json: {"file": bound, ...} (relative L2 error bounds).
std::map<std::string, double> Tolerances(const std::string& set_dir) {
  std::ifstream in(set_dir + "/tolerances.json");
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  std::map<std::string, double> bounds;
  const std::regex entry("\"([^\"]+)\": *([0-9.eE+-]+)");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), entry); it != std::sregex_iterator(); ++it)
    bounds[(*it)[1]] = std::stod((*it)[2]);
  return bounds;
}

double RelativeL2(const std::vector<float>& ours, const std::vector<float>& ref) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    diff += (double(ours[i]) - ref[i]) * (double(ours[i]) - ref[i]);
    norm += double(ref[i]) * ref[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-300));
}

// Reshapes the net's input to the set's input, writes it and runs forward;
// returns the output name.
std::string RunSet(Net& net, const std::string& set_dir) {
  std::vector<int> shape;
  std::string input_name;
  const std::vector<float> x = ReadOnnxTensorFile(set_dir + "/input_0.pb", &shape, &input_name);
  Blob* input = net.blob_by_name(input_name).get();
  input->Reshape(shape);
  input->WriteData(x);
  net.Forward();
  std::vector<int> out_shape;
  std::string out_name;
  ReadOnnxTensorFile(set_dir + "/output_0.pb", &out_shape, &out_name);
  return out_name;
}

void ExpectMatches(const std::string& what, const std::vector<float>& ours,
                   const std::vector<int>& ours_shape, const std::string& ref_file, double bound) {
  std::vector<int> shape;
  const std::vector<float> ref = ReadOnnxTensorFile(ref_file, &shape);
  int64_t count = 1;
  for (int d : shape) count *= d;
  ASSERT_EQ(static_cast<int64_t>(ours.size()), count) << what << ": " << ref_file;
  if (ours_shape.size() == shape.size()) {
    EXPECT_EQ(ours_shape, shape) << what << ": " << ref_file;
  }
  const double error = RelativeL2(ours, ref);
  EXPECT_LE(error, bound) << what << ": " << ref_file;
}

void ExpectOutput(Net& net, const std::string& set_dir, const std::string& what) {
  const std::string out_name = RunSet(net, set_dir);
  const Blob& out = *net.blob_by_name(out_name);
  ExpectMatches(what, out.ReadData(), out.shape(), set_dir + "/output_0.pb",
                Tolerances(set_dir).at("output_0.pb"));
}

// The forward sets on one Net from the file, in order and back to the first
// (every step changes the shape), with and without the inference memory plan.
void ExpectForwardFollowsShapes(const std::string& model_dir) {
  SCOPED_TRACE(model_dir);
  const std::vector<std::string> sets = DataSets(model_dir);
  ASSERT_GE(sets.size(), 3u);
  for (const bool plan : {false, true}) {
    Net net(model_dir + "/model.onnx", caffe::TEST, TestContext());
    ASSERT_TRUE(net.follows_input_shapes());
    if (plan) net.PlanInferenceMemory();
    for (size_t k = 0; k + 1 < sets.size(); ++k)
      ExpectOutput(net, sets[k], plan ? "with the memory plan" : "");
    ExpectOutput(net, sets[0], "back at the first shape");
  }
}

// The training set: a training import at another shape (a forward there
// first), the net's parameter gradients against the references by
// initializer name.
void ExpectGradientsAfterReshape(const std::string& model_dir) {
  SCOPED_TRACE(model_dir);
  const std::string path = model_dir + "/model.onnx";
  const std::vector<std::string> sets = DataSets(model_dir);
  const std::string set = sets.back();
  ASSERT_TRUE(FileExists(set + "/grad_output_0.pb"));
  OnnxImportOptions options;
  options.training = true;
  options.dynamic_dimension_value = 1;
  const OnnxModel model = ImportOnnx(path, options);
  ASSERT_FALSE(model.dynamic_inputs.empty());
  caffe::NetParameter param = model.net;
  param.mutable_state()->set_phase(caffe::TRAIN);
  param.set_force_backward(true);
  Net net(param, TestContext());
  net.set_input_shape_resolver(OnnxInputShapeResolver(path, options));
  RunSet(net, sets[0]);
  const std::string out_name = RunSet(net, set);
  const Blob& out = *net.blob_by_name(out_name);
  const std::map<std::string, double> bounds = Tolerances(set);
  ExpectMatches("training forward", out.ReadData(), out.shape(), set + "/output_0.pb",
                bounds.at("output_0.pb"));
  std::vector<int> dy_shape;
  net.ClearParamDiffs();
  net.blob_by_name(out_name)->WriteDiff(ReadOnnxTensorFile(set + "/grad_output_0.pb", &dy_shape));
  net.Backward();
  int checked = 0;
  for (const auto& [file, bound] : bounds) {
    if (file.rfind("grad_", 0) != 0) continue;
    const std::string initializer = file.substr(5, file.size() - 8);
    const auto source = model.parameters.find(initializer);
    ASSERT_NE(source, model.parameters.end()) << initializer << " is no parameter of the net";
    const Blob& blob = *net.layer_by_name(source->second.layer)->blobs().at(source->second.blob_index);
    ExpectMatches("gradient of " + initializer, blob.ReadDiff(), {}, set + "/" + file, bound);
    ++checked;
  }
  EXPECT_GT(checked, 3);
}

const std::string& CommittedDir() {
  static const std::string dir = SourceDir() + "/tests/import/dynamic_models";
  return dir;
}

TEST(OnnxDynamicShapes, TodaysExportersFilesFollowTheInputShape) {
  // gpt_lm, llama_block, encoder_postnorm and vit_mini by torch.export
  // (opset 18), and all but encoder_postnorm by TorchScript (opset 20: that
  // one bakes the sequence length in, see ABakedShapeIsAClearError).
  const std::vector<std::string> models = ModelDirs(CommittedDir());
  ASSERT_EQ(models.size(), 7u);
  for (const std::string& dir : models) {
    ExpectForwardFollowsShapes(dir);
    ExpectGradientsAfterReshape(dir);
  }
}

TEST(OnnxDynamicShapes, DebianPyTorchExportsFollowTheInputShape) {
  const std::string dir = TempDir();
  const ToolResult made = RunCommand("cd '" + SourceDir() + "' && '" + TestPython() +
                                     "' tools/onnx/make_dynamic_shape_tests.py '" + dir + "' 2>&1");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  // On the GPU host (DLCAFFE_PYTHON: PyTorch 2.x) the script leaves out
  // encoder_postnorm, whose sequence length that exporter bakes in.
  const bool skipped = Contains(made.output, "encoder_postnorm: skipped: ");
  const std::vector<std::string> models = ModelDirs(dir);
  ASSERT_EQ(models.size(), skipped ? 3u : 4u) << made.output;
  for (const std::string& model : models) {
    ExpectForwardFollowsShapes(model);
    ExpectGradientsAfterReshape(model);
  }
}

// A rebuild keeps what training changed: learnable parameters hold the
// values written to them, not the file's.
TEST(OnnxDynamicShapes, TrainedValuesSurviveAReshape) {
  const std::string dir = CommittedDir() + "/gpt_lm-dynamo-opset18-dynamic";
  const std::vector<std::string> sets = DataSets(dir);
  Net net(dir + "/model.onnx", caffe::TRAIN, TestContext());
  RunSet(net, sets[0]);
  const size_t learnable = net.learnable_params().size();
  std::vector<std::vector<float>> written;
  for (size_t i = 0; i < learnable; ++i) {
    if (net.params_lr()[i] == 0.f) {  // fixed (masks, positions): no training moves them
      written.emplace_back();
      continue;
    }
    std::vector<float> v = net.learnable_params()[i]->ReadData();
    for (float& x : v) x = 0.5f * x + 0.25f;
    net.learnable_params()[i]->WriteData(v);
    written.push_back(v);
  }
  const Blob* input_before = net.input_blobs()[0];
  RunSet(net, sets[1]);
  EXPECT_EQ(net.input_blobs()[0], input_before) << "the input blob is the same object";
  ASSERT_EQ(net.learnable_params().size(), learnable);
  int checked = 0;
  for (size_t i = 0; i < learnable; ++i) {
    if (written[i].empty()) continue;
    EXPECT_EQ(net.learnable_params()[i]->ReadData(), written[i]) << "learnable parameter " << i;
    ++checked;
  }
  EXPECT_GT(checked, 10);
}

// A hand-written model with a symbolic batch N: x (N x 5) split into a
// sequence by a scalar size (parts of 2, 2, 1) and by single columns without
// keepdims, elements picked by SequenceAt; the net follows N = 1 (as
// loaded), 3, 2.
TEST(OnnxDynamicShapes, SplitToSequenceFollowsTheBatch) {
  OnnxModelBuilder m(18);
  m.Input("x", {-1, 5});
  onnx::TensorProto* two = m.model().mutable_graph()->add_initializer();
  two->set_name("two");
  two->set_data_type(onnx::TensorProto::INT64);
  two->add_int64_data(2);  // no dims: a scalar
  m.Int64Initializer("last", {-1});
  m.Int64Initializer("one", {1});
  m.Int64Initializer("three", {3});
  OnnxModelBuilder::SetInt(m.Node("SplitToSequence", {"x", "two"}, {"parts"}), "axis", 1);
  onnx::NodeProto* columns = m.Node("SplitToSequence", {"x"}, {"columns"});
  OnnxModelBuilder::SetInt(columns, "axis", 1);
  OnnxModelBuilder::SetInt(columns, "keepdims", 0);
  m.Node("SequenceAt", {"parts", "last"}, {"a"});
  m.Node("SequenceAt", {"parts", "one"}, {"b"});
  m.Node("SequenceAt", {"columns", "three"}, {"c"});
  for (const char* out : {"a", "b", "c"}) m.Output(out);
  const std::string path = m.Save(TempDir());
  // The outputs' blobs (SequenceAt's output is its element's blob).
  OnnxImportOptions options;
  options.dynamic_dimension_value = 1;
  const std::vector<std::string> outputs = ImportOnnx(path, options).outputs;
  ASSERT_EQ(outputs.size(), 3u);
  Net net(path, caffe::TEST, TestContext());
  ASSERT_TRUE(net.follows_input_shapes());
  EXPECT_EQ(net.blob_by_name("x")->shape(), (std::vector<int>{1, 5}));
  for (const int n : {3, 2}) {
    const std::vector<float> x = RandomValues(n * 5, n);
    net.blob_by_name("x")->Reshape({n, 5});
    net.blob_by_name("x")->WriteData(x);
    net.Forward();
    std::vector<float> a, b, c;
    for (int i = 0; i < n; ++i) {
      a.push_back(x[i * 5 + 4]);
      b.insert(b.end(), {x[i * 5 + 2], x[i * 5 + 3]});
      c.push_back(x[i * 5 + 3]);
    }
    EXPECT_EQ(net.blob_by_name(outputs[0])->shape(), (std::vector<int>{n, 1}));
    EXPECT_EQ(net.blob_by_name(outputs[1])->shape(), (std::vector<int>{n, 2}));
    EXPECT_EQ(net.blob_by_name(outputs[2])->shape(), (std::vector<int>{n}));
    EXPECT_EQ(net.blob_by_name(outputs[0])->ReadData(), a) << "N = " << n;
    EXPECT_EQ(net.blob_by_name(outputs[1])->ReadData(), b) << "N = " << n;
    EXPECT_EQ(net.blob_by_name(outputs[2])->ReadData(), c) << "N = " << n;
  }
}

// The tools: bench and tune import at --input_shape (without it bench names
// the dynamic dimension); time reshapes the inputs of the net from the file,
// which follows.
TEST(OnnxDynamicShapes, ToolsTakeInputShapes) {
  const std::string model = "--model='" + CommittedDir() + "/gpt_lm-dynamo-opset18-dynamic/model.onnx'";
  const ToolResult without = RunDlcaffe("bench " + model + " --iterations=1 --warmup=0");
  EXPECT_NE(without.exit_code, 0) << without.output;
  EXPECT_TRUE(Contains(without.output, "graph input 'input_ids' has a dynamic dimension"))
      << without.output;
  for (const std::string mode : {"forward", "train"}) {
    const ToolResult r = RunDlcaffe("bench " + model + " --input_shape=input_ids:3,9 --mode=" +
                                    mode + " --iterations=1 --warmup=0");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(Contains(r.output, " " + mode + " ")) << r.output;
    EXPECT_TRUE(Contains(r.output, "(3 9 (27), ")) << r.output;
  }
  const ToolResult timed = RunDlcaffe("time " + model + " --input_shape=input_ids:3,9 --iterations=1");
  EXPECT_EQ(timed.exit_code, 0) << timed.output;
  EXPECT_TRUE(Contains(timed.output, "rebuilt for input shapes 'input_ids' 3x9")) << timed.output;
  const ToolResult wrong = RunDlcaffe("time " + model + " --input_shape=tokens:3,9 --iterations=1");
  EXPECT_NE(wrong.exit_code, 0);
  EXPECT_TRUE(Contains(wrong.output, "--input_shape: 'tokens' is not an input of")) << wrong.output;
}

// The TorchScript exporter of PyTorch 2.11 writes nn.MultiheadAttention's
// sequence length as a constant (13) into a Reshape although the axis is
// declared dynamic: at another length the rebuild fails naming that node,
// and the net works again at a shape the model takes.
TEST(OnnxDynamicShapes, ABakedShapeIsAClearError) {
  const std::string dir = CommittedDir() + "/baked/encoder_postnorm-torchscript-opset20-dynamic";
  const std::vector<std::string> sets = DataSets(dir);
  ASSERT_EQ(sets.size(), 2u);
  // At the dynamic dimensions' default of 1 the file does not import: the
  // Net from the file says so, naming the node; ImportOnnx at the exported
  // shape does.
  const std::string path = dir + "/model.onnx";
  try {
    Net at_one(path, caffe::TEST, TestContext());
    ADD_FAILURE() << "the file imported at sequence length 1";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("with its dynamic dimensions at 1 ('input' 1x1x40)"), std::string::npos) << what;
    EXPECT_NE(what.find("Reshape_4' (Reshape): cannot reshape [1 1 40] to [13 4 10]"),
              std::string::npos) << what;
  }
  OnnxImportOptions options;
  options.input_shapes["input"] = {2, 13, 40};
  caffe::NetParameter param = ImportOnnx(path, options).net;
  param.mutable_state()->set_phase(caffe::TEST);
  Net net(param, TestContext());
  net.set_input_shape_resolver(OnnxInputShapeResolver(path, options));
  ExpectOutput(net, sets[0], "the exported length");
  try {
    RunSet(net, sets[1]);
    ADD_FAILURE() << "a forward at a sequence length the file cannot take ran";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("at input shapes 'input' 3x7x40"), std::string::npos) << what;
    EXPECT_NE(what.find("node '/encoder/layers.0/self_attn/Reshape_4' (Reshape): cannot reshape"),
              std::string::npos) << what;
  }
  ExpectOutput(net, sets[0], "after the error");
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
