// What transformer exports need from the ONNX importer, on small models
// written in the test against host references: Slice bounds at the int64
// limits, free parameters (a class token, a position table) that stay
// learnable through Expand/Concat/Add in a training import, token ids as an
// integer graph input gathered by Embed layers (a tied head included), and
// the errors for what run-time integers cannot do.
#include <gtest/gtest.h>

#include <climits>
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


void SetInputType(OnnxModelBuilder* m, int index, onnx::TensorProto::DataType type) {
  m->model().mutable_graph()->mutable_input(index)->mutable_type()->mutable_tensor_type()->set_elem_type(type);
}

Net MakeNet(const OnnxModel& model, bool training) {
  caffe::NetParameter param = model.net;
  param.mutable_state()->set_phase(training ? caffe::TRAIN : caffe::TEST);
  if (training) param.set_force_backward(true);
  return Net(param, TestContext());
}

// The gradient blob of initializer `name` after a backward pass.
std::vector<float> ParameterDiff(const Net& net, const OnnxModel& model, const std::string& name) {
  const OnnxParameterSource& source = model.parameters.at(name);
  return net.layer_by_name(source.layer)->blobs().at(source.blob_index)->ReadDiff();
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want, float tol,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << what << " element " << i;
}

// Whether a training import made initializer `name` a learnable parameter.
bool Learnable(const OnnxModel& model, const std::string& name) {
  for (const auto& layer : model.net.layer())
    for (const auto& spec : layer.param())
      if (spec.name() == name && spec.lr_mult() != 0.f) return true;
  return false;
}

// Exporters write INT64_MAX / INT64_MIN for "to the end"; as doubles they
// round to +-2^63, which used to fail as "outside the int64 range".
TEST(OnnxTransformerImport, SliceBoundsAtTheInt64LimitsMeanTheEndsOfTheAxis) {
  OnnxModelBuilder m;
  m.Input("x", {2, 5});
  m.Int64Initializer("one", {1});
  m.Int64Initializer("last", {-1});
  m.Int64Initializer("to_end", {INT64_MAX});
  m.Int64Initializer("to_start", {INT64_MIN});
  m.Int64Initializer("axis", {1});
  m.Int64Initializer("back", {-1});
  m.Int64Initializer("huge_back", {INT64_MIN});
  m.Node("Slice", {"x", "one", "to_end", "axis"}, {"tail"}, "tail");
  m.Node("Slice", {"x", "last", "to_start", "axis", "back"}, {"reversed"}, "reversed");
  m.Node("Slice", {"x", "last", "to_start", "axis", "huge_back"}, {"last_only"}, "last_only");
  OnnxModelBuilder::SetInt(m.Node("Concat", {"tail", "reversed", "last_only"}, {"y"}, "concat"),
                           "axis", 1);
  m.Output("y");
  const OnnxModel model = ImportOnnx(m.Save(TempDir()));
  Net net = MakeNet(model, false);
  const std::vector<float> x = RandomValues(10, 1);
  net.blob_by_name("x")->WriteData(x);
  net.ForwardNoLoss();
  const Blob& y = *net.blob_by_name("y");
  ASSERT_EQ(y.shape(), (std::vector<int>{2, 10}));
  std::vector<float> want;
  for (int r = 0; r < 2; ++r) {
    for (int c = 1; c < 5; ++c) want.push_back(x[r * 5 + c]);
    for (int c = 4; c >= 0; --c) want.push_back(x[r * 5 + c]);
    want.push_back(x[r * 5 + 4]);
  }
  ExpectNear(y.ReadData(), want, 0.f, "y");
}

