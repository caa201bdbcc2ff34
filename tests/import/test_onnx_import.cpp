// The ONNX importer (src/import/) on small models written in the test:
// results against host references, shape folding, each pattern fusion
// against the unfused import, the in-place rewrite the Net's own fusions
// need, every error case, and the convert_onnx tool.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>

#include "dlcaffe/error.hpp"
#include "dlcaffe/io.hpp"
#include "dlcaffe/net.hpp"
#include "dlcaffe/onnx_import.hpp"
#include "util/onnx_model_builder.hpp"
#include "util/random_values.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"
#include "../../src/core/execution_plan.hpp"

namespace dlcaffe {
namespace test {
namespace {


// Forward of an imported model on one input; the first output's values.
std::vector<float> RunForward(const OnnxModel& model, const std::vector<float>& input,
                              caffe::Phase phase = caffe::TEST) {
  caffe::NetParameter param = model.net;
  param.mutable_state()->set_phase(phase);
  Net net(param, TestContext());
  net.blob_by_name(model.inputs.at(0))->WriteData(input);
  net.ForwardNoLoss();
  return net.blob_by_name(model.outputs.at(0))->ReadData();
}

void ExpectNear(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << "element " << i;
}

int CountType(const caffe::NetParameter& net, const std::string& type) {
  int n = 0;
  for (const auto& l : net.layer()) n += l.type() == type;
  return n;
}

// x (1 x 2 x 5 x 7) -> Conv 3x3 pad 1 (3 filters, bias) -> BatchNormalization -> Relu.
OnnxModelBuilder ConvBnRelu(std::vector<float>* w, std::vector<float>* b, std::vector<float>* bn) {
  OnnxModelBuilder m;
  m.Input("x", {1, 2, 5, 7});
  *w = RandomValues(3 * 2 * 3 * 3, 1);
  *b = RandomValues(3, 2);
  m.Initializer("w", {3, 2, 3, 3}, *w);
  m.Initializer("b", {3}, *b);
  *bn = {1.5f, 0.5f, 1.f, 0.1f, -0.2f, 0.3f, 0.2f, -0.1f, 0.05f, 0.9f, 1.2f, 0.7f};
  m.Initializer("gamma", {3}, {bn->begin(), bn->begin() + 3});
  m.Initializer("beta", {3}, {bn->begin() + 3, bn->begin() + 6});
  m.Initializer("mean", {3}, {bn->begin() + 6, bn->begin() + 9});
  m.Initializer("var", {3}, {bn->begin() + 9, bn->end()});
  auto* conv = m.Node("Conv", {"x", "w", "b"}, {"c"}, "conv");
  OnnxModelBuilder::SetInts(conv, "pads", {1, 1, 1, 1});
  OnnxModelBuilder::SetInts(conv, "kernel_shape", {3, 3});
  OnnxModelBuilder::SetFloat(m.Node("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"n"}, "bn"),
                             "epsilon", 1e-5f);
  m.Node("Relu", {"n"}, {"y"}, "relu");
  m.Output("y");
  return m;
}

TEST(OnnxImport, ConvBatchNormReluMatchesHostReference) {
  std::vector<float> w, b, bn;
  const std::string path = ConvBnRelu(&w, &b, &bn).Save(TempDir());
  const OnnxModel model = ImportOnnx(path);
  const std::vector<float> x = RandomValues(2 * 5 * 7, 3);
  std::vector<double> want(3 * 5 * 7);
  for (int o = 0; o < 3; ++o)
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 7; ++j) {
        double s = b[o];
        for (int c = 0; c < 2; ++c)
          for (int ki = 0; ki < 3; ++ki)
            for (int kj = 0; kj < 3; ++kj) {
              const int y = i + ki - 1, z = j + kj - 1;
              if (y >= 0 && y < 5 && z >= 0 && z < 7)
                s += double(w[((o * 2 + c) * 3 + ki) * 3 + kj]) * x[(c * 5 + y) * 7 + z];
            }
        const double n = (s - bn[6 + o]) / std::sqrt(double(bn[9 + o]) + 1e-5) * bn[o] + bn[3 + o];
        want[(o * 5 + i) * 7 + j] = std::max(n, 0.0);
      }
  ExpectNear(RunForward(model, x), want, 1e-4);
  // Every initializer is a layer blob the runner can find.
  for (const char* name : {"w", "b", "gamma", "beta", "mean", "var"})
    EXPECT_TRUE(model.parameters.count(name)) << name;
}

TEST(OnnxImport, ChainsRunInPlaceSoTheNetFusesThem) {
  std::vector<float> w, b, bn;
  const OnnxModel model = ImportOnnx(ConvBnRelu(&w, &b, &bn).Save(TempDir()));
  // BatchNorm, Scale and ReLU write the convolution's top in place ...
  const caffe::NetParameter& net = model.net;
  int conv = -1;
  for (int i = 0; i < net.layer_size(); ++i)
    if (net.layer(i).type() == "Convolution") conv = i;
  ASSERT_GE(conv, 0);
  ASSERT_EQ(net.layer_size(), conv + 4);
  const std::string top = net.layer(conv).top(0);
  for (int i = conv + 1; i < net.layer_size(); ++i) {
    EXPECT_EQ(net.layer(i).bottom(0), top) << net.layer(i).type();
    EXPECT_EQ(net.layer(i).top(0), i + 1 == net.layer_size() ? "y" : top);
  }
  // ... except where the top is the graph output, which keeps its name.
  // The inference net folds the BatchNorm and Scale into the convolution.
  caffe::NetParameter param = net;
  param.mutable_state()->set_phase(caffe::TEST);
  Net inference(param, TestContext());
  EXPECT_EQ(inference.plan().absorbs_after(conv), 2);
}

TEST(OnnxImport, ShapeArithmeticIsFoldedAtImport) {
  // Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])): x as N x rest.
  OnnxModelBuilder m;
  m.Input("x", {2, 3, 4, 5});
  m.Int64Initializer("zero", {0});
  m.Int64Initializer("minus_one", {-1});
  m.Int64Initializer("axes", {0});
  m.Node("Shape", {"x"}, {"s"});
  OnnxModelBuilder::SetInt(m.Node("Gather", {"s", "zero"}, {"n"}), "axis", 0);
  m.Node("Concat", {"n", "minus_one"}, {"shape"});
  OnnxModelBuilder::SetInt(m.model().mutable_graph()->mutable_node(2), "axis", 0);
  m.Node("Reshape", {"x", "shape"}, {"y"});
  m.Output("y");
  const OnnxModel model = ImportOnnx(m.Save(TempDir()));
  ASSERT_EQ(model.net.layer_size(), 2);  // Input, Reshape
  const auto& reshape = model.net.layer(1);
  EXPECT_EQ(reshape.type(), "Reshape");
  ASSERT_EQ(reshape.reshape_param().shape().dim_size(), 2);
  EXPECT_EQ(reshape.reshape_param().shape().dim(0), 2);
  EXPECT_EQ(reshape.reshape_param().shape().dim(1), 60);
  const std::vector<float> x = RandomValues(120, 4);
  EXPECT_EQ(RunForward(model, x), x);
}

// Imports with and without the fusions: same values, and the fused import
// has `fused_type` and reports the fusion.
void ExpectFusion(OnnxModelBuilder& m, const std::string& fused_type, const std::string& fusion,
                  const std::vector<int64_t>& input_shape, const std::vector<double>& want,
                  double tol) {
  const std::string path = m.Save(TempDir());
  OnnxImportOptions plain;
  plain.fuse_patterns = false;
  const OnnxModel fused = ImportOnnx(path), unfused = ImportOnnx(path, plain);
  EXPECT_EQ(CountType(fused.net, fused_type), 1);
  EXPECT_EQ(CountType(unfused.net, fused_type), 0);
  ASSERT_EQ(fused.applied_fusions.size(), 1u);
  EXPECT_EQ(fused.applied_fusions[0], fusion);
  int64_t n = 1;
  for (int64_t d : input_shape) n *= d;
  const std::vector<float> x = RandomValues(n, 7, -3.f, 3.f);
  ExpectNear(RunForward(fused, x), want.empty() ? std::vector<double>() : want, tol);
  const std::vector<float> a = RunForward(fused, x), b = RunForward(unfused, x);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], tol) << i;
}

std::vector<double> Reference(const std::vector<int64_t>& shape, double (*f)(double)) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  const std::vector<float> x = RandomValues(n, 7, -3.f, 3.f);
  std::vector<double> y(n);
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
  return y;
}

