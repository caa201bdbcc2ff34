// Elementwise ONNX ops: activations, arithmetic with numpy broadcasting,
// Clip, PRelu, Identity/Dropout/Cast. All-constant inputs are evaluated on
// the host (shape arithmetic); the rest become layers.
#include <cfloat>
#include <cmath>

#include "import/onnx_graph.hpp"
#include "import/onnx_host_ops.hpp"

namespace dlcaffe {
namespace onnx_import {
namespace {

// The output is the input's blob under another name (no layer).
void Alias(NodeContext& ctx) { ctx.SetOutputToInput(0, 0); }

void ImportIdentity(NodeContext& ctx) { Alias(ctx); }

void ImportDropout(NodeContext& ctx) {
  // Inference drops it; an import for training keeps it as the identity so
  // that a gradient check is deterministic (see OnnxImportOptions).
  const bool training_mode = ctx.has_input(2) && ctx.constant(2).values.at(0) != 0;
  const double ratio = ctx.has_input(1) ? ctx.constant(1).values.at(0) : 0.5;
  ONNX_REQUIRE(ctx, !training_mode || ratio == 0,
               "a Dropout in training mode (random masks) is not supported; import the model for "
               "training instead, where Dropout is the identity");
  Alias(ctx);
  // The identity keeps every element: the mask (exporters of training
  // graphs ask for it) is all true.
  if (ctx.has_output(1)) {
    HostTensor mask;
    mask.type = onnx::TensorProto::BOOL;
    mask.shape = ctx.shape(0);
    mask.values.assign(HostValueCount(mask.shape), 1.0);
    ctx.SetConstantOutput(1, mask);
  }
}

// Cast (and CastLike) to element type `to`.
void CastTo(NodeContext& ctx, int64_t to) {
  // Types the host values cannot hold exactly (float8 and 4-bit integers,
  // opset 19 and 21; strings; complex numbers).
  ONNX_REQUIRE(ctx, to >= onnx::TensorProto::FLOAT && to <= onnx::TensorProto::BFLOAT16 &&
                        to != onnx::TensorProto::STRING && to != onnx::TensorProto::COMPLEX64 &&
                        to != onnx::TensorProto::COMPLEX128,
               "casting to element type " << to << " (" << ElementTypeName(to) << ") is not supported");
  if (ctx.is_constant(0)) {
    HostTensor t = ctx.constant(0);
    t.type = static_cast<int>(to);
    if (t.is_integer())
      for (double& v : t.values) v = std::trunc(v);
    if (to == onnx::TensorProto::BOOL)
      for (double& v : t.values) v = v != 0;
    ctx.SetConstantOutput(0, t);
    return;
  }
  // Run-time integers (held as floats) cast to float or to another integer
  // type are the same values; a float cast to an integer would need rounding.
  const bool integer_to_integer = ctx.input(0).integer && IsIntegerType(static_cast<int>(to));
  if (!ctx.input(0).integer && IsIntegerType(static_cast<int>(to)) && to != onnx::TensorProto::BOOL) {
    // Floats to integers truncate toward zero (Faster R-CNN's feature level).
    ctx.AddLayer("Round", {ctx.blob(0)}, {ctx.output_name(0)})
        ->mutable_round_param()->set_mode(caffe::RoundParameter::TRUNCATE);
    ctx.SetOutput(0, ctx.shape(0));
    return ctx.MarkOutputInteger(0, true);
  }
  ONNX_REQUIRE(ctx, to == onnx::TensorProto::FLOAT || integer_to_integer,
               "casting a run-time tensor to "
                   << onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(to))
                   << " is not supported (dlcaffe computes in float)");
  if (to == onnx::TensorProto::BOOL) {
    // x != 0 of integers, as min(|x|, 1): masks later read as 0/1
    // (And as a product, Where as a blend).
    const std::string magnitude = ctx.TempBlob("abs");
    ctx.AddLayer("AbsVal", {ctx.blob(0)}, {magnitude}, "abs");
    caffe::LayerParameter* layer = ctx.AddLayer("BinaryOp", {magnitude}, {ctx.output_name(0)});
    caffe::BinaryOpParameter* p = layer->mutable_binary_op_param();
    p->set_operation(caffe::BinaryOpParameter::MIN);
    *p->mutable_operand_shape() = ToBlobShape({});
    HostTensor one;
    one.values = {1.0};
    ctx.AddValueBlob(layer, one);
    ctx.SetOutput(0, ctx.shape(0));
    ctx.MarkOutputInteger(0, true);
    return;
  }
  Alias(ctx);
  if (ctx.has_output(0) && to == onnx::TensorProto::FLOAT)
    ctx.MarkOutputInteger(0, false);
}

// `saturate` (opset 19) only concerns float8 targets, which are refused.
void ImportCast(NodeContext& ctx) {
  ctx.CheckAttributes({"to", "saturate"});
  CastTo(ctx, ctx.attr_int("to", onnx::TensorProto::FLOAT));
}

// CastLike (opset 15): Cast to the element type of input 1 (a run-time
// tensor is float, or an integer one the importer tracks as such).
void ImportCastLike(NodeContext& ctx) {
  ctx.CheckAttributes({"saturate"});
  const Value& target = ctx.input(1);
  CastTo(ctx, target.constant ? target.tensor.type
                              : target.integer ? onnx::TensorProto::INT64 : onnx::TensorProto::FLOAT);
}

// One layer of `type` on input 0, its parameters filled by `set`.
template <typename F>
void Unary(NodeContext& ctx, const std::string& type, F set) {
  caffe::LayerParameter* layer = ctx.AddLayer(type, {ctx.blob(0)}, {ctx.output_name(0)});
  set(layer);
  ctx.SetOutput(0, ctx.shape(0));
}
void Unary(NodeContext& ctx, const std::string& type) {
  Unary(ctx, type, [](caffe::LayerParameter*) {});
}

double Erf(double x) { return std::erf(x); }

// Activations and unary math: a layer each, or host values for constants.
void ImportUnary(NodeContext& ctx) {
  const std::string& op = ctx.op();
  if (ctx.is_constant(0)) {
    static const std::map<std::string, double (*)(double)> host = {
        {"Sqrt", [](double x) { return std::sqrt(x); }},
        {"Exp", [](double x) { return std::exp(x); }},
        {"Log", [](double x) { return std::log(x); }},
        {"Neg", [](double x) { return -x; }},
        {"Abs", [](double x) { return std::fabs(x); }},
        {"Reciprocal", [](double x) { return 1 / x; }},
        {"Floor", [](double x) { return std::floor(x); }},
        {"Ceil", [](double x) { return std::ceil(x); }},
        {"Round", [](double x) { return std::nearbyint(x); }},  // halves to even
        {"Relu", [](double x) { return x > 0 ? x : 0; }},
        {"Sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }},
        {"Tanh", [](double x) { return std::tanh(x); }},
        {"Erf", Erf},
        {"Not", [](double x) { return double(x == 0); }},
        {"IsNaN", [](double x) { return double(std::isnan(x)); }},
        {"Cos", [](double x) { return std::cos(x); }},  // rotary tables
        {"Sin", [](double x) { return std::sin(x); }},
    };
    auto it = host.find(op);
    if (it != host.end()) {
      HostTensor t = HostUnary(ctx.constant(0), it->second);
      if (op == "Not" || op == "IsNaN") t.type = onnx::TensorProto::BOOL;
      ctx.SetConstantOutput(0, t);
      return;
    }
  }
  if (op == "IsNaN") {
    // No layer: PyTorch's attention writes Where(IsNaN(p), 0, p) after its
    // softmax, which ImportWhere takes as one op.
    Value v;
    v.shape = ctx.shape(0);
    v.nan_test_of = ctx.blob(0);
    ctx.SetOutputValue(0, std::move(v));
    return;
  }
  if (op == "Not") {
    // Of 0/1 values: 1 - x.
    Unary(ctx, "Power", [](caffe::LayerParameter* l) {
      l->mutable_power_param()->set_scale(-1.f);
      l->mutable_power_param()->set_shift(1.f);
    });
    return ctx.MarkOutputInteger(0, true);
  }
  if (op == "Floor" || op == "Ceil" || op == "Round") {
    Unary(ctx, "Round", [&](caffe::LayerParameter* l) {
      l->mutable_round_param()->set_mode(op == "Floor"  ? caffe::RoundParameter::FLOOR
                                         : op == "Ceil" ? caffe::RoundParameter::CEIL
                                                        : caffe::RoundParameter::HALF_EVEN);
    });
    return;
  }
  if (op == "Relu") return Unary(ctx, "ReLU");
  if (op == "Sigmoid") return Unary(ctx, "Sigmoid");
  if (op == "Tanh") return Unary(ctx, "TanH");
  if (op == "Abs") return Unary(ctx, "AbsVal");
  if (op == "Erf") return Unary(ctx, "Erf");
  if (op == "Softplus") return Unary(ctx, "BNLL");  // log(1 + e^x)
  if (op == "HardSwish") return Unary(ctx, "HardSwish");
  if (op == "Exp") return Unary(ctx, "Exp");
  if (op == "Log") return Unary(ctx, "Log");
  if (op == "Cos" || op == "Sin") return Unary(ctx, op);  // rotary tables of run-time positions
  if (op == "Sqrt")
    return Unary(ctx, "Power", [](caffe::LayerParameter* l) { l->mutable_power_param()->set_power(0.5f); });
  if (op == "Reciprocal")
    return Unary(ctx, "Power", [](caffe::LayerParameter* l) { l->mutable_power_param()->set_power(-1.f); });
  if (op == "Neg")
    return Unary(ctx, "Power", [](caffe::LayerParameter* l) { l->mutable_power_param()->set_scale(-1.f); });
  if (op == "LeakyRelu") {
    const float alpha = ctx.attr_float("alpha", 0.01f);
    return Unary(ctx, "ReLU", [&](caffe::LayerParameter* l) {
      l->mutable_relu_param()->set_negative_slope(alpha);
    });
  }
  if (op == "Elu") {
    const float alpha = ctx.attr_float("alpha", 1.f);
    return Unary(ctx, "ELU", [&](caffe::LayerParameter* l) { l->mutable_elu_param()->set_alpha(alpha); });
  }
  if (op == "HardSigmoid") {
    const float alpha = ctx.attr_float("alpha", 0.2f), beta = ctx.attr_float("beta", 0.5f);
    return Unary(ctx, "HardSigmoid", [&](caffe::LayerParameter* l) {
      l->mutable_hard_sigmoid_param()->set_alpha(alpha);
      l->mutable_hard_sigmoid_param()->set_beta(beta);
    });
  }
  if (op == "Gelu") {
    // Opset 20: the exact GELU or its tanh approximation.
    ctx.CheckAttributes({"approximate"});
    const std::string approximate = ctx.attr_string("approximate", "none");
    ONNX_REQUIRE(ctx, approximate == "none" || approximate == "tanh",
                 "approximate '" << approximate << "' is not supported");
    return Unary(ctx, "GELU", [&](caffe::LayerParameter* l) {
      l->mutable_gelu_param()->set_approximate(approximate == "tanh" ? caffe::GELUParameter::TANH
                                                                     : caffe::GELUParameter::NONE);
    });
  }
  if (op == "Selu") {
    // gamma * elu_alpha(x): an ELU and a Power scaling its output.
    const float alpha = ctx.attr_float("alpha", 1.67326319217681884765625f);
    const float gamma = ctx.attr_float("gamma", 1.05070102214813232421875f);
    const std::string elu = ctx.TempBlob("elu");
    ctx.AddLayer("ELU", {ctx.blob(0)}, {elu}, "elu")->mutable_elu_param()->set_alpha(alpha);
    ctx.AddLayer("Power", {elu}, {ctx.output_name(0)})->mutable_power_param()->set_scale(gamma);
    ctx.SetOutput(0, ctx.shape(0));
    return;
  }
  ONNX_REQUIRE(ctx, false, "run-time inputs are not supported");
}
REGISTER_ONNX_OP(ImportUnary, "Relu", "Sigmoid", "Tanh", "Abs", "Erf", "Softplus", "HardSwish", "Exp", "Log", "Sqrt", "Reciprocal", "Neg", "LeakyRelu", "Elu", "HardSigmoid", "Selu", "Floor", "Ceil", "Round", "Not", "Gelu", "IsNaN", "Cos", "Sin");
REGISTER_ONNX_OP(ImportIdentity, "Identity");
REGISTER_ONNX_OP(ImportDropout, "Dropout");
REGISTER_ONNX_OP(ImportCast, "Cast");
REGISTER_ONNX_OP(ImportCastLike, "CastLike");

void ImportClip(NodeContext& ctx) {
  float lo = -FLT_MAX, hi = FLT_MAX;
  if (ctx.opset() < 11) {
    lo = ctx.attr_float("min", lo);
    hi = ctx.attr_float("max", hi);
  } else {
    if (ctx.has_input(1)) lo = static_cast<float>(ctx.constant(1).values.at(0));
    if (ctx.has_input(2)) hi = static_cast<float>(ctx.constant(2).values.at(0));
  }
  if (ctx.is_constant(0)) {
    ctx.SetConstantOutput(0, HostUnary(ctx.constant(0), [&](double x) {
                            return x < lo ? lo : (x > hi ? hi : x);
                          }));
    return;
  }
  if (lo == 0.f && hi == FLT_MAX) return Unary(ctx, "ReLU");
  Unary(ctx, "Clip", [&](caffe::LayerParameter* l) {
    l->mutable_clip_param()->set_min(lo);
    l->mutable_clip_param()->set_max(hi);
  });
}
REGISTER_ONNX_OP(ImportClip, "Clip");

void ImportPRelu(NodeContext& ctx) {
  const auto& x = ctx.shape(0);
  const HostTensor& slope = ctx.constant(1);
  const int64_t channels = x.size() >= 2 ? x[1] : 1;
  // A slope per channel (C, C x 1 x 1, ...) or one shared slope.
  bool per_channel = slope.count() == channels && x.size() >= 2;
  if (per_channel && slope.shape.size() > 0) {
    // The channel axis must line up with the input's axis 1 under broadcasting.
    const size_t off = x.size() - slope.shape.size();
    per_channel = false;
    for (size_t i = 0; i < slope.shape.size(); ++i)
      if (slope.shape[i] == channels && off + i == 1) per_channel = true;
  }
  ONNX_REQUIRE(ctx, per_channel || slope.count() == 1,
               "a slope of shape " << ShapeString(slope.shape) << " for an input of shape "
                                   << ShapeString(x) << " is not supported (one slope, or one per channel)");
  caffe::LayerParameter* layer = ctx.AddLayer("PReLU", {ctx.blob(0)}, {ctx.output_name(0)});
  if (!per_channel) layer->mutable_prelu_param()->set_channel_shared(true);
  ctx.AddParamBlob(layer, 1, {per_channel ? channels : 1});
  ctx.SetOutput(0, x);
}
REGISTER_ONNX_OP(ImportPRelu, "PRelu");

// ---- binary arithmetic ----

const std::map<std::string, std::function<double(double, double)>>& HostBinaryOps() {
  static const std::map<std::string, std::function<double(double, double)>> ops = {
      {"Add", [](double a, double b) { return a + b; }},
      {"Sub", [](double a, double b) { return a - b; }},
      {"Mul", [](double a, double b) { return a * b; }},
      {"Div", [](double a, double b) { return a / b; }},
      {"Pow", [](double a, double b) { return std::pow(a, b); }},
      {"Max", [](double a, double b) { return a > b ? a : b; }},
      {"Min", [](double a, double b) { return a < b ? a : b; }},
      {"Equal", [](double a, double b) { return double(a == b); }},
      {"Less", [](double a, double b) { return double(a < b); }},
      {"Greater", [](double a, double b) { return double(a > b); }},
      {"LessOrEqual", [](double a, double b) { return double(a <= b); }},
      {"GreaterOrEqual", [](double a, double b) { return double(a >= b); }},
      {"And", [](double a, double b) { return double(a != 0 && b != 0); }},
      {"Or", [](double a, double b) { return double(a != 0 || b != 0); }},
      {"Xor", [](double a, double b) { return double((a != 0) != (b != 0)); }},
      {"Mod", [](double a, double b) { return std::fmod(a, b); }},  // fmod = 1
      {"ModInteger", [](double a, double b) { return a - std::floor(a / b) * b; }},  // sign of b
  };
  return ops;
}

caffe::BinaryOpParameter::Operation BinaryOperation(const std::string& op) {
  static const std::map<std::string, caffe::BinaryOpParameter::Operation> ops = {
      {"Add", caffe::BinaryOpParameter::ADD}, {"Sub", caffe::BinaryOpParameter::SUB},
      {"Mul", caffe::BinaryOpParameter::MUL}, {"Div", caffe::BinaryOpParameter::DIV},
      {"Pow", caffe::BinaryOpParameter::POW}, {"Max", caffe::BinaryOpParameter::MAX},
      {"Min", caffe::BinaryOpParameter::MIN}, {"Equal", caffe::BinaryOpParameter::EQUAL},
      {"Less", caffe::BinaryOpParameter::LESS}, {"LessOrEqual", caffe::BinaryOpParameter::LESS_EQUAL},
      {"Greater", caffe::BinaryOpParameter::GREATER},
      {"GreaterOrEqual", caffe::BinaryOpParameter::GREATER_EQUAL}};
  return ops.at(op);
}

// A non-learnable scalar constant on one side: a Power layer,
// (shift + scale * x) ^ power, for the forms it covers exactly.
bool ImportScalarAsPower(NodeContext& ctx, int const_index, double c) {
  const std::string& op = ctx.op();
  const bool const_first = const_index == 0;
  const int x = 1 - const_index;
  float power = 1, scale = 1, shift = 0;
  if (op == "Add") {
    shift = static_cast<float>(c);
  } else if (op == "Sub") {
    if (const_first) { scale = -1; shift = static_cast<float>(c); } else { shift = static_cast<float>(-c); }
  } else if (op == "Mul") {
    scale = static_cast<float>(c);
  } else if (op == "Div" && !const_first && c != 0) {
    scale = static_cast<float>(1.0 / c);
    // Only when 1/c is exact, so that x * (1/c) == x / c bit for bit.
    if (static_cast<double>(scale) * c != 1.0) return false;
  } else if (op == "Pow" && !const_first) {
    power = static_cast<float>(c);
  } else {
    return false;
  }
  if (power == 1 && scale == 1 && shift == 0) {
    // x + 0, x * 1, x ^ 1: x itself (a decoding step's one-position mask
    // adds 0 to the scores; the attention fusion then sees no mask).
    ctx.SetOutputToInput(0, x);
    return true;
  }
  caffe::LayerParameter* layer = ctx.AddLayer("Power", {ctx.blob(x)}, {ctx.output_name(0)});
  caffe::PowerParameter* p = layer->mutable_power_param();
  p->set_power(power);
  p->set_scale(scale);
  p->set_shift(shift);
  ctx.SetOutput(0, ctx.shape(x));
  return true;
}

// The axes [first, first + n) of `shape` where `small` (right-aligned
// against it) has its non-1 dimensions, if they are contiguous and equal
// to shape's; false otherwise.
bool ContiguousBroadcast(const std::vector<int64_t>& shape, const std::vector<int64_t>& small,
                         int* first, int* n) {
  const int off = static_cast<int>(shape.size() - small.size());
  int lo = -1, hi = -1;
  for (size_t i = 0; i < small.size(); ++i) {
    if (small[i] == 1 && shape[off + i] != 1) continue;
    if (small[i] != shape[off + i]) return false;
    if (lo < 0) lo = off + static_cast<int>(i);
    hi = off + static_cast<int>(i);
  }
  if (lo < 0) return false;
  for (int i = lo; i <= hi; ++i)
    if (small[i - off] == 1 && shape[i] != 1) return false;  // a hole: not one block
  *first = lo;
  *n = hi - lo + 1;
  return true;
}

// x * s and x + b where s or b spans a block of x's axes (per channel,
// [C,1,1] against N x C x H x W; or per sample and channel, [N,C,1,1], a
// squeeze-excitation gate): Caffe's Scale and Bias layers, which run as
// one broadcast pass, instead of a general BinaryOp.
bool ImportAsChannelScaleOrBias(NodeContext& ctx, const std::vector<int64_t>& shape) {
  const std::string& op = ctx.op();
  if (op != "Mul" && op != "Add") return false;
  for (int small = 0; small < 2; ++small) {
    const int x = 1 - small;
    if (ctx.shape(x) != shape || ctx.is_weight(x) || ctx.shape(small) == shape) continue;
    int first = 0, n = 0;
    if (!ContiguousBroadcast(shape, ctx.shape(small), &first, &n)) continue;
    const std::vector<int64_t> block(shape.begin() + first, shape.begin() + first + n);
    const std::string type = op == "Mul" ? "Scale" : "Bias";
    caffe::LayerParameter* layer;
    if (ctx.is_weight(small)) {
      layer = ctx.AddLayer(type, {ctx.blob(x)}, {ctx.output_name(0)});
      ctx.AddParamBlob(layer, small, block);
    } else {
      // The run-time operand as the layer's second bottom, reshaped to the block.
      std::string operand = ctx.blob(small);
      if (ctx.shape(small) != block) {
        const std::string reshaped = ctx.TempBlob("block");
        *ctx.AddLayer("Reshape", {operand}, {reshaped}, "block")->mutable_reshape_param()->mutable_shape() =
            ToBlobShape(block);
        operand = reshaped;
      }
      layer = ctx.AddLayer(type, {ctx.blob(x), operand}, {ctx.output_name(0)});
    }
    if (op == "Mul") {
      layer->mutable_scale_param()->set_axis(first);
      layer->mutable_scale_param()->set_num_axes(n);
    } else {
      layer->mutable_bias_param()->set_axis(first);
      layer->mutable_bias_param()->set_num_axes(n);
    }
    ctx.SetOutput(0, shape);
    return true;
  }
  return false;
}

// The inputs folded left to right by two-input BinaryOps of `operation`
// (numpy broadcasting throughout).
void ChainOfBinaryOps(NodeContext& ctx, caffe::BinaryOpParameter::Operation operation) {
  std::string current = ctx.blob(0);
  std::vector<int64_t> shape = ctx.shape(0);
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    shape = BroadcastShapes(ctx, shape, ctx.shape(i));
    const std::string top = i + 1 == ctx.num_inputs() ? ctx.output_name(0) : ctx.TempBlob("partial" + std::to_string(i));
    ctx.AddLayer("BinaryOp", {current, ctx.blob(i)}, {top}, "input" + std::to_string(i))
        ->mutable_binary_op_param()->set_operation(operation);
    current = top;
  }
  ctx.SetOutput(0, shape);
}

// Max/Min of one or of three and more inputs.
void ImportVariadic(NodeContext& ctx) {
  if (ctx.num_inputs() == 1) return Alias(ctx);
  ONNX_REQUIRE(ctx, !ctx.all_constant(), "constant inputs are not supported");
  ChainOfBinaryOps(ctx, BinaryOperation(ctx.op()));
}

void ImportBinaryLayers(NodeContext& ctx) {
  const std::string& op = ctx.op();
  if ((op == "Max" || op == "Min") && ctx.num_inputs() != 2) return ImportVariadic(ctx);
  ONNX_REQUIRE(ctx, ctx.num_inputs() == 2, "takes 2 inputs here, got " << ctx.num_inputs());
  if (ctx.all_constant()) {
    const std::string host_op = op == "Mod" && ctx.attr_int("fmod", 0) == 0 ? "ModInteger" : op;
    HostTensor out = HostBinary(ctx, ctx.constant(0), ctx.constant(1), HostBinaryOps().at(host_op));
    if (op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
        op == "GreaterOrEqual" || op == "And" || op == "Or" || op == "Xor")
      out.type = onnx::TensorProto::BOOL;
    ctx.SetConstantOutput(0, out);
    return;
  }
  if (op == "Xor") {
    // Of 0/1 values: |a - b|.
    const std::string difference = ctx.TempBlob("difference");
    ctx.AddLayer("BinaryOp", {ctx.blob(0), ctx.blob(1)}, {difference}, "difference")
        ->mutable_binary_op_param()->set_operation(caffe::BinaryOpParameter::SUB);
    ctx.AddLayer("AbsVal", {difference}, {ctx.output_name(0)});
    ctx.SetOutput(0, BroadcastShapes(ctx, ctx.shape(0), ctx.shape(1)));
    ctx.MarkOutputInteger(0, true);
    return;
  }
  if ((op == "Div" || op == "Mod") && ctx.input(0).integer && !ctx.is_constant(0) &&
      ctx.is_constant(1) && ctx.constant(1).count() == 1 && ctx.constant(1).is_integer()) {
    // Run-time integers by a constant integer (a flat top-k index split into
    // anchor and class): integer arithmetic on the device.
    const double divisor = ctx.constant(1).values[0];
    ONNX_REQUIRE(ctx, divisor != 0, "divides by 0");
    caffe::LayerParameter* layer =
        ctx.AddLayer("IntegerDivide", {ctx.blob(0)}, {ctx.output_name(0)});
    caffe::IntegerDivideParameter* p = layer->mutable_integer_divide_param();
    p->set_divisor(static_cast<int64_t>(divisor));
    p->set_operation(op == "Div" ? caffe::IntegerDivideParameter::QUOTIENT
                     : ctx.attr_int("fmod", 0) ? caffe::IntegerDivideParameter::REMAINDER
                                                : caffe::IntegerDivideParameter::FLOOR_REMAINDER);
    ctx.SetOutput(0, BroadcastShapes(ctx, ctx.shape(0), ctx.shape(1)));
    ctx.MarkOutputInteger(0, true);
    return;
  }
  if (op == "And" || op == "Or") {
    // Booleans are 0/1 at run time (Cast to bool makes them so): And is the
    // product, Or the larger.
    ChainOfBinaryOps(ctx, op == "And" ? caffe::BinaryOpParameter::MUL : caffe::BinaryOpParameter::MAX);
    ctx.MarkOutputInteger(0, true);
    return;
  }
  static const std::set<std::string> kLayerOps = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"};
  static const std::set<std::string> kComparisons = {"Equal", "Less", "LessOrEqual", "Greater",
                                                     "GreaterOrEqual"};
  if (kComparisons.count(op)) {
    // 0/1 of floats (run-time integers are exact in them): a BinaryOp.
    const auto shape = BroadcastShapes(ctx, ctx.shape(0), ctx.shape(1));
    const int c = ctx.is_weight(1) ? 1 : ctx.is_weight(0) ? 0 : -1;
    caffe::LayerParameter* layer =
        c < 0 ? ctx.AddLayer("BinaryOp", {ctx.blob(0), ctx.blob(1)}, {ctx.output_name(0)})
              : ctx.AddLayer("BinaryOp", {ctx.blob(1 - c)}, {ctx.output_name(0)});
    caffe::BinaryOpParameter* p = layer->mutable_binary_op_param();
    p->set_operation(BinaryOperation(op));
    if (c >= 0) {
      *p->mutable_operand_shape() = ToBlobShape(ctx.shape(c));
      p->set_operand_first(c == 0);
      ctx.AddValueBlob(layer, ctx.constant(c));
    }
    ctx.SetOutput(0, shape);
    ctx.MarkOutputInteger(0, true);
    return;
  }
  ONNX_REQUIRE(ctx, kLayerOps.count(op), "run-time inputs are not supported");
  // Integer division truncates, which the float layers do not: such an
  // operand must be known at import time (ctx.constant says so).
  if (op == "Div")
    for (int i = 0; i < 2; ++i)
      if (ctx.input(i).integer) ctx.constant(i);
  const auto shape = BroadcastShapes(ctx, ctx.shape(0), ctx.shape(1));
  if (!ctx.has_runtime_dims(0) && !ctx.has_runtime_dims(1) && ImportAsChannelScaleOrBias(ctx, shape))
    return;
  for (int c = 0; c < 2; ++c) {
    if (!ctx.is_weight(c) || ctx.is_weight(1 - c)) continue;
    const Value& v = ctx.input(c);
    const int x = 1 - c;
    const bool learnable = ctx.is_trainable(c);
    // A fixed scalar: a Power layer (no broadcast, no parameter).
    if (!learnable && v.tensor.count() == 1 && ctx.shape(x) == shape &&
        ImportScalarAsPower(ctx, c, v.tensor.values[0]))
      return;
    // A stored operand: blobs[0] of a one-bottom BinaryOp.
    caffe::LayerParameter* layer = ctx.AddLayer("BinaryOp", {ctx.blob(x)}, {ctx.output_name(0)});
    caffe::BinaryOpParameter* p = layer->mutable_binary_op_param();
    p->set_operation(BinaryOperation(op));
    *p->mutable_operand_shape() = ToBlobShape(v.shape);
    p->set_operand_first(c == 0);
    ctx.AddParamBlob(layer, c);
    ctx.SetOutput(0, shape);
    return;
  }
  // Two run-time operands of one shape: Eltwise where it computes the same.
  if (ctx.shape(0) == ctx.shape(1) && (op == "Add" || op == "Mul" || op == "Sub")) {
    caffe::LayerParameter* layer =
        ctx.AddLayer("Eltwise", {ctx.blob(0), ctx.blob(1)}, {ctx.output_name(0)});
    caffe::EltwiseParameter* p = layer->mutable_eltwise_param();
    p->set_operation(op == "Mul" ? caffe::EltwiseParameter::PROD : caffe::EltwiseParameter::SUM);
    if (op == "Sub") {
      p->add_coeff(1.f);
      p->add_coeff(-1.f);
    }
    ctx.SetOutput(0, shape);
    return;
  }
  caffe::LayerParameter* layer =
      ctx.AddLayer("BinaryOp", {ctx.blob(0), ctx.blob(1)}, {ctx.output_name(0)});
  layer->mutable_binary_op_param()->set_operation(BinaryOperation(op));
  ctx.SetOutput(0, shape);
}

// The binary ops, their output's run-time sizes those of the operands'
// axes it broadcasts from (numpy alignment, from the last axis).
void ImportBinary(NodeContext& ctx) {
  ImportBinaryLayers(ctx);
  if (!ctx.has_output(0)) return;
  bool any = false;
  for (int i = 0; i < ctx.num_inputs(); ++i) any = any || ctx.has_runtime_dims(i);
  if (!any) return;
  ctx.SetRuntimeDims(0, ctx.BroadcastRuntimeDims(ctx.output_value(0).shape.size()));
}
REGISTER_ONNX_OP(ImportBinary, "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Mod");

// Sum of several inputs (ONNX Sum, numpy broadcasting).
void ImportSum(NodeContext& ctx) {
  if (ctx.num_inputs() == 1) return Alias(ctx);
  bool same = true;
  for (int i = 1; i < ctx.num_inputs(); ++i) same = same && ctx.shape(i) == ctx.shape(0);
  if (!same || ctx.all_constant()) {
    // Broadcasting (opset 8): host values, or a chain of BinaryOp ADDs.
    if (ctx.all_constant()) {
      HostTensor t = ctx.constant(0);
      for (int i = 1; i < ctx.num_inputs(); ++i)
        t = HostBinary(ctx, t, ctx.constant(i), [](double a, double b) { return a + b; });
      return ctx.SetConstantOutput(0, t);
    }
    return ChainOfBinaryOps(ctx, caffe::BinaryOpParameter::ADD);
  }
  std::vector<std::string> bottoms;
  for (int i = 0; i < ctx.num_inputs(); ++i) bottoms.push_back(ctx.blob(i));
  ctx.AddLayer("Eltwise", bottoms, {ctx.output_name(0)});
  ctx.SetOutput(0, ctx.shape(0));
}
REGISTER_ONNX_OP(ImportSum, "Sum");

// Layers that follow their inputs' sizes, known only at run time where they
// come after a NonZero or a TopK of run-time k (a detector's scores).
ALLOW_RUNTIME_DIMS("Add", "Sub", "Mul", "Div", "Max", "Min", "Equal", "Less", "Greater",
                   "LessOrEqual", "GreaterOrEqual", "Cast", "Identity", "Clip", "Relu", "Sigmoid",
                   "Exp", "Log", "Sqrt", "Neg", "Abs", "Floor", "Ceil", "Round", "Not", "And", "Or",
                   "Xor", "Mod");

}  // namespace
}  // namespace onnx_import
}  // namespace dlcaffe