// A ViT's prologue: cls (1 x 1 x C) expanded over the batch, concatenated
// before the patches, plus a learned position table (1 x T+1 x C).
OnnxModelBuilder ClassTokenAndPositions(int b, int t, int c, std::vector<float>* cls,
                                        std::vector<float>* pos) {
  OnnxModelBuilder m;
  m.Input("x", {b, t, c});
  *cls = RandomValues(c, 2);
  *pos = RandomValues((t + 1) * c, 3);
  m.Initializer("class_token", {1, 1, c}, *cls);
  m.Initializer("pos_embedding", {1, t + 1, c}, *pos);
  m.Int64Initializer("expanded", {b, 1, c});
  m.Node("Expand", {"class_token", "expanded"}, {"cls_batch"}, "expand");
  OnnxModelBuilder::SetInt(m.Node("Concat", {"cls_batch", "x"}, {"tokens"}, "concat"), "axis", 1);
  m.Node("Add", {"tokens", "pos_embedding"}, {"y"}, "add_positions");
  m.Output("y");
  return m;
}

TEST(OnnxTransformerImport, FreeParametersStayLearnableThroughExpandConcatAndAdd) {
  const int b = 3, t = 5, c = 7;
  std::vector<float> cls, pos;
  const std::string path = ClassTokenAndPositions(b, t, c, &cls, &pos).Save(TempDir());
  OnnxImportOptions options;
  options.training = true;
  const OnnxModel model = ImportOnnx(path, options);
  ASSERT_TRUE(model.parameters.count("class_token"));
  ASSERT_TRUE(model.parameters.count("pos_embedding"));
  Net net = MakeNet(model, true);
  const std::vector<float> x = RandomValues(b * t * c, 4), dy = RandomValues(b * (t + 1) * c, 5);
  net.blob_by_name("x")->WriteData(x);
  net.ForwardNoLoss();
  std::vector<float> want_y, want_cls(c, 0.f), want_pos((t + 1) * c, 0.f);
  for (int n = 0; n < b; ++n)
    for (int i = 0; i <= t; ++i)
      for (int k = 0; k < c; ++k) {
        const float token = i == 0 ? cls[k] : x[(n * t + i - 1) * c + k];
        want_y.push_back(token + pos[i * c + k]);
        const float g = dy[(n * (t + 1) + i) * c + k];
        want_pos[i * c + k] += g;
        if (i == 0) want_cls[k] += g;
      }
  ExpectNear(net.blob_by_name("y")->ReadData(), want_y, 1e-6f, "y");
  net.ClearParamDiffs();
  net.blob_by_name("y")->WriteDiff(dy);
  net.Backward();
  ExpectNear(ParameterDiff(net, model, "class_token"), want_cls, 1e-5f, "class_token gradient");
  ExpectNear(ParameterDiff(net, model, "pos_embedding"), want_pos, 1e-5f, "pos_embedding gradient");
  // Neither is fixed (lr_mult 0) anywhere in the net.
  for (const auto& layer : model.net.layer())
    for (const auto& spec : layer.param())
      if (spec.name() == "class_token" || spec.name() == "pos_embedding") {
        EXPECT_FALSE(spec.has_lr_mult() && spec.lr_mult() == 0.f) << layer.name();
      }

  // An inference import still folds the constant prologue on the host.
  const OnnxModel folded = ImportOnnx(path);
  for (const auto& layer : folded.net.layer()) EXPECT_NE(layer.type(), "BinaryOp") << layer.name();
}