TEST(OnnxImport, GeluSubgraphFuses) {
  OnnxModelBuilder m;
  m.Input("x", {3, 13});
  m.Initializer("sqrt2", {}, {1.4142135623730951f});
  m.Initializer("one", {}, {1.f});
  m.Initializer("half", {}, {0.5f});
  // Fixed constants, not parameters: exporters write them as Constant nodes.
  for (const char* c : {"sqrt2", "one", "half"}) {
    auto* graph = m.model().mutable_graph();
    for (int i = 0; i < graph->initializer_size(); ++i)
      if (graph->initializer(i).name() == c) {
        auto* node = m.Node("Constant", {}, {std::string(c) + "_c"});
        auto* a = node->add_attribute();
        a->set_name("value");
        a->set_type(onnx::AttributeProto::TENSOR);
        *a->mutable_t() = graph->initializer(i);
      }
  }
  m.model().mutable_graph()->clear_initializer();
  m.Node("Div", {"x", "sqrt2_c"}, {"t"});
  m.Node("Erf", {"t"}, {"e"});
  m.Node("Add", {"e", "one_c"}, {"p"});
  m.Node("Mul", {"x", "p"}, {"xp"});
  m.Node("Mul", {"xp", "half_c"}, {"y"});
  m.Output("y");
  ExpectFusion(m, "GELU", "GELU", {3, 13},
               Reference({3, 13}, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }),
               1e-5);
}

