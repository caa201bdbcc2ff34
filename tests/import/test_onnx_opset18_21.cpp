// What opsets 18 to 21 changed in the ops the ONNX importer supports, on
// small models written here against host references: the Reduce ops' axes
// input and noop_with_empty_axes, ReduceLogSum(Exp), Split's num_outputs,
// Pad's axes input and 'wrap' mode, Resize's axes and
// keep_aspect_ratio_policy, Gelu; and the clear errors for what the
// importer does not take (antialiased downsampling, float8 casts,
// stash_type). ONNX's own node tests of these opsets run in
// test_onnx_node_tests.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "dlcaffe/error.hpp"
#include "dlcaffe/net.hpp"
#include "dlcaffe/onnx_import.hpp"
#include "util/onnx_model_builder.hpp"
#include "util/random_values.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {


void SetString(onnx::NodeProto* node, const std::string& name, const std::string& value) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(value);
}

// Imports `m` and runs it on x; each output's shape and values.
struct Result {
  std::vector<std::vector<int>> shapes;
  std::vector<std::vector<float>> values;
};
Result RunModel(const OnnxModelBuilder& m, const std::vector<float>& x) {
  const OnnxModel model = ImportOnnx(m.Save(TempDir()));
  caffe::NetParameter param = model.net;
  param.mutable_state()->set_phase(caffe::TEST);
  Net net(param, TestContext());
  net.blob_by_name(model.inputs.at(0))->WriteData(x);
  net.ForwardNoLoss();
  Result r;
  for (const std::string& out : model.outputs) {
    r.shapes.push_back(net.blob_by_name(out)->shape());
    r.values.push_back(net.blob_by_name(out)->ReadData());
  }
  return r;
}