// A GPT's ends: int64 token ids (B x T) gather rows of the token table,
// constant positions gather rows of a position table, and the head is the
// token table again (x @ table^T, tied weights).
TEST(OnnxTransformerImport, TokenIdsGatherThroughEmbedLayersWithATiedHead) {
  const int b = 2, t = 3, vocab = 11, c = 4;
  OnnxModelBuilder m;
  m.Input("ids", {b, t});
  SetInputType(&m, 0, onnx::TensorProto::INT64);
  const std::vector<float> table = RandomValues(vocab * c, 6), positions = RandomValues(5 * c, 7);
  m.Initializer("wte", {vocab, c}, table);
  m.Initializer("wpe", {5, c}, positions);
  m.Int64Initializer("pos_ids", {0, 1, 2});
  m.Node("Gather", {"wte", "ids"}, {"tokens"}, "token_embedding");
  m.Node("Gather", {"wpe", "pos_ids"}, {"pos"}, "position_embedding");
  m.Node("Add", {"tokens", "pos"}, {"h"}, "add");
  m.Node("Transpose", {"wte"}, {"wte_t"}, "transpose");
  m.Node("MatMul", {"h", "wte_t"}, {"logits"}, "head");
  m.Output("logits");
  const std::string path = m.Save(TempDir());
  OnnxImportOptions options;
  options.training = true;
  const OnnxModel model = ImportOnnx(path, options);
  int embeds = 0;
  for (const auto& layer : model.net.layer()) embeds += layer.type() == "Embed";
  EXPECT_EQ(embeds, 2);
  Net net = MakeNet(model, true);
  const std::vector<float> ids = {3, 0, 10, 7, 7, 1};
  net.blob_by_name("ids")->WriteData(ids);
  net.ForwardNoLoss();
  std::vector<float> h(b * t * c), want_logits;
  for (int i = 0; i < b * t; ++i)
    for (int k = 0; k < c; ++k) h[i * c + k] = table[int(ids[i]) * c + k] + positions[(i % t) * c + k];
  for (int i = 0; i < b * t; ++i)
    for (int v = 0; v < vocab; ++v) {
      float s = 0;
      for (int k = 0; k < c; ++k) s += h[i * c + k] * table[v * c + k];
      want_logits.push_back(s);
    }
  ExpectNear(net.blob_by_name("logits")->ReadData(), want_logits, 1e-5f, "logits");

  // d/d table: the head's h^T dy plus the gathered rows' dh = dy @ table.
  const std::vector<float> dy = RandomValues(b * t * vocab, 8);
  net.ClearParamDiffs();
  net.blob_by_name("logits")->WriteDiff(dy);
  net.Backward();
  std::vector<float> want_table(vocab * c, 0.f), want_pos(5 * c, 0.f);
  for (int i = 0; i < b * t; ++i)
    for (int v = 0; v < vocab; ++v)
      for (int k = 0; k < c; ++k) {
        const float g = dy[i * vocab + v];
        want_table[v * c + k] += g * h[i * c + k];
        const float dh = g * table[v * c + k];
        want_table[int(ids[i]) * c + k] += dh;
        want_pos[(i % t) * c + k] += dh;
      }
  ExpectNear(ParameterDiff(net, model, "wte"), want_table, 1e-4f, "wte gradient");
  ExpectNear(ParameterDiff(net, model, "wpe"), want_pos, 1e-4f, "wpe gradient");

  // An id outside the vocabulary is an error naming the layer.
  net.blob_by_name("ids")->WriteData({3, 0, 11, 7, 7, 1});
  net.ForwardNoLoss();
  TestContext().Finish();  // the check's record is read back after the pass
  try {
    net.ForwardNoLoss();
    FAIL() << "an id past the vocabulary was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token_embedding"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("index 11"), std::string::npos) << e.what();
  }
}