TEST(OnnxImport, SiluAndHardSwishSubgraphsFuse) {
  {
    OnnxModelBuilder m;
    m.Input("x", {2, 5, 3});
    m.Node("Sigmoid", {"x"}, {"s"});
    m.Node("Mul", {"x", "s"}, {"y"});
    m.Output("y");
    ExpectFusion(m, "Swish", "Swish", {2, 5, 3},
                 Reference({2, 5, 3}, [](double x) { return x / (1 + std::exp(-x)); }), 1e-5);
  }
  {
    OnnxModelBuilder m;
    m.Input("x", {2, 5, 3});
    auto* hs = m.Node("HardSigmoid", {"x"}, {"s"});
    OnnxModelBuilder::SetFloat(hs, "alpha", 1.f / 6.f);
    OnnxModelBuilder::SetFloat(hs, "beta", 0.5f);
    m.Node("Mul", {"s", "x"}, {"y"});
    m.Output("y");
    ExpectFusion(m, "HardSwish", "HardSwish", {2, 5, 3},
                 Reference({2, 5, 3}, [](double x) { return x * std::min(1.0, std::max(0.0, x / 6 + 0.5)); }),
                 1e-5);
  }
}

TEST(OnnxImport, LayerNormSubgraphFusesAndKeepsItsParameters) {
  OnnxModelBuilder m;
  m.Input("x", {2, 3, 7});
  const std::vector<float> gamma = RandomValues(7, 11, 0.5f, 1.5f), beta = RandomValues(7, 12);
  m.Initializer("gamma", {7}, gamma);
  m.Initializer("beta", {7}, beta);
  auto constant = [&](const std::string& name, float v) {
    auto* node = m.Node("Constant", {}, {name});
    auto* a = node->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
    a->mutable_t()->add_float_data(v);
  };
  constant("two", 2.f);
  constant("eps", 1e-5f);
  OnnxModelBuilder::SetInts(m.Node("ReduceMean", {"x"}, {"mean"}), "axes", {-1});
  m.Node("Sub", {"x", "mean"}, {"d"});
  m.Node("Pow", {"d", "two"}, {"d2"});
  OnnxModelBuilder::SetInts(m.Node("ReduceMean", {"d2"}, {"var"}), "axes", {-1});
  m.Node("Add", {"var", "eps"}, {"ve"});
  m.Node("Sqrt", {"ve"}, {"std"});
  m.Node("Div", {"d", "std"}, {"n"});
  m.Node("Mul", {"n", "gamma"}, {"g"});
  m.Node("Add", {"g", "beta"}, {"y"});
  m.Output("y");
  const std::vector<float> x = RandomValues(42, 7, -3.f, 3.f);
  std::vector<double> want(42);
  for (int r = 0; r < 6; ++r) {
    double mean = 0, var = 0;
    for (int i = 0; i < 7; ++i) mean += x[r * 7 + i] / 7.0;
    for (int i = 0; i < 7; ++i) var += (x[r * 7 + i] - mean) * (x[r * 7 + i] - mean) / 7.0;
    for (int i = 0; i < 7; ++i)
      want[r * 7 + i] = (x[r * 7 + i] - mean) / std::sqrt(var + 1e-5) * gamma[i] + beta[i];
  }
  ExpectFusion(m, "LayerNorm", "LayerNorm", {2, 3, 7}, want, 1e-4);
  // gamma and beta are the LayerNorm's blobs now.
  const OnnxModel model = ImportOnnx(m.Save(TempDir()));
  for (const char* name : {"gamma", "beta"}) {
    ASSERT_TRUE(model.parameters.count(name));
    const auto& source = model.parameters.at(name);
    for (const auto& layer : model.net.layer()) {
      if (layer.name() == source.layer) {
        EXPECT_EQ(layer.type(), "LayerNorm") << name;
      }
    }
  }
}

