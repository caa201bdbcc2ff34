// Selection by a mask: Where and Trilu. On constants they are evaluated on
// the host. A run-time mask picks between two scalars (an attention mask
// from the inputs) or guards a softmax against NaN; otherwise the mask must
// be known at import time — as the causal masks exporters write are (tril
// of ones, masked_fill's condition):
// the selection is then a product with a fixed 0/1 mask plus a fixed
// addend, two BinaryOps with stored operands, so that the gradient reaches
// the kept elements only and no mask is computed on the device.
#include <cmath>

#include "import/onnx_graph.hpp"
#include "import/onnx_host_ops.hpp"

namespace dlcaffe {
namespace onnx_import {
namespace {

HostTensor FloatMask(const HostTensor& condition, bool keep_where_true) {
  HostTensor mask = HostUnary(condition, [keep_where_true](double c) {
    return double((c != 0) == keep_where_true);
  });
  mask.type = onnx::TensorProto::FLOAT;
  return mask;
}

// x * mask (mask a constant of 0s and 1s broadcast against x): a one-bottom
// BinaryOp; returns its top.
std::string MaskedBlob(NodeContext& ctx, int input, const HostTensor& mask, const std::string& top,
                       const std::string& suffix, std::vector<int64_t>* shape) {
  caffe::LayerParameter* layer = ctx.AddLayer("BinaryOp", {ctx.blob(input)}, {top}, suffix);
  caffe::BinaryOpParameter* p = layer->mutable_binary_op_param();
  p->set_operation(caffe::BinaryOpParameter::MUL);
  *p->mutable_operand_shape() = ToBlobShape(mask.shape);
  ctx.AddValueBlob(layer, mask);
  *shape = BroadcastShapes(ctx, ctx.shape(input), mask.shape);
  return top;
}

// Where(c, a, b) = c ? a : b (numpy broadcasting of all three).
// Where(IsNaN(p), 0, p) for p a Softmax's output (PyTorch's attention
// zeroes the rows a mask hides entirely): p lies in [0, 1] or is NaN, so it
// is max(p, 0), and OpenCL's fmax returns the other operand for a NaN.
bool ImportNanGuard(NodeContext& ctx) {
  const std::string& tested = ctx.input(0).nan_test_of;
  if (tested.empty()) return false;
  ONNX_REQUIRE(ctx, ctx.is_constant(1) && ctx.constant(1).count() == 1 &&
                        ctx.constant(1).values[0] == 0.0 && !ctx.is_constant(2) &&
                        ctx.blob(2) == tested && ctx.ProducerType(tested) == "Softmax",
               "IsNaN of run-time data is not supported except as Where(IsNaN(p), 0, p) after a "
               "Softmax (PyTorch's attention)");
  caffe::LayerParameter* layer = ctx.AddLayer("BinaryOp", {tested}, {ctx.output_name(0)});
  caffe::BinaryOpParameter* p = layer->mutable_binary_op_param();
  p->set_operation(caffe::BinaryOpParameter::MAX);
  *p->mutable_operand_shape() = ToBlobShape({});
  ctx.AddValueBlob(layer, ctx.constant(1));
  ctx.SetOutput(0, ctx.shape(2));
  return true;
}

// Where(c, a, b) with a run-time 0/1 condition c and scalar constants a, b
// (an attention mask turned into 0 and the most negative float): b + c (a -
// b), one Power layer, where that gives a and b exactly in float.
// Whether input i holds whole numbers (a run-time integer tensor, or an
// integer constant).
bool HoldsIntegers(const NodeContext& ctx, int i) {
  return ctx.is_constant(i) ? ctx.constant(i).is_integer() : ctx.input(i).integer;
}

void ImportRunTimeCondition(NodeContext& ctx) {
  if (HoldsIntegers(ctx, 1) && HoldsIntegers(ctx, 2)) {
    // Between integers (torch's floor division of run-time indices): b + c
    // (a - b), exact for whole numbers below 2^24 and c in {0, 1}.
    const std::string difference = ctx.TempBlob("difference"), picked = ctx.TempBlob("picked");
    ctx.AddLayer("BinaryOp", {ctx.blob(1), ctx.blob(2)}, {difference}, "difference")
        ->mutable_binary_op_param()->set_operation(caffe::BinaryOpParameter::SUB);
    ctx.AddLayer("BinaryOp", {ctx.blob(0), difference}, {picked}, "picked")
        ->mutable_binary_op_param()->set_operation(caffe::BinaryOpParameter::MUL);
    ctx.AddLayer("BinaryOp", {picked, ctx.blob(2)}, {ctx.output_name(0)})
        ->mutable_binary_op_param()->set_operation(caffe::BinaryOpParameter::ADD);
    const std::vector<int64_t> shape =
        BroadcastShapes(ctx, BroadcastShapes(ctx, ctx.shape(0), ctx.shape(1)), ctx.shape(2));
    ctx.SetOutput(0, shape);
    ctx.MarkOutputInteger(0, true);
    ctx.SetRuntimeDims(0, ctx.BroadcastRuntimeDims(shape.size()));
    return;
  }
  ONNX_REQUIRE(ctx, ctx.is_constant(1) && ctx.is_constant(2) && ctx.constant(1).count() == 1 &&
                        ctx.constant(2).count() == 1,
               "a condition known only at run time is not supported except between two scalar "
               "constants (an attention mask)");
  const float a = static_cast<float>(ctx.constant(1).values[0]);
  const float b = static_cast<float>(ctx.constant(2).values[0]);
  const float scale = a - b;
  const volatile float picked_a = scale * 1.f + b, picked_b = scale * 0.f + b;
  ONNX_REQUIRE(ctx, std::isfinite(a) && std::isfinite(b) && std::isfinite(scale) && picked_a == a &&
                        picked_b == b,
               "a run-time condition choosing between " << a << " and " << b
                   << " is not supported (only values that b + c (a - b) gives exactly in float)");
  caffe::LayerParameter* layer = ctx.AddLayer("Power", {ctx.blob(0)}, {ctx.output_name(0)});
  layer->mutable_power_param()->set_scale(scale);
  layer->mutable_power_param()->set_shift(b);
  ctx.SetOutput(0, ctx.shape(0));
  ctx.MarkOutputInteger(0, false);
}

void ImportWhere(NodeContext& ctx) {
  if (ImportNanGuard(ctx)) return;
  if (!ctx.is_constant(0)) return ImportRunTimeCondition(ctx);
  for (int i = 1; i < 3; ++i)
    ONNX_REQUIRE(ctx, !ctx.has_runtime_dims(i),
                 "a constant condition over values whose size follows the data is not supported");
  if (ctx.all_constant()) {
    HostTensor c = ctx.constant(0);
    c.type = ctx.constant(1).type;  // the results take the values' type
    HostTensor picked_a = HostBinary(ctx, c, ctx.constant(1), [](double m, double a) { return m != 0 ? a : 0; });
    HostTensor picked_b = HostBinary(ctx, c, ctx.constant(2), [](double m, double b) { return m != 0 ? 0 : b; });
    HostTensor out = HostBinary(ctx, picked_a, picked_b, [](double a, double b) { return a + b; });
    out.type = ctx.constant(1).type;
    return ctx.SetConstantOutput(0, out);
  }
  const HostTensor& condition = ctx.constant(0);
  const std::vector<int64_t> shape =
      BroadcastShapes(ctx, BroadcastShapes(ctx, ctx.shape(0), ctx.shape(1)), ctx.shape(2));
  // Run-time branches masked on the device; constant ones folded into one
  // addend: where(c, a, 0) + where(c, 0, b). (Adding a masked -inf this way
  // keeps the kept elements exact: x * 1 + 0.)
  std::vector<std::string> parts;
  std::vector<std::vector<int64_t>> part_shapes;
  HostTensor addend;
  bool has_addend = false;
  for (int branch = 1; branch <= 2; ++branch) {
    const bool keep_where_true = branch == 1;
    if (ctx.is_constant(branch)) {
      HostTensor picked = HostBinary(ctx, condition, ctx.constant(branch), [keep_where_true](double m, double v) {
        return (m != 0) == keep_where_true ? v : 0;
      });
      picked.type = onnx::TensorProto::FLOAT;
      addend = has_addend ? HostBinary(ctx, addend, picked, [](double a, double b) { return a + b; }) : picked;
      has_addend = true;
      continue;
    }
    std::vector<int64_t> part_shape;
    parts.push_back(MaskedBlob(ctx, branch, FloatMask(condition, keep_where_true),
                               ctx.TempBlob(keep_where_true ? "kept_a" : "kept_b"),
                               keep_where_true ? "mask_a" : "mask_b", &part_shape));
    part_shapes.push_back(part_shape);
  }
  std::string current = parts[0];
  std::vector<int64_t> current_shape = part_shapes[0];
  if (parts.size() == 2) {
    current_shape = BroadcastShapes(ctx, part_shapes[0], part_shapes[1]);
    const std::string sum = has_addend || current_shape != shape ? ctx.TempBlob("sum") : ctx.output_name(0);
    ctx.AddLayer("BinaryOp", {parts[0], parts[1]}, {sum}, "sum")
        ->mutable_binary_op_param()->set_operation(caffe::BinaryOpParameter::ADD);
    current = sum;
  }
  if (has_addend || current_shape != shape) {
    // The addend, broadcast to the output's shape where the parts fall short.
    if (!has_addend || BroadcastShapes(ctx, current_shape, addend.shape) != shape) {
      HostTensor zeros;
      zeros.shape = shape;
      zeros.values.assign(HostValueCount(shape), 0.0);
      addend = has_addend ? HostBinary(ctx, zeros, addend, [](double z, double a) { return z + a; }) : zeros;
    }
    caffe::LayerParameter* layer = ctx.AddLayer("BinaryOp", {current}, {ctx.output_name(0)}, "fill");
    caffe::BinaryOpParameter* p = layer->mutable_binary_op_param();
    p->set_operation(caffe::BinaryOpParameter::ADD);
    *p->mutable_operand_shape() = ToBlobShape(addend.shape);
    ctx.AddValueBlob(layer, addend);
  } else if (current != ctx.output_name(0)) {
    return ctx.SetOutput(0, shape, current);
  }
  ctx.SetOutput(0, shape);
}
REGISTER_ONNX_OP(ImportWhere, "Where");
ALLOW_RUNTIME_DIMS("Where");

// Trilu: the upper (j - i >= k) or lower (j - i <= k) triangle of the last
// two axes, the rest zero.
void ImportTrilu(NodeContext& ctx) {
  const int rank = ctx.rank(0);
  ONNX_REQUIRE(ctx, rank >= 2, "needs at least 2 axes, has " << rank);
  const bool upper = ctx.attr_int("upper", 1) != 0;
  const int64_t k = ctx.has_input(1) ? ctx.constant(1).ints().at(0) : 0;
  const int64_t rows = ctx.shape(0)[rank - 2], cols = ctx.shape(0)[rank - 1];
  HostTensor mask;
  mask.shape = {rows, cols};
  mask.values.resize(HostValueCount(mask.shape));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      // j - i against k without overflow: k may be any int64.
      const bool kept = upper ? (j - i >= k) : (j - i <= k);
      mask.values[i * cols + j] = kept;
    }
  if (ctx.is_constant(0)) {
    HostTensor out = HostBinary(ctx, ctx.constant(0), mask, [](double x, double m) { return m != 0 ? x : 0; });
    out.type = ctx.constant(0).type;
    return ctx.SetConstantOutput(0, out);
  }
  std::vector<int64_t> shape;
  MaskedBlob(ctx, 0, mask, ctx.output_name(0), "", &shape);
  ctx.SetOutput(0, shape);
}
REGISTER_ONNX_OP(ImportTrilu, "Trilu");

}  // namespace
}  // namespace onnx_import
}  // namespace dlcaffe