// GatherElements (torch.gather) as BERT's embeddings use it: over a constant
// buffer with constant positions it folds at import; over run-time data
// with constant indices it is the GatherElements layer, forward and the
// input's gradient (repeated picks summed) against a host reference.
TEST(OnnxTransformerImport, GatherElementsFoldsOnConstantsAndIsALayerOnData) {
  const int b = 2, t = 5;
  OnnxModelBuilder m;
  m.Input("x", {b, t});
  // Constants as an exporter writes them: a buffer of token types and the
  // positions to pick, both (1, n) through Reshape.
  m.Int64Initializer("types", {0, 0, 1, 1, 1});
  m.Int64Initializer("positions", {4, 0, 2});
  m.Int64Initializer("row_of_5", {1, 5});
  m.Int64Initializer("row_of_3", {1, 3});
  m.Int64Initializer("picks_flat", {4, -1, 4, 0, 2, 2});
  m.Int64Initializer("two_by_3", {b, 3});
  m.Node("Reshape", {"types", "row_of_5"}, {"types2"}, "types_row");
  m.Node("Reshape", {"positions", "row_of_3"}, {"positions2"}, "positions_row");
  m.Node("Reshape", {"picks_flat", "two_by_3"}, {"picks"}, "picks_matrix");
  OnnxModelBuilder::SetInt(
      m.Node("GatherElements", {"types2", "positions2"}, {"picked_types"}, "fold"), "axis", 1);
  OnnxModelBuilder::SetInt(m.Node("GatherElements", {"x", "picks"}, {"picked"}, "gather"),
                           "axis", 1);
  OnnxModelBuilder::SetInt(m.Node("Cast", {"picked_types"}, {"type_floats"}, "cast"), "to",
                           onnx::TensorProto::FLOAT);
  m.Node("Add", {"picked", "type_floats"}, {"y"}, "add");
  m.Output("y");
  const std::string path = m.Save(TempDir());
  OnnxImportOptions options;
  options.training = true;
  const OnnxModel model = ImportOnnx(path, options);
  int layers = 0;
  for (const auto& layer : model.net.layer()) layers += layer.type() == "GatherElements";
  EXPECT_EQ(layers, 1) << "the constants' GatherElements folds, the data's stays";
  Net net = MakeNet(model, true);
  const std::vector<float> x = RandomValues(b * t, 9);
  net.blob_by_name("x")->WriteData(x);
  net.ForwardNoLoss();
  const std::vector<int> picks = {4, 4, 4, 0, 2, 2};  // -1 is the last
  const std::vector<float> types = {1, 0, 1};         // types at positions 4, 0, 2
  std::vector<float> want;
  for (int i = 0; i < b; ++i)
    for (int j = 0; j < 3; ++j) want.push_back(x[i * t + picks[i * 3 + j]] + types[j]);
  ExpectNear(net.blob_by_name("y")->ReadData(), want, 0.f, "y");
  const std::vector<float> dy = RandomValues(b * 3, 10);
  net.blob_by_name("y")->WriteDiff(dy);
  net.Backward();
  std::vector<float> dx(b * t, 0.f);
  for (int i = 0; i < b; ++i)
    for (int j = 0; j < 3; ++j) dx[i * t + picks[i * 3 + j]] += dy[i * 3 + j];
  ExpectNear(net.blob_by_name("x")->ReadDiff(), dx, 1e-6f, "x gradient");
}