TEST(OnnxImport, TrainingImportUsesBatchStatisticsAndKeepsDropoutAsIdentity) {
  OnnxModelBuilder m;
  m.Input("x", {4, 2, 3, 3});
  m.Initializer("gamma", {2}, {1.f, 2.f});
  m.Initializer("beta", {2}, {0.f, 1.f});
  m.Initializer("mean", {2}, {5.f, -5.f});
  m.Initializer("var", {2}, {9.f, 4.f});
  m.Node("BatchNormalization", {"x", "gamma", "beta", "mean", "var"}, {"n"});
  m.Node("Dropout", {"n"}, {"y"});
  m.Output("y");
  const std::string path = m.Save(TempDir());
  OnnxImportOptions train;
  train.training = true;
  const OnnxModel inference = ImportOnnx(path), training = ImportOnnx(path, train);
  for (const auto* model : {&inference, &training}) {
    EXPECT_EQ(CountType(model->net, "Dropout"), 0);
    ASSERT_EQ(CountType(model->net, "BatchNorm"), 1);
  }
  for (const auto& l : training.net.layer()) {
    if (l.type() == "BatchNorm") {
      EXPECT_FALSE(l.batch_norm_param().use_global_stats());
    }
  }
  // With batch statistics each channel's output has the mean beta.
  const std::vector<float> x = RandomValues(72, 9, -4.f, 4.f);
  const std::vector<float> y = RunForward(training, x, caffe::TRAIN);
  for (int c = 0; c < 2; ++c) {
    double mean = 0;
    for (int n = 0; n < 4; ++n)
      for (int i = 0; i < 9; ++i) mean += y[(n * 2 + c) * 9 + i] / 36.0;
    EXPECT_NEAR(mean, c == 0 ? 0.0 : 1.0, 1e-4) << c;
  }
}

TEST(OnnxImport, BatchNormStatisticsStayApartFromEqualValuedParameters) {
  // A fresh PyTorch model's running mean (0) and bias (0) are equal, and the
  // exporter stores them once: the statistics must not become that
  // parameter (nor be tied to it), and the parameter stays the Scale's.
  OnnxModelBuilder m;
  m.Input("x", {2, 3, 2, 2});
  m.Initializer("ones", {3}, {1.f, 1.f, 1.f});
  m.Initializer("zeros", {3}, {0.f, 0.f, 0.f});
  m.Node("BatchNormalization", {"x", "ones", "zeros", "zeros", "ones"}, {"y"}, "bn");
  m.Output("y");
  OnnxImportOptions train;
  train.training = true;
  const OnnxModel model = ImportOnnx(m.Save(TempDir()), train);
  for (const auto& layer : model.net.layer()) {
    if (layer.type() != "BatchNorm") continue;
    ASSERT_EQ(layer.param_size(), 3);
    for (const auto& spec : layer.param()) {
      EXPECT_FALSE(spec.has_name());
      EXPECT_EQ(spec.lr_mult(), 0.f);
    }
  }
  ASSERT_TRUE(model.parameters.count("zeros"));
  for (const auto& layer : model.net.layer()) {
    if (layer.name() == model.parameters.at("zeros").layer) {
      EXPECT_EQ(layer.type(), "Scale");
    }
  }
}