void ExpectImportError(const OnnxModelBuilder& m, const std::vector<std::string>& parts) {
  const std::string path = m.Save(TempDir());
  try {
    ImportOnnx(path);
    ADD_FAILURE() << "no error for " << path;
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    for (const auto& part : parts) EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

TEST(OnnxOpset18, ReduceAxesInputAndNoopWithEmptyAxes) {
  // x: 2 x 3 x 4; ReduceMean over axes [-1, 0] (an input), keepdims 0.
  const std::vector<float> x = RandomValues(24, 1);
  {
    OnnxModelBuilder m(18);
    m.Input("x", {2, 3, 4});
    m.Int64Initializer("axes", {-1, 0});
    OnnxModelBuilder::SetInt(m.Node("ReduceMean", {"x", "axes"}, {"y"}), "keepdims", 0);
    m.Output("y");
    const Result r = RunModel(m, x);
    ASSERT_EQ(r.shapes[0], std::vector<int>({3}));
    for (int c = 0; c < 3; ++c) {
      double sum = 0;
      for (int n = 0; n < 2; ++n)
        for (int w = 0; w < 4; ++w) sum += x[(n * 3 + c) * 4 + w];
      EXPECT_NEAR(r.values[0][c], sum / 8, 1e-6) << c;
    }
  }
  {
    // No axes and noop_with_empty_axes: the input unchanged.
    OnnxModelBuilder m(18);
    m.Input("x", {2, 3, 4});
    OnnxModelBuilder::SetInt(m.Node("ReduceMax", {"x"}, {"y"}), "noop_with_empty_axes", 1);
    m.Output("y");
    const Result r = RunModel(m, x);
    EXPECT_EQ(r.shapes[0], std::vector<int>({2, 3, 4}));
    EXPECT_EQ(r.values[0], x);
  }
  {
    // The opset-13 attribute is not an opset-18 one.
    OnnxModelBuilder m(18);
    m.Input("x", {2, 3, 4});
    OnnxModelBuilder::SetInts(m.Node("ReduceL2", {"x"}, {"y"}, "l2"), "axes", {1});
    m.Output("y");
    ExpectImportError(m, {"node 'l2' (ReduceL2)", "attribute 'axes' is not supported"});
  }
}

TEST(OnnxOpset18, ReduceLogSumExpOfLargeValuesAndReduceLogSum) {
  // Values near 100: exp overflows float unless the maximum is taken out.
  std::vector<float> x = RandomValues(2 * 5, 2, 95.f, 105.f);
  for (const char* op : {"ReduceLogSumExp", "ReduceLogSum"}) {
    for (int keepdims : {0, 1}) {
      OnnxModelBuilder m(18);
      m.Input("x", {2, 5});
      m.Int64Initializer("axes", {1});
      OnnxModelBuilder::SetInt(m.Node(op, {"x", "axes"}, {"y"}), "keepdims", keepdims);
      m.Output("y");
      const Result r = RunModel(m, x);
      EXPECT_EQ(r.shapes[0], keepdims ? std::vector<int>({2, 1}) : std::vector<int>({2})) << op;
      for (int n = 0; n < 2; ++n) {
        double sum = 0;
        for (int k = 0; k < 5; ++k)
          sum += std::string(op) == "ReduceLogSum" ? x[n * 5 + k] : std::exp(double(x[n * 5 + k]));
        EXPECT_NEAR(r.values[0][n], std::log(sum), 1e-4) << op << " row " << n;
      }
    }
  }
  OnnxModelBuilder m(18);
  m.Input("x", {2, 5});
  m.Node("ReduceProd", {"x"}, {"y"}, "prod");
  m.Output("y");
  ExpectImportError(m, {"node 'prod' (ReduceProd)", "run-time tensor is not supported"});
}

TEST(OnnxOpset18, SplitNumOutputsLastPartSmaller) {
  // 7 along axis 1 into 3: 3, 3, 1.
  const std::vector<float> x = RandomValues(2 * 7, 3);
  OnnxModelBuilder m(18);
  m.Input("x", {2, 7});
  onnx::NodeProto* split = m.Node("Split", {"x"}, {"a", "b", "c"});
  OnnxModelBuilder::SetInt(split, "axis", 1);
  OnnxModelBuilder::SetInt(split, "num_outputs", 3);
  for (const char* out : {"a", "b", "c"}) m.Output(out);
  const Result r = RunModel(m, x);
  const int sizes[] = {3, 3, 1};
  int start = 0;
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(r.shapes[k], std::vector<int>({2, sizes[k]}));
    for (int n = 0; n < 2; ++n)
      for (int j = 0; j < sizes[k]; ++j) EXPECT_EQ(r.values[k][n * sizes[k] + j], x[n * 7 + start + j]);
    start += sizes[k];
  }
  OnnxModelBuilder bad(18);
  bad.Input("x", {2, 7});
  OnnxModelBuilder::SetInt(bad.Node("Split", {"x"}, {"a", "b"}, "split"), "num_outputs", 3);
  bad.Output("a");
  ExpectImportError(bad, {"node 'split' (Split)", "num_outputs is 3 but the node has 2 outputs"});
}

TEST(OnnxOpset19, PadWrapWithAxesInput) {
  // x: 2 x 3 x 4; axes [2, -2]: axis 2 padded 5 before (more than its size)
  // and 2 after, axis 1 cropped by 1 before and padded 1 after.
  const std::vector<float> x = RandomValues(24, 4);
  OnnxModelBuilder m(19);
  m.Input("x", {2, 3, 4});
  m.Int64Initializer("pads", {5, -1, 2, 1});
  m.Int64Initializer("axes", {2, -2});
  SetString(m.Node("Pad", {"x", "pads", "", "axes"}, {"y"}), "mode", "wrap");
  m.Output("y");
  const Result r = RunModel(m, x);
  ASSERT_EQ(r.shapes[0], std::vector<int>({2, 3, 11}));
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int w = 0; w < 11; ++w) {
        // Axis 1 after the crop holds input rows 1, 2; then wraps to 1.
        const int src_c = 1 + c % 2, src_w = ((w - 5) % 4 + 4) % 4;
        EXPECT_EQ(r.values[0][(n * 3 + c) * 11 + w], x[(n * 3 + src_c) * 4 + src_w])
            << n << " " << c << " " << w;
      }
  OnnxModelBuilder old(18);
  old.Input("x", {2, 3});
  old.Int64Initializer("pads", {1, 1, 1, 1});
  SetString(old.Node("Pad", {"x", "pads"}, {"y"}, "pad"), "mode", "wrap");
  old.Output("y");
  ExpectImportError(old, {"node 'pad' (Pad)", "mode 'wrap' is not supported"});
}