// Which initializers train: a causal-mask buffer read only through Equal
// (the condition of a Where) is a constant folded at import; a cos table
// that multiplies the data trains unless frozen; a real weight trains.
TEST(OnnxTransformerImport, MasksReadByComparisonsAreConstantsAndBuffersCanBeFrozen) {
  OnnxModelBuilder m;
  m.Input("scores", {2, 3, 3});
  m.Initializer("causal_mask", {3, 3}, {1, 0, 0, 1, 1, 0, 1, 1, 1});
  m.Initializer("zero", {}, {0.f});
  m.Initializer("minus_inf", {}, {-INFINITY});
  m.Initializer("cos_table", {3, 3}, RandomValues(9, 9));
  m.Initializer("weight", {3, 3}, RandomValues(9, 10));
  m.Node("Equal", {"causal_mask", "zero"}, {"masked"}, "equal");
  m.Node("Where", {"masked", "minus_inf", "scores"}, {"filled"}, "where");
  m.Node("Mul", {"filled", "cos_table"}, {"rotated"}, "mul_cos");
  m.Node("MatMul", {"rotated", "weight"}, {"y"}, "project");
  m.Output("y");
  const std::string path = m.Save(TempDir());
  OnnxImportOptions options;
  options.training = true;
  const OnnxModel trained = ImportOnnx(path, options);
  EXPECT_FALSE(Learnable(trained, "causal_mask"));
  EXPECT_FALSE(Learnable(trained, "minus_inf"));
  EXPECT_TRUE(Learnable(trained, "cos_table"));
  EXPECT_TRUE(Learnable(trained, "weight"));
  options.frozen_initializers = {"cos_table"};
  const OnnxModel frozen = ImportOnnx(path, options);
  EXPECT_FALSE(Learnable(frozen, "cos_table"));
  EXPECT_TRUE(Learnable(frozen, "weight"));
  // The masked scores are -inf above the diagonal, the rest pass.
  Net net = MakeNet(frozen, true);
  const std::vector<float> scores = RandomValues(18, 11);
  net.blob_by_name("scores")->WriteData(scores);
  net.ForwardNoLoss();
  const std::vector<float> filled = net.blob_by_name("filled")->ReadData();
  for (int i = 0; i < 18; ++i) {
    const int row = (i / 3) % 3, col = i % 3;
    if (col > row) EXPECT_EQ(filled[i], -INFINITY) << i;
    else EXPECT_EQ(filled[i], scores[i]) << i;
  }
  options.frozen_initializers = {"no_such_tensor"};
  try {
    ImportOnnx(path, options);
    FAIL() << "freezing a tensor that is not an initializer was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'no_such_tensor' (to freeze) is not an initializer"),
              std::string::npos) << e.what();
  }
}

// TorchScript's default constant folding turns nn.Linear's weight into a
// transposed copy named like a folded constant ("onnx::MatMul_12"): as a
// MatMul's weight it trains; a folded constant that is added does not.
TEST(OnnxTransformerImport, FoldedWeightsTrainAndFoldedAddendsDoNot) {
  OnnxModelBuilder m;
  m.Input("x", {2, 3, 4});
  m.Initializer("onnx::MatMul_12", {4, 5}, RandomValues(20, 12));
  m.Initializer("onnx::Add_13", {3, 5}, RandomValues(15, 13));
  m.Node("MatMul", {"x", "onnx::MatMul_12"}, {"projected"}, "project");
  m.Node("Add", {"projected", "onnx::Add_13"}, {"y"}, "add");
  m.Output("y");
  OnnxImportOptions options;
  options.training = true;
  const OnnxModel model = ImportOnnx(m.Save(TempDir()), options);
  EXPECT_TRUE(Learnable(model, "onnx::MatMul_12"));
  EXPECT_FALSE(Learnable(model, "onnx::Add_13"));
}