// ---- errors: one clear message naming the file, and the node and op ----

void ExpectImportError(const std::string& path, const std::vector<std::string>& parts,
                       const OnnxImportOptions& options = {}) {
  try {
    ImportOnnx(path, options);
    ADD_FAILURE() << "no error for " << path;
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    for (const auto& part : parts) EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

OnnxModelBuilder Relu(int opset = 13) {
  OnnxModelBuilder m(opset);
  m.Input("x", {2, 3});
  m.Node("Relu", {"x"}, {"y"}, "relu");
  m.Output("y");
  return m;
}

TEST(OnnxImportErrors, UnsupportedOperatorNamesNodeAndOp) {
  OnnxModelBuilder m;
  m.Input("x", {2, 3});
  m.Node("Relu", {"x"}, {"r"}, "relu");
  m.Node("Hardmax", {"r"}, {"y"}, "the_hardmax");
  m.Output("y");
  ExpectImportError(m.Save(TempDir()), {"node 'the_hardmax' (Hardmax)", "not supported"});
}

TEST(OnnxImportErrors, UnsupportedAttributeNamesIt) {
  OnnxModelBuilder m;
  m.Input("x", {1, 1, 4, 4});
  m.Initializer("w", {1, 1, 1, 1}, {1.f});
  OnnxModelBuilder::SetInt(m.Node("Conv", {"x", "w"}, {"y"}, "c"), "frobnicate", 1);
  m.Output("y");
  ExpectImportError(m.Save(TempDir()), {"node 'c' (Conv)", "attribute 'frobnicate'"});
}

// Fuzz findings (UBSan on the GPU host): values and shapes past int64, a
// pooling stride of 0 and an axis on a scalar, each refused by name.
TEST(OnnxImportErrors, ValuesPastInt64AndDegenerateShapesNameTheNode) {
  {
    OnnxModelBuilder m;
    m.Input("x", {2, 3});
    m.Int64Initializer("s", {INT64_MAX});
    m.Node("Reshape", {"x", "s"}, {"y"}, "at_the_limit");
    m.Output("y");
    // INT64_MAX is a value (exporters write it for "to the end"), too many elements here.
    ExpectImportError(m.Save(TempDir()),
                      {"node 'at_the_limit' (Reshape)", "cannot reshape [2 3] to [9223372036854775807]"});
  }
  {
    OnnxModelBuilder m;
    m.Input("x", {2, 3});
    m.Int64Initializer("s", {int64_t(1) << 62, 4, 3});
    m.Node("Reshape", {"x", "s"}, {"y"}, "too_many");
    m.Output("y");
    ExpectImportError(m.Save(TempDir()), {"node 'too_many' (Reshape)", "[4611686018427387904 4 3]",
                                          "more elements than an int64"});
  }
  {
    OnnxModelBuilder m;
    m.Input("x", {1, 1, 4, 4});
    onnx::NodeProto* pool = m.Node("MaxPool", {"x"}, {"y"}, "pool");
    OnnxModelBuilder::SetInts(pool, "kernel_shape", {2, 2});
    OnnxModelBuilder::SetInts(pool, "strides", {0, 0});
    m.Output("y");
    ExpectImportError(m.Save(TempDir()), {"node 'pool' (MaxPool)", "stride 0", "does not fit"});
  }
  {
    OnnxModelBuilder m;
    m.Input("x", {2, 3});
    OnnxModelBuilder::SetInt(m.Node("ReduceSum", {"x"}, {"scalar"}, "sum"), "keepdims", 0);
    OnnxModelBuilder::SetInt(m.Node("Concat", {"scalar", "scalar"}, {"y"}, "concat"), "axis", 0);
    m.Output("y");
    ExpectImportError(m.Save(TempDir()), {"node 'concat' (Concat)", "axis 0", "rank 0"});
  }
}

// Tensors the importer fills on the host are checked before they are
// allocated (a CI fuzz run's std::length_error, then by hand).
TEST(OnnxImportErrors, HostTensorsAreCheckedBeforeAllocation) {
  auto constant_of_shape = [](const std::vector<int64_t>& shape) {
    OnnxModelBuilder m;
    m.Input("x", {2, 3});
    m.Int64Initializer("s", shape);
    m.Node("ConstantOfShape", {"s"}, {"c"}, "fill");
    m.Node("Add", {"x", "c"}, {"y"});
    m.Output("y");
    return m.Save(TempDir());
  };
  ExpectImportError(constant_of_shape({-3}), {"node 'fill' (ConstantOfShape)", "[-3]", "negative"});
  ExpectImportError(constant_of_shape({int64_t(1) << 40}),
                    {"node 'fill' (ConstantOfShape)", "1099511627776 values", "67108864"});
  {
    OnnxModelBuilder m;
    m.Input("x", {2, 3});
    for (const char* name : {"a", "b", "d"}) m.Initializer(name, {}, {name[0] == 'b' ? 1e18f : name[0] == 'd' ? 1.f : 0.f});
    m.Node("Range", {"a", "b", "d"}, {"r"}, "range");
    m.Node("Add", {"x", "r"}, {"y"});
    m.Output("y");
    ExpectImportError(m.Save(TempDir()), {"node 'range' (Range)", "more values than the importer"});
  }
  {
    // 2^61 doubles: the byte count wraps to 0 in 64 bits, as the data's size.
    OnnxModelBuilder m;
    m.Input("x", {2, 3});
    onnx::TensorProto* w = m.model().mutable_graph()->add_initializer();
    w->set_name("w");
    w->set_data_type(onnx::TensorProto::DOUBLE);
    w->add_dims(int64_t(1) << 61);
    w->set_raw_data("");
    m.Node("Add", {"x", "w"}, {"y"});
    m.Output("y");
    ExpectImportError(m.Save(TempDir()), {"initializer 'w'", "holds 0 bytes", "2305843009213693952 values of 8 bytes"});
  }
}

TEST(OnnxImportErrors, OpsetOutsideTheRange) {
  ExpectImportError(Relu(8).Save(TempDir()), {"opset 8", "9 to 21"});
  ExpectImportError(Relu(22).Save(TempDir()), {"opset 22", "9 to 21"});
  EXPECT_NO_THROW(ImportOnnx(Relu(9).Save(TempDir())));
  EXPECT_NO_THROW(ImportOnnx(Relu(21).Save(TempDir())));
}

TEST(OnnxImportErrors, DynamicShapeUnlessGiven) {
  OnnxModelBuilder m;
  m.Input("x", {-1, 3});
  m.Node("Relu", {"x"}, {"y"});
  m.Output("y");
  const std::string path = m.Save(TempDir());
  ExpectImportError(path, {"graph input 'x'", "dynamic dimension 'N'"});
  OnnxImportOptions options;
  options.input_shapes["x"] = {5, 3};
  const OnnxModel model = ImportOnnx(path, options);
  EXPECT_EQ(model.net.layer(0).input_param().shape(0).dim(0), 5);
}

TEST(OnnxImportErrors, RunTimeShapeThatCannotBeFolded) {
  OnnxModelBuilder m;
  m.Input("x", {2, 3});
  m.Input("s", {2});
  m.Node("Reshape", {"x", "s"}, {"y"}, "reshape");
  m.Output("y");
  ExpectImportError(m.Save(TempDir()), {"node 'reshape' (Reshape)", "input 1 ('s')", "known at import time"});
}

TEST(OnnxImportErrors, ExternalDataMissingOrPresent) {
  const std::string dir = TempDir();
  OnnxModelBuilder m;
  m.Input("x", {1, 2});
  m.Node("Add", {"x", "bias"}, {"y"}, "add");
  m.Output("y");
  onnx::TensorProto* t = m.model().mutable_graph()->add_initializer();
  t->set_name("bias");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(2);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* entry = t->add_external_data();
  entry->set_key("location");
  entry->set_value("bias.bin");
  const std::string path = m.Save(dir);
  ExpectImportError(path, {"initializer 'bias'", "bias.bin", "cannot be opened"});
  const float values[2] = {0.25f, -4.f};
  std::ofstream(dir + "/bias.bin", std::ios::binary).write(reinterpret_cast<const char*>(values), 8);
  EXPECT_EQ(RunForward(ImportOnnx(path), {1.f, 1.f}), (std::vector<float>{1.25f, -3.f}));
}

TEST(OnnxImportErrors, TruncatedCorruptEmptyAndMissingFiles) {
  const std::string dir = TempDir();
  std::vector<float> w, b, bn;
  std::string bytes;
  ConvBnRelu(&w, &b, &bn).model().SerializeToString(&bytes);
  std::ofstream(dir + "/truncated.onnx", std::ios::binary).write(bytes.data(), bytes.size() / 2);
  ExpectImportError(dir + "/truncated.onnx", {});
  std::ofstream(dir + "/corrupt.onnx", std::ios::binary) << "\x08\x07this is not a protobuf \xff\xff\xff";
  ExpectImportError(dir + "/corrupt.onnx", {"not a valid ONNX model"});
  std::ofstream(dir + "/empty.onnx", std::ios::binary);
  ExpectImportError(dir + "/empty.onnx", {"empty"});
  ExpectImportError(dir + "/missing.onnx", {"cannot open"});
}

// ---- the tools ----

TEST(OnnxTools, ConvertOnnxWritesANetAndWeightsThatGiveTheSameOutput) {
  const std::string dir = TempDir();
  std::vector<float> w, b, bn;
  const std::string path = ConvBnRelu(&w, &b, &bn).Save(dir);
  const ToolResult r = RunTool("convert_onnx", path + " " + dir + "/net.prototxt " + dir + "/net.caffemodel");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  caffe::NetParameter param;
  ReadProtoFromTextFile(dir + "/net.prototxt", &param);
  for (const auto& layer : param.layer()) EXPECT_EQ(layer.blobs_size(), 0) << layer.name();
  param.mutable_state()->set_phase(caffe::TEST);
  Net net(param, TestContext());
  net.CopyTrainedLayersFrom(dir + "/net.caffemodel");
  const std::vector<float> x = RandomValues(70, 5);
  net.blob_by_name("x")->WriteData(x);
  net.ForwardNoLoss();
  EXPECT_EQ(net.blob_by_name("y")->ReadData(), RunForward(ImportOnnx(path), x));
}

TEST(OnnxTools, BadModelsEndInOneCleanError) {
  const std::string dir = TempDir();
  OnnxModelBuilder m;
  m.Input("x", {2, 3});
  m.Node("Hardmax", {"x"}, {"y"}, "hm");
  m.Output("y");
  const std::string path = m.Save(dir);
  ExpectCleanToolError(RunTool("convert_onnx", path + " " + dir + "/a.prototxt " + dir + "/a.caffemodel"),
                       "convert_onnx", "node 'hm' (Hardmax)");
  ExpectCleanError(RunDlcaffe("time --model=" + path + " --iterations=1"), "node 'hm' (Hardmax)");
  std::ofstream(dir + "/bad.onnx") << "garbage";
  ExpectCleanToolError(RunTool("convert_onnx", dir + "/bad.onnx " + dir + "/b.prototxt " + dir + "/b.caffemodel"),
                       "convert_onnx", "bad.onnx");
}

TEST(OnnxTools, DlcaffeTimesAnOnnxModel) {
  std::vector<float> w, b, bn;
  const std::string path = ConvBnRelu(&w, &b, &bn).Save(TempDir());
  const ToolResult r = RunDlcaffe("time --model=" + path + " --iterations=2");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "Average Forward pass")) << r.output;
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