TEST(OnnxOpset18, ResizeAxesAspectRatioAndAntialias) {
  // Nearest, sizes [7, 8] for axes [3, 2] of a 1 x 1 x 2 x 2 input with
  // not_smaller: one scale 4 (8 / 2), so 8 x 8.
  const std::vector<float> x = {1, 2, 3, 4};
  OnnxModelBuilder m(18);
  m.Input("x", {1, 1, 2, 2});
  m.Int64Initializer("sizes", {7, 8});
  onnx::NodeProto* resize = m.Node("Resize", {"x", "", "", "sizes"}, {"y"});
  OnnxModelBuilder::SetInts(resize, "axes", {3, 2});
  SetString(resize, "keep_aspect_ratio_policy", "not_smaller");
  m.Output("y");
  const Result r = RunModel(m, x);
  ASSERT_EQ(r.shapes[0], std::vector<int>({1, 1, 8, 8}));
  for (int h = 0; h < 8; ++h)
    for (int w = 0; w < 8; ++w) EXPECT_EQ(r.values[0][h * 8 + w], x[(h / 4) * 2 + w / 4]) << h << " " << w;

  // Linear downsampling with antialias: refused; upsampling: the same as without.
  OnnxModelBuilder down(18);
  down.Input("x", {1, 1, 4, 4});
  down.Initializer("scales", {4}, {1, 1, 0.5f, 0.5f});
  onnx::NodeProto* d = down.Node("Resize", {"x", "", "scales"}, {"y"}, "resize");
  SetString(d, "mode", "linear");
  OnnxModelBuilder::SetInt(d, "antialias", 1);
  down.Output("y");
  ExpectImportError(down, {"node 'resize' (Resize)", "antialias = 1 when downsampling", "not supported"});
  OnnxModelBuilder up(18);
  up.Input("x", {1, 1, 2, 2});
  up.Initializer("scales", {4}, {1, 1, 2, 2});
  onnx::NodeProto* u = up.Node("Resize", {"x", "", "scales"}, {"y"});
  SetString(u, "mode", "linear");
  OnnxModelBuilder::SetInt(u, "antialias", 1);
  up.Output("y");
  EXPECT_EQ(RunModel(up, x).shapes[0], std::vector<int>({1, 1, 4, 4}));
}

TEST(OnnxOpset20, GeluBothApproximations) {
  const std::vector<float> x = RandomValues(2 * 9, 5, -4.f, 4.f);
  for (const char* approximate : {"none", "tanh"}) {
    OnnxModelBuilder m(20);
    m.Input("x", {2, 9});
    SetString(m.Node("Gelu", {"x"}, {"y"}), "approximate", approximate);
    m.Output("y");
    const Result r = RunModel(m, x);
    for (size_t i = 0; i < x.size(); ++i) {
      const double v = x[i];
      const double want = std::string(approximate) == "none"
                              ? 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))
                              : 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
      EXPECT_NEAR(r.values[0][i], want, 1e-5) << approximate << " " << v;
    }
  }
  OnnxModelBuilder bad(20);
  bad.Input("x", {2, 9});
  SetString(bad.Node("Gelu", {"x"}, {"y"}, "gelu"), "approximate", "sigmoid");
  bad.Output("y");
  ExpectImportError(bad, {"node 'gelu' (Gelu)", "approximate 'sigmoid' is not supported"});
}

TEST(OnnxOpset21, RefusedTypesAndStashTypeNameTheNode) {
  OnnxModelBuilder cast(21);
  cast.Input("x", {2, 3});
  onnx::NodeProto* c = cast.Node("Cast", {"x"}, {"y"}, "cast");
  OnnxModelBuilder::SetInt(c, "to", 17);
  OnnxModelBuilder::SetInt(c, "saturate", 0);
  cast.Output("y");
  ExpectImportError(cast, {"node 'cast' (Cast)", "FLOAT8E4M3FN", "not supported"});

  OnnxModelBuilder ln(21);
  ln.Input("x", {2, 3});
  ln.Initializer("scale", {3}, {1, 1, 1});
  OnnxModelBuilder::SetInt(ln.Node("LayerNormalization", {"x", "scale"}, {"y"}, "ln"), "stash_type", 11);
  ln.Output("y");
  ExpectImportError(ln, {"node 'ln' (LayerNormalization)", "stash_type 11 is not supported"});
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