// torch.export's graph signature (the dynamo exporter's metadata_props of
// the graph, field 16, which Debian's onnx does not know) names the
// parameters: exactly those train, not a buffer nor a constant the exporter
// folded ("unsqueeze_2"), also where a listed parameter is not in the file.
TEST(OnnxTransformerImport, TorchExportSignatureNamesTheParameters) {
  auto model_with = [](const std::string& signature) {
    OnnxModelBuilder m;
    m.Input("x", {2, 3, 3});
    m.Initializer("blocks.0.scale", {3, 3}, RandomValues(9, 14));
    m.Initializer("rope_cos", {3, 3}, RandomValues(9, 15));
    m.Initializer("unsqueeze_2", {3, 3}, RandomValues(9, 16));
    m.Node("Mul", {"x", "blocks.0.scale"}, {"scaled"}, "scale");
    m.Node("Mul", {"scaled", "rope_cos"}, {"rotated"}, "rotate");
    m.Node("Add", {"rotated", "unsqueeze_2"}, {"y"}, "add");
    m.Output("y");
    onnx::StringStringEntryProto entry;
    entry.set_key("pkg.torch.export.ExportedProgram.graph_signature");
    entry.set_value(signature);
    onnx::GraphProto* graph = m.model().mutable_graph();
    graph->GetReflection()->MutableUnknownFields(graph)->AddLengthDelimited(
        16, entry.SerializeAsString());
    OnnxImportOptions options;
    options.training = true;
    return ImportOnnx(m.Save(TempDir()), options);
  };
  const std::string header = "\n# inputs\n";
  const OnnxModel decided = model_with(
      header + "p_blocks_0_scale: PARAMETER target='blocks.0.scale'\n"
               "b_rope_cos: BUFFER target='rope_cos' persistent=True\nx: USER_INPUT\n");
  EXPECT_TRUE(Learnable(decided, "blocks.0.scale"));
  EXPECT_FALSE(Learnable(decided, "rope_cos"));
  EXPECT_FALSE(Learnable(decided, "unsqueeze_2"));
  // A listed parameter the file lacks, with no node metadata to trace it
  // back (torch_export_folds.hpp): the signature still decides, and the
  // import names it as frozen rather than training a constant in its place.
  const OnnxModel folded = model_with(
      header + "p_blocks_0_scale: PARAMETER target='blocks.0.scale'\n"
               "p_head_weight: PARAMETER target='head.weight'\n"
               "b_rope_cos: BUFFER target='rope_cos' persistent=True\nx: USER_INPUT\n");
  EXPECT_TRUE(Learnable(folded, "blocks.0.scale"));
  EXPECT_FALSE(Learnable(folded, "rope_cos"));
  EXPECT_FALSE(Learnable(folded, "unsqueeze_2"));
  EXPECT_EQ(folded.frozen_parameters, std::vector<std::string>{"head.weight"});
}

// Run-time integers are held as floats; Div and Mod of them by a constant
// integer run in integer arithmetic (IntegerDivide): truncating Div, Mod
// with the divisor's sign (fmod 0), exact up to 2^24. A divisor known only
// at run time is refused with the message that asks for its value at
// import time.
TEST(OnnxTransformerImport, IntegerDivisionOfRunTimeIds) {
  OnnxModelBuilder m;
  m.Input("ids", {2, 3});
  SetInputType(&m, 0, onnx::TensorProto::INT64);
  m.Int64Initializer("divisor", {-7});
  m.Node("Div", {"ids", "divisor"}, {"quotient"}, "quotient");
  m.Node("Mod", {"ids", "divisor"}, {"remainder"}, "remainder");
  m.Output("quotient");
  m.Output("remainder");
  const OnnxModel model = ImportOnnx(m.Save(TempDir()));
  Net net = MakeNet(model, false);
  const std::vector<long> ids = {0, 20, -20, 16777215, 6, -13};
  net.blob_by_name("ids")->WriteData(std::vector<float>(ids.begin(), ids.end()));
  net.ForwardNoLoss();
  std::vector<float> quotient, remainder;
  for (long a : ids) {
    quotient.push_back(static_cast<float>(a / -7));
    long r = a % -7;
    if (r != 0 && r > 0) r += -7;  // the divisor's sign
    remainder.push_back(static_cast<float>(r));
  }
  ExpectNear(net.blob_by_name("quotient")->ReadData(), quotient, 0.f, "quotient");
  ExpectNear(net.blob_by_name("remainder")->ReadData(), remainder, 0.f, "remainder");

  OnnxModelBuilder runtime;
  runtime.Input("ids", {2, 3});
  SetInputType(&runtime, 0, onnx::TensorProto::INT64);
  runtime.Input("by", {1});
  SetInputType(&runtime, 1, onnx::TensorProto::INT64);
  runtime.Node("Div", {"ids", "by"}, {"half"}, "halve");
  runtime.Output("half");
  try {
    ImportOnnx(runtime.Save(TempDir()));
    FAIL() << "integer division by a run-time divisor was imported";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("node 'halve' (Div)"), std::string::npos) << what;
    EXPECT_NE(what.find("known at import time"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
