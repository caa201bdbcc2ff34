// Shape and data-movement ONNX ops: Constant, Shape, Gather, Reshape,
// Flatten, Squeeze/Unsqueeze, Transpose, Concat, Split, Slice, Pad, Expand,
// Tile, ConstantOfShape, Range. On constants they are evaluated on the host;
// on run-time tensors they become layers (Reshape, Permute, Concat, Slice,
// StridedSlice, Pad, Tile, ...).
#include <algorithm>
#include <climits>
#include <cmath>
#include <numeric>

#include "import/onnx_graph.hpp"
#include "import/onnx_host_ops.hpp"

namespace dlcaffe {
namespace onnx_import {
namespace {

HostTensor Int64Tensor(const std::vector<int64_t>& values, std::vector<int64_t> shape) {
  HostTensor t;
  t.type = onnx::TensorProto::INT64;
  t.shape = std::move(shape);
  for (int64_t v : values) t.values.push_back(static_cast<double>(v));
  return t;
}

// A reshape of input 0 to `shape`: host values or a Reshape layer. The layer
// gets `layer_dims` where given (Caffe's 0 = copy, -1 = infer), so that it
// still fits when the batch changes after import.
void ReshapeTo(NodeContext& ctx, const std::vector<int64_t>& shape,
               const std::vector<int64_t>& layer_dims = {}) {
  ONNX_REQUIRE(ctx, ShapeCount(shape) == ShapeCount(ctx.shape(0)),
               "cannot reshape " << ShapeString(ctx.shape(0)) << " to " << ShapeString(shape));
  ONNX_REQUIRE(ctx, !ctx.has_runtime_dims(0), "internal: ReshapeTo of a run-time size");
  if (ctx.is_constant(0)) {
    HostTensor t = ctx.constant(0);
    t.shape = shape;
    ctx.SetConstantOutput(0, t);
    return;
  }
  if (shape == ctx.shape(0)) {
    ctx.SetOutput(0, shape, ctx.blob(0));
    return;
  }
  caffe::LayerParameter* layer = ctx.AddLayer("Reshape", {ctx.blob(0)}, {ctx.output_name(0)});
  *layer->mutable_reshape_param()->mutable_shape() =
      ToBlobShape(layer_dims.empty() ? shape : layer_dims);
  ctx.SetOutput(0, shape);
}

// A reshape of input 0, whose size follows the data, to `shape` (bounds)
// with `runtime` flags: a Reshape layer that infers the one run-time axis
// (-1), the others fixed.
void ReshapeRuntime(NodeContext& ctx, const std::vector<int64_t>& shape,
                    const std::vector<bool>& runtime) {
  std::vector<int64_t> dims = shape;
  int inferred = 0;
  for (size_t d = 0; d < dims.size(); ++d)
    if (runtime[d]) {
      dims[d] = -1;
      ++inferred;
    }
  ONNX_REQUIRE(ctx, inferred == 1,
               "reshaping a tensor with " << inferred << " axes whose size follows the data "
                                          << "(shape bound " << ShapeString(shape)
                                          << ") is not supported: one such axis is");
  caffe::LayerParameter* layer = ctx.AddLayer("Reshape", {ctx.blob(0)}, {ctx.output_name(0)});
  *layer->mutable_reshape_param()->mutable_shape() = ToBlobShape(dims);
  ctx.SetOutput(0, shape);
  ctx.SetRuntimeDims(0, runtime);
}

void ImportConstant(NodeContext& ctx) {
  if (ctx.has_attr("value")) return ctx.SetConstantOutput(0, ctx.attr_tensor("value"));
  HostTensor t;
  if (ctx.has_attr("value_float")) {
    t.values = {ctx.attr_float("value_float", 0)};
  } else if (ctx.has_attr("value_floats")) {
    for (float f : ctx.attr_floats("value_floats")) t.values.push_back(f);
    t.shape = {static_cast<int64_t>(t.values.size())};
  } else if (ctx.has_attr("value_int")) {
    t = Int64Tensor({ctx.attr_int("value_int", 0)}, {});
  } else if (ctx.has_attr("value_ints")) {
    const auto v = ctx.attr_ints("value_ints");
    t = Int64Tensor(v, {static_cast<int64_t>(v.size())});
  } else {
    ONNX_REQUIRE(ctx, false, "has no supported value attribute (sparse and string constants are not supported)");
  }
  ctx.SetConstantOutput(0, t);
}
REGISTER_ONNX_OP(ImportConstant, "Constant");

void ImportShape(NodeContext& ctx) {
  const auto& s = ctx.shape(0);
  const int rank = static_cast<int>(s.size());
  int64_t start = ctx.attr_int("start", 0), end = ctx.attr_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  const std::vector<bool> runtime = ctx.runtime_dims(0);
  if (std::any_of(runtime.begin() + start, runtime.begin() + end, [](bool d) { return d; })) {
    // Sizes that follow the data: the Shape layer writes them at run time.
    caffe::LayerParameter* layer = ctx.AddLayer("Shape", {ctx.blob(0)}, {ctx.output_name(0)});
    layer->mutable_shape_param()->set_start(static_cast<int>(start));
    layer->mutable_shape_param()->set_end(static_cast<int>(end));
    ctx.SetOutput(0, {end - start});
    ctx.SetRuntimeDims(0, {});
    ctx.MarkOutputInteger(0, true);
    Value& out = ctx.output_value(0);
    if (start == 0 && end == rank) out.shape_of = ctx.node().input(0);
    for (int64_t d = start; d < end; ++d)
      out.size_sources.push_back(runtime[d] ? Value::SizeSource{ctx.node().input(0), int(d), 0}
                                            : Value::SizeSource{"", -1, s[d]});
    return;
  }
  std::vector<int64_t> dims(s.begin() + start, s.begin() + end);
  ctx.SetConstantOutput(0, Int64Tensor(dims, {static_cast<int64_t>(dims.size())}));
}
REGISTER_ONNX_OP(ImportShape, "Shape");

// A run-time element count: the Shape layer's size form.
void RuntimeSize(NodeContext& ctx, const std::string& of_blob) {
  caffe::LayerParameter* layer = ctx.AddLayer("Shape", {of_blob}, {ctx.output_name(0)});
  layer->mutable_shape_param()->set_size(true);
  ctx.SetOutput(0, {});
  ctx.SetRuntimeDims(0, {});
  ctx.MarkOutputInteger(0, true);
}

void ImportSize(NodeContext& ctx) {
  if (ctx.has_runtime_dims(0)) return RuntimeSize(ctx, ctx.blob(0));
  ctx.SetConstantOutput(0, Int64Tensor({ShapeCount(ctx.shape(0))}, {}));
}
REGISTER_ONNX_OP(ImportSize, "Size");

// The size a size source stands for (its bound where it follows the data,
// which `follows` says).
int64_t SourceSize(const NodeContext& ctx, const Value::SizeSource& source, bool* follows) {
  *follows = false;
  if (source.value.empty()) return source.constant;
  const Value& v = ctx.named_value(source.value);
  *follows = source.axis < static_cast<int>(v.runtime_dims.size()) && v.runtime_dims[source.axis];
  return v.shape.at(source.axis);
}

// A FullLike layer writing `value` to blob `top` in the shape input
// `shape_input` holds at run time, made of traced sizes: its bounds, and
// in `runtime` which follow the data.
std::vector<int64_t> FullOfSizeSources(NodeContext& ctx, int shape_input, float value,
                                       const std::string& top, std::vector<bool>* runtime) {
  const std::vector<Value::SizeSource>& sources = ctx.input(shape_input).size_sources;
  // Not traced to sizes: the shape must be known at import time (the
  // error says so, naming the input).
  if (sources.empty()) ctx.constant(shape_input);
  std::string like;
  std::vector<int64_t> shape;
  caffe::FullLikeParameter p;
  p.set_value(value);
  runtime->clear();
  for (const Value::SizeSource& source : sources) {
    bool follows = false;
    const int64_t size = SourceSize(ctx, source, &follows);
    if (follows) {
      ONNX_REQUIRE(ctx, like.empty() || like == source.value,
                   "sizes known only at run time from two tensors are not supported");
      like = source.value;
      p.add_dim(-1);
      p.add_bottom_axis(source.axis);
    } else {
      p.add_dim(static_cast<int>(size));
    }
    shape.push_back(std::max<int64_t>(size, 1));
    runtime->push_back(follows);
  }
  ONNX_REQUIRE(ctx, !like.empty(), "internal: a run-time shape of fixed sizes");
  *ctx.AddLayer("FullLike", {ctx.MaterializeNamed(like)}, {top}, top == ctx.output_name(0) ? "" : "full")
       ->mutable_full_like_param() = p;
  return shape;
}

void ImportConstantOfShape(NodeContext& ctx) {
  HostTensor value;
  value.values = {0.0};
  if (ctx.has_attr("value")) value = ctx.attr_tensor("value");
  ONNX_REQUIRE(ctx, value.values.size() == 1,
               "attribute 'value' must hold one element, not " << value.values.size());
  if (!ctx.is_constant(0)) {
    // Sizes that follow the data (torchvision's labels, full_like(scores,
    // class); Faster R-CNN's pooled regions): a FullLike of the tensor they
    // come from, its fixed sizes as they are.
    std::vector<bool> runtime;
    const std::vector<int64_t> shape =
        FullOfSizeSources(ctx, 0, static_cast<float>(value.values.at(0)), ctx.output_name(0), &runtime);
    ctx.SetOutput(0, shape);
    ctx.SetRuntimeDims(0, runtime);
    ctx.MarkOutputInteger(0, IsIntegerType(value.type));
    return;
  }
  const auto shape = ctx.constant(0).ints();
  HostTensor t;
  t.type = value.type;
  t.shape = shape;
  t.values.assign(HostValueCount(shape), value.values.at(0));
  ctx.SetConstantOutput(0, t);
}
REGISTER_ONNX_OP(ImportConstantOfShape, "ConstantOfShape");

void ImportRange(NodeContext& ctx) {
  const double start = ctx.constant(0).values.at(0), limit = ctx.constant(1).values.at(0),
               delta = ctx.constant(2).values.at(0);
  ONNX_REQUIRE(ctx, delta != 0, "delta is 0");
  HostTensor t;
  t.type = ctx.constant(0).type;
  const double steps = std::ceil((limit - start) / delta);
  ONNX_REQUIRE(ctx, std::isfinite(steps) && steps <= double(kMaxHostValues),
               "start " << start << ", limit " << limit << " and delta " << delta
                        << " give more values than the importer computes on the host ("
                        << kMaxHostValues << ")");
  // A negative count is an empty range (a huge one would not convert).
  const int64_t n = steps > 0 ? static_cast<int64_t>(steps) : 0;
  for (int64_t i = 0; i < n; ++i) t.values.push_back(start + i * delta);
  t.shape = {n};
  ctx.SetConstantOutput(0, t);
}
REGISTER_ONNX_OP(ImportRange, "Range");

// ---- reshapes ----

// A Reshape to a shape known at run time whose elements' sources are
// recorded (onnx_size_sources.cpp): fixed sizes, and -1 for the one that
// follows the data.
void ReshapeToSizeSources(NodeContext& ctx) {
  const std::vector<Value::SizeSource>& sources = ctx.input(1).size_sources;
  if (sources.empty()) ctx.constant(1);  // must be known at import time, then
  const bool allow_zero = ctx.attr_int("allowzero", 0) != 0;
  const std::vector<bool> in_runtime = ctx.runtime_dims(0);
  std::vector<int64_t> shape, dims;
  std::vector<bool> runtime;
  for (size_t i = 0; i < sources.size(); ++i) {
    const Value::SizeSource& source = sources[i];
    bool follows = false;
    int64_t bound = SourceSize(ctx, source, &follows);
    if (source.value.empty() && bound == 0 && !allow_zero) {
      ONNX_REQUIRE(ctx, i < ctx.shape(0).size(), "shape entry " << i << " copies a dimension the input does not have");
      bound = ctx.shape(0)[i];
      follows = in_runtime[i];
    }
    ONNX_REQUIRE(ctx, bound >= -1, "shape entry " << i << " is " << bound);
    shape.push_back(bound);
    runtime.push_back(follows);
    dims.push_back(follows ? -1 : bound);
  }
  ONNX_REQUIRE(ctx, std::count(runtime.begin(), runtime.end(), true) <= 1,
               "a shape with several sizes known only at run time is not supported");
  // A -1 beside the run-time size (reshape(boxes, count, -1)): the input's
  // fixed sizes over the other fixed entries, the run-time ones matching.
  const auto infer = std::find(shape.begin(), shape.end(), int64_t{-1});
  if (infer != shape.end()) {
    ONNX_REQUIRE(ctx, std::count(shape.begin(), shape.end(), int64_t{-1}) == 1,
                 "the shape has more than one -1");
    const std::vector<int64_t>& in = ctx.shape(0);
    int64_t fixed_in = 1, fixed_out = 1, runtime_in = 0;
    for (size_t d = 0; d < in.size(); ++d)
      if (in_runtime[d]) ++runtime_in; else fixed_in *= in[d];
    for (size_t d = 0; d < shape.size(); ++d)
      if (!runtime[d] && shape[d] != -1) fixed_out *= shape[d];
    const bool runtime_out = std::count(runtime.begin(), runtime.end(), true) == 1;
    ONNX_REQUIRE(ctx, runtime_in == (runtime_out ? 1 : 0) && fixed_out > 0 && fixed_in % fixed_out == 0,
                 "inferring the -1 of this shape beside sizes known only at run time (input "
                     << ShapeString(in) << ") is not supported");
    *infer = fixed_in / fixed_out;
    dims[infer - shape.begin()] = *infer;
  }
  for (int64_t& d : shape) d = std::max<int64_t>(d, 1);
  caffe::LayerParameter* layer = ctx.AddLayer("Reshape", {ctx.blob(0)}, {ctx.output_name(0)});
  *layer->mutable_reshape_param()->mutable_shape() = ToBlobShape(dims);
  ctx.SetOutput(0, shape);
  ctx.SetRuntimeDims(0, runtime);
}

void ImportReshape(NodeContext& ctx) {
  if (!ctx.is_constant(1)) return ReshapeToSizeSources(ctx);
  const auto requested = ctx.constant(1).ints();
  const bool allow_zero = ctx.attr_int("allowzero", 0) != 0;
  const auto& in = ctx.shape(0);
  std::vector<int64_t> shape(requested.size());
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < requested.size(); ++i) {
    int64_t d = requested[i];
    if (d == 0 && !allow_zero) {
      ONNX_REQUIRE(ctx, i < in.size(), "shape entry " << i << " copies a dimension the input does not have");
      d = in[i];
    }
    if (d == -1) {
      ONNX_REQUIRE(ctx, infer < 0, "the shape has more than one -1");
      infer = static_cast<int>(i);
      continue;
    }
    ONNX_REQUIRE(ctx, d >= 0, "invalid shape entry " << d);
    shape[i] = d;
    ONNX_REQUIRE(ctx, !__builtin_mul_overflow(known, d, &known),
                 "the shape " << ShapeString(requested) << " has more elements than an int64 counts");
  }
  if (ctx.has_runtime_dims(0)) {
    // The input's size follows the data: the one -1 takes it.
    ONNX_REQUIRE(ctx, infer >= 0, "reshaping a tensor whose size follows the data without a -1 "
                                  "in the shape is not supported, got " << ShapeString(requested));
    std::vector<bool> runtime(shape.size(), false);
    runtime[infer] = true;
    shape[infer] = std::max<int64_t>(1, ShapeCount(in) / std::max<int64_t>(known, 1));
    return ReshapeRuntime(ctx, shape, runtime);
  }
  if (infer >= 0) {
    ONNX_REQUIRE(ctx, known > 0 && ShapeCount(in) % known == 0,
                 "cannot reshape " << ShapeString(in) << " to " << ShapeString(requested));
    shape[infer] = ShapeCount(in) / known;
  }
  ReshapeTo(ctx, shape);
}
REGISTER_ONNX_OP(ImportReshape, "Reshape");

void ImportFlatten(NodeContext& ctx) {
  const auto& in = ctx.shape(0);
  const int rank = static_cast<int>(in.size());
  int64_t axis = ctx.attr_int("axis", 1);
  if (axis < 0) axis += rank;
  ONNX_REQUIRE(ctx, axis >= 0 && axis <= rank, "axis " << axis << " out of range");
  const int64_t outer = std::accumulate(in.begin(), in.begin() + axis, int64_t{1}, std::multiplies<int64_t>());
  if (ctx.has_runtime_dims(0)) {
    // The side holding the run-time axis is inferred (-1).
    const std::vector<bool> r = ctx.runtime_dims(0);
    const bool outer_follows = std::any_of(r.begin(), r.begin() + axis, [](bool d) { return d; });
    const bool inner_follows = std::any_of(r.begin() + axis, r.end(), [](bool d) { return d; });
    ONNX_REQUIRE(ctx, !(outer_follows && inner_follows),
                 "flattening with sizes known only at run time on both sides is not supported");
    return ReshapeRuntime(ctx, {outer, ShapeCount(in) / std::max<int64_t>(outer, 1)},
                          {outer_follows, inner_follows});
  }
  // Flatten(axis 1), as classifiers end, keeps the batch: {0, -1}.
  ReshapeTo(ctx, {outer, ShapeCount(in) / std::max<int64_t>(outer, 1)},
            axis == 1 ? std::vector<int64_t>{0, -1} : std::vector<int64_t>{});
}
REGISTER_ONNX_OP(ImportFlatten, "Flatten");

std::vector<int64_t> AxesArgument(NodeContext& ctx, int input_index) {
  // Opset 13 moved axes from an attribute to an input.
  if (ctx.has_input(input_index)) return ctx.constant(input_index).ints();
  return ctx.attr_ints("axes");
}

void ImportSqueeze(NodeContext& ctx) {
  const auto& in = ctx.shape(0);
  const int rank = static_cast<int>(in.size());
  auto axes = AxesArgument(ctx, 1);
  std::vector<bool> drop(rank, false);
  if (axes.empty()) {
    for (int i = 0; i < rank; ++i) drop[i] = in[i] == 1;
  } else {
    for (int64_t a : axes) {
      const int axis = NormalizeAxis(ctx, a, rank);
      ONNX_REQUIRE(ctx, in[axis] == 1, "axis " << a << " has size " << in[axis] << ", not 1");
      drop[axis] = true;
    }
  }
  std::vector<int64_t> shape;
  std::vector<bool> runtime;
  const std::vector<bool> in_runtime = ctx.runtime_dims(0);
  for (int i = 0; i < rank; ++i)
    if (!drop[i]) {
      shape.push_back(in[i]);
      runtime.push_back(in_runtime[i]);
    }
  if (ctx.has_runtime_dims(0)) return ReshapeRuntime(ctx, shape, runtime);
  ReshapeTo(ctx, shape);
}
REGISTER_ONNX_OP(ImportSqueeze, "Squeeze");

void ImportUnsqueeze(NodeContext& ctx) {
  const auto& in = ctx.shape(0);
  const auto axes = AxesArgument(ctx, 1);
  const int rank = static_cast<int>(in.size() + axes.size());
  std::vector<bool> added(rank, false);
  for (int64_t a : axes) {
    const int axis = NormalizeAxis(ctx, a, rank);
    ONNX_REQUIRE(ctx, !added[axis], "axis " << a << " is given twice");
    added[axis] = true;
  }
  std::vector<int64_t> shape;
  std::vector<bool> runtime;
  const std::vector<bool> in_runtime = ctx.runtime_dims(0);
  size_t next = 0;
  for (int i = 0; i < rank; ++i) {
    runtime.push_back(added[i] ? false : bool(in_runtime[next]));
    shape.push_back(added[i] ? 1 : in[next++]);
  }
  if (ctx.has_runtime_dims(0)) return ReshapeRuntime(ctx, shape, runtime);
  ReshapeTo(ctx, shape);
}
REGISTER_ONNX_OP(ImportUnsqueeze, "Unsqueeze");

void ImportTranspose(NodeContext& ctx) {
  const int rank = ctx.rank(0);
  std::vector<int64_t> perm = ctx.attr_ints("perm");
  if (perm.empty())
    for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
  ONNX_REQUIRE(ctx, static_cast<int>(perm.size()) == rank, "perm has " << perm.size() << " entries for rank " << rank);
  std::vector<int> order;
  std::vector<int64_t> shape;
  for (int64_t p : perm) {
    order.push_back(NormalizeAxis(ctx, p, rank));
    shape.push_back(ctx.shape(0)[order.back()]);
  }
  const Value& v = ctx.input(0);
  // A transposed 2-d weight (a torch Linear's, fed to MatMul) stays that
  // parameter, in its own layout, for the layer that takes it.
  if (ctx.is_weight(0) && rank == 2 && order[0] == 1 && !v.initializer.empty() &&
      !v.tensor.is_integer())
    return ctx.SetTransposedInitializerOutput(0, HostTranspose(v.tensor, order), v.initializer);
  if (ctx.is_constant(0)) return ctx.SetConstantOutput(0, HostTranspose(ctx.constant(0), order));
  bool identity = true;
  for (int i = 0; i < rank; ++i) identity = identity && order[i] == i;
  if (identity) return ctx.SetOutputToInput(0, 0);
  caffe::LayerParameter* layer = ctx.AddLayer("Permute", {ctx.blob(0)}, {ctx.output_name(0)});
  for (int o : order) layer->mutable_permute_param()->add_order(o);
  ctx.SetOutput(0, shape);
  if (ctx.has_runtime_dims(0)) {
    const std::vector<bool> in_runtime = ctx.runtime_dims(0);
    std::vector<bool> runtime;
    for (int o : order) runtime.push_back(in_runtime[o]);
    ctx.SetRuntimeDims(0, runtime);
  }
}
REGISTER_ONNX_OP(ImportTranspose, "Transpose");

void ImportConcat(NodeContext& ctx) {
  const int rank = ctx.rank(0);
  const int axis = NormalizeAxis(ctx, ctx.attr_int("axis", 0), rank);
  std::vector<int64_t> shape = ctx.shape(0);
  shape[axis] = 0;
  std::vector<int> present;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const auto& s = ctx.shape(i);
    ONNX_REQUIRE(ctx, static_cast<int>(s.size()) == rank, "inputs of different ranks");
    for (int d = 0; d < rank; ++d)
      ONNX_REQUIRE(ctx, d == axis || s[d] == ctx.shape(0)[d],
                   "input " << i << " has shape " << ShapeString(s) << ", input 0 "
                            << ShapeString(ctx.shape(0)));
    shape[axis] += s[axis];
    // Empty parts add nothing (a part sized at run time may not be empty).
    if (s[axis] > 0 || ctx.has_runtime_dims(i)) present.push_back(i);
  }
  std::vector<bool> runtime(rank, false);
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_runtime_dims(i)) continue;
    const std::vector<bool> r = ctx.runtime_dims(i);
    for (int d = 0; d < rank; ++d) runtime[d] = runtime[d] || r[d];
  }
  if (ctx.all_constant()) {
    std::vector<const HostTensor*> parts;
    for (int i = 0; i < ctx.num_inputs(); ++i)
      if (ctx.has_input(i)) parts.push_back(&ctx.constant(i));
    return ctx.SetConstantOutput(0, HostConcat(parts, axis));
  }
  std::vector<std::string> bottoms;
  for (int i : present) bottoms.push_back(ctx.blob(i));
  if (bottoms.size() == 1) {
    ctx.SetOutput(0, shape, bottoms[0]);
  } else {
    ctx.AddLayer("Concat", bottoms, {ctx.output_name(0)})->mutable_concat_param()->set_axis(axis);
    ctx.SetOutput(0, shape);
  }
  ctx.SetRuntimeDims(0, runtime);
}
REGISTER_ONNX_OP(ImportConcat, "Concat");

void ImportSplit(NodeContext& ctx) {
  const auto& in = ctx.shape(0);
  const int axis = NormalizeAxis(ctx, ctx.attr_int("axis", 0), ctx.rank(0));
  ctx.CheckAttributes({"axis", "split", "num_outputs"});
  std::vector<int64_t> sizes = ctx.has_input(1) ? ctx.constant(1).ints() : ctx.attr_ints("split");
  const int n = ctx.num_outputs();
  ONNX_REQUIRE(ctx, !ctx.runtime_dims(0)[axis],
               "splitting an axis whose size follows the data is not supported");
  if (sizes.empty() && ctx.has_attr("num_outputs")) {
    // Opset 18: parts of ceil(size / num_outputs), the last one smaller.
    const int64_t parts = ctx.attr_int("num_outputs", 0);
    ONNX_REQUIRE(ctx, parts == n, "num_outputs is " << parts << " but the node has " << n << " outputs");
    const int64_t part = (in[axis] + n - 1) / n;
    ONNX_REQUIRE(ctx, part * (n - 1) < in[axis],
                 "axis " << axis << " of size " << in[axis] << " does not split into " << n
                         << " parts of " << part << " and a smaller last one");
    sizes.assign(n, part);
    sizes.back() = in[axis] - part * (n - 1);
  } else if (sizes.empty()) {
    ONNX_REQUIRE(ctx, in[axis] % n == 0, "axis " << axis << " of size " << in[axis]
                                               << " does not split into " << n << " equal parts");
    sizes.assign(n, in[axis] / n);
  } else {
    ONNX_REQUIRE(ctx, !ctx.has_attr("num_outputs"), "has both split sizes and num_outputs");
  }
  ONNX_REQUIRE(ctx, static_cast<int>(sizes.size()) == n &&
                        std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) == in[axis],
               "split sizes do not add up to the axis' size " << in[axis]);
  if (ctx.is_constant(0)) {
    int64_t start = 0;
    for (int k = 0; k < n; ++k) {
      std::vector<int64_t> starts(in.size(), 0), steps(in.size(), 1), out = in;
      starts[axis] = start;
      out[axis] = sizes[k];
      ctx.SetConstantOutput(k, HostSlice(ctx.constant(0), starts, steps, out));
      start += sizes[k];
    }
    return;
  }
  std::vector<std::string> tops;
  for (int k = 0; k < n; ++k)
    tops.push_back(ctx.has_output(k) ? ctx.output_name(k) : ctx.TempBlob("unused" + std::to_string(k)));
  caffe::LayerParameter* layer = ctx.AddLayer("Slice", {ctx.blob(0)}, tops);
  layer->mutable_slice_param()->set_axis(axis);
  int64_t point = 0;
  for (int k = 0; k + 1 < n; ++k) layer->mutable_slice_param()->add_slice_point(point += sizes[k]);
  for (int k = 0; k < n; ++k) {
    std::vector<int64_t> out = in;
    out[axis] = sizes[k];
    ctx.SetOutput(k, out);
    ctx.SetRuntimeDims(k, ctx.runtime_dims(0));
  }
}
REGISTER_ONNX_OP(ImportSplit, "Split");

// ONNX Slice's clamping of one axis: the first index and the count.
void ClampSlice(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t* first,
                int64_t* count) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    *count = end > start ? (end - start + step - 1) / step : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    *count = start > end ? (start - end - step - 1) / -step : 0;
  }
  *first = start;
}

// Slice to ends known only at run time (torchvision's split of the boxes
// at each image's count): StridedSlice reads them from its second bottom;
// the sliced axes follow the data.
void SliceToRunTimeEnds(NodeContext& ctx) {
  const int rank = ctx.rank(0);
  // Starts, axes and steps must be known at import time (the errors say
  // so, naming the input); ends a graph input gives are too.
  const std::vector<int64_t> starts = ctx.constant(1).ints();
  if (ctx.ProducerType(ctx.blob(2)).empty()) ctx.constant(2);
  std::vector<int64_t> axes;
  if (ctx.has_input(3)) axes = ctx.constant(3).ints();
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (ctx.has_input(4))
    for (int64_t step : ctx.constant(4).ints())
      ONNX_REQUIRE(ctx, step == 1, "a step other than 1 with run-time ends is not supported");
  ONNX_REQUIRE(ctx, ShapeCount(ctx.shape(2)) == static_cast<int64_t>(starts.size()) && axes.size() == starts.size(),
               "starts, ends and axes differ in length");
  caffe::LayerParameter* layer =
      ctx.AddLayer("StridedSlice", {ctx.blob(0), ctx.blob(2)}, {ctx.output_name(0)});
  caffe::StridedSliceParameter* p = layer->mutable_strided_slice_param();
  std::vector<bool> runtime = ctx.runtime_dims(0);
  for (size_t i = 0; i < starts.size(); ++i) {
    const int axis = NormalizeAxis(ctx, axes[i], rank);
    p->add_axis(axis);
    p->add_start(static_cast<int>(std::clamp<int64_t>(starts[i], INT_MIN, INT_MAX)));
    p->add_end(INT_MAX);  // replaced by bottom 1's
    runtime[axis] = true;
  }
  ctx.SetOutput(0, ctx.shape(0));
  ctx.SetRuntimeDims(0, runtime);
}

void ImportSlice(NodeContext& ctx) {
  if (ctx.opset() >= 10 && ctx.has_input(2) && !ctx.is_constant(2)) return SliceToRunTimeEnds(ctx);
  const auto& in = ctx.shape(0);
  const int rank = ctx.rank(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.attr_ints("starts");
    ends = ctx.attr_ints("ends");
    axes = ctx.attr_ints("axes");
  } else {
    starts = ctx.constant(1).ints();
    ends = ctx.constant(2).ints();
    if (ctx.has_input(3)) axes = ctx.constant(3).ints();
    if (ctx.has_input(4)) steps = ctx.constant(4).ints();
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  ONNX_REQUIRE(ctx, ends.size() == starts.size() && axes.size() == starts.size() && steps.size() == starts.size(),
               "starts, ends, axes and steps differ in length");
  std::vector<int64_t> first(rank, 0), step(rank, 1), out = in;
  // Axes whose size follows the data: the layer clamps at run time, from the
  // node's own starts and ends; `out` holds a bound.
  const std::vector<bool> runtime = ctx.runtime_dims(0);
  std::vector<int64_t> raw_start(rank, 0), raw_end(rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int axis = NormalizeAxis(ctx, axes[i], rank);
    ONNX_REQUIRE(ctx, steps[i] != 0, "step 0 on axis " << axis);
    raw_start[axis] = std::clamp<int64_t>(starts[i], INT_MIN, INT_MAX);
    raw_end[axis] = std::clamp<int64_t>(ends[i], INT_MIN, INT_MAX);
    // A step longer than the axis takes one element, as the axis' length + 1
    // does (and keeps INT64_MIN's negation and the layer's int in range).
    step[axis] = std::clamp<int64_t>(steps[i], -(in[axis] + 1), in[axis] + 1);
    ClampSlice(in[axis], starts[i], ends[i], step[axis], &first[axis], &out[axis]);
    if (runtime[axis]) {
      ONNX_REQUIRE(ctx, steps[i] == 1,
                   "a step other than 1 on axis " << axis << ", whose size follows the data, is not supported");
      out[axis] = std::max<int64_t>(out[axis], 1);
    }
  }
  if (ctx.is_constant(0)) return ctx.SetConstantOutput(0, HostSlice(ctx.constant(0), first, step, out));
  if (out == in && std::all_of(step.begin(), step.end(), [](int64_t s) { return s == 1; }) &&
      !ctx.has_runtime_dims(0))
    return ctx.SetOutput(0, out, ctx.blob(0));
  caffe::LayerParameter* layer = ctx.AddLayer("StridedSlice", {ctx.blob(0)}, {ctx.output_name(0)});
  caffe::StridedSliceParameter* p = layer->mutable_strided_slice_param();
  std::vector<bool> listed(rank, false);
  for (int64_t a : axes) listed[NormalizeAxis(ctx, a, rank)] = true;
  for (int d = 0; d < rank; ++d) {
    if (runtime[d]) {
      if (!listed[d]) continue;
      p->add_axis(d);
      p->add_start(static_cast<int>(raw_start[d]));
      p->add_end(static_cast<int>(raw_end[d]));
      p->add_step(1);
      continue;
    }
    if (out[d] == in[d] && step[d] == 1) continue;
    // Already clamped: the layer sees an exact [first, first + count * step) range.
    p->add_axis(d);
    p->add_start(static_cast<int>(first[d]));
    const int64_t end = first[d] + out[d] * step[d];
    p->add_end(static_cast<int>(step[d] < 0 && end < 0 ? INT_MIN : end));
    p->add_step(static_cast<int>(step[d]));
  }
  ctx.SetOutput(0, out);
  ctx.SetRuntimeDims(0, ctx.has_runtime_dims(0) ? runtime : std::vector<bool>{});
}
REGISTER_ONNX_OP(ImportSlice, "Slice");

// Rows of a stored table (input 0: an embedding's weight, a learned
// position table, a relative-position bias table) viewed as rows x width:
// Caffe's Embed layer, the table staying a parameter. The row indices are
// `constant_ids` (shape `ids_shape`, already in [0, rows)) or, when null,
// the run-time blob of input 1 (token ids, which Embed checks on the
// device). The rows come out as `out_shape`.
void EmbedRowsOfTable(NodeContext& ctx, int64_t rows, int64_t width, const HostTensor* constant_ids,
                      std::vector<int64_t> ids_shape, const std::vector<int64_t>& out_shape) {
  std::string ids;
  if (ids_shape.empty()) ids_shape = {1};
  if (constant_ids) {
    HostTensor indices = *constant_ids;
    indices.shape = ids_shape;
    indices.type = onnx::TensorProto::FLOAT;
    ids = ctx.TempBlob("indices");
    caffe::LayerParameter* fixed = ctx.AddLayer("Parameter", {}, {ids}, "indices");
    *fixed->mutable_parameter_param()->mutable_shape() = ToBlobShape(indices.shape);
    ctx.AddValueBlob(fixed, indices, indices.shape);
  } else {
    ONNX_REQUIRE(ctx, !ctx.shape(1).empty(), "a scalar run-time index is not supported");
    ids = ctx.blob(1);
  }
  std::vector<int64_t> embedded = ids_shape;
  embedded.push_back(width);
  const std::string rows_out = embedded == out_shape ? ctx.output_name(0) : ctx.TempBlob("rows");
  caffe::LayerParameter* layer = ctx.AddLayer("Embed", {ids}, {rows_out});
  caffe::EmbedParameter* p = layer->mutable_embed_param();
  p->set_input_dim(static_cast<uint32_t>(rows));
  p->set_num_output(static_cast<uint32_t>(width));
  p->set_bias_term(false);
  ctx.AddParamBlob(layer, 0, {rows, width});
  if (rows_out != ctx.output_name(0)) {
    caffe::LayerParameter* reshape = ctx.AddLayer("Reshape", {rows_out}, {ctx.output_name(0)}, "shape");
    *reshape->mutable_reshape_param()->mutable_shape() = ToBlobShape(out_shape);
  }
  ctx.SetOutput(0, out_shape);
  ctx.MarkOutputInteger(0, false);  // rows of a float table, whatever the ids
}

// Gather along axis 0 of a stored table: Embed. Negative constant indices
// count from the end, as ONNX says.
void GatherRowsOfTable(NodeContext& ctx) {
  const std::vector<int64_t>& table = ctx.shape(0);
  const int64_t rows = table[0], width = ShapeCount(table) / std::max<int64_t>(rows, 1);
  std::vector<int64_t> out = ctx.shape(1);
  out.insert(out.end(), table.begin() + 1, table.end());
  if (!ctx.is_constant(1)) return EmbedRowsOfTable(ctx, rows, width, nullptr, ctx.shape(1), out);
  HostTensor indices = ctx.constant(1);
  for (double& v : indices.values) {
    if (v < 0) v += rows;
    ONNX_REQUIRE(ctx, v >= 0 && v < rows, "index out of range for axis 0 of size " << rows);
  }
  EmbedRowsOfTable(ctx, rows, width, &indices, ctx.shape(1), out);
}

// GatherND (batch_dims 0) with constant indices: each index tuple of length
// k picks a slice of data's axes k.. . On constants it is evaluated on the
// host; on a stored table, the first k axes become Embed's rows; on
// run-time data, a GatherElements over the rows.
// The Gather layer: picks along `axis` of input 0 by the indices in blob
// `indices` (shape `index_shape`, run-time sizes `index_runtime`).
void GatherLayer(NodeContext& ctx, int axis, const std::string& indices,
                 const std::vector<int64_t>& index_shape, const std::vector<bool>& index_runtime) {
  const std::vector<int64_t>& data = ctx.shape(0);
  const std::vector<bool> data_runtime = ctx.runtime_dims(0);
  std::vector<int64_t> shape(data.begin(), data.begin() + axis);
  std::vector<bool> runtime(data_runtime.begin(), data_runtime.begin() + axis);
  shape.insert(shape.end(), index_shape.begin(), index_shape.end());
  runtime.insert(runtime.end(), index_runtime.begin(), index_runtime.end());
  shape.insert(shape.end(), data.begin() + axis + 1, data.end());
  runtime.insert(runtime.end(), data_runtime.begin() + axis + 1, data_runtime.end());
  ctx.AddLayer("Gather", {ctx.blob(0), indices}, {ctx.output_name(0)})
      ->mutable_gather_param()->set_axis(axis);
  ctx.SetOutput(0, shape);
  ctx.SetRuntimeDims(0, runtime);
  ctx.MarkOutputInteger(0, ctx.input(0).integer || ctx.input(0).tensor.is_integer());
}

void ImportGatherND(NodeContext& ctx) {
  ctx.CheckAttributes({"batch_dims"});
  ONNX_REQUIRE(ctx, ctx.attr_int("batch_dims", 0) == 0, "batch_dims other than 0 are not supported");
  const std::vector<int64_t>& data = ctx.shape(0);
  if (!ctx.is_constant(1)) {
    // Run-time indices of one axis (a mask's NonZero, transposed): the
    // Gather layer along axis 0, on the indices without their last axis.
    const std::vector<int64_t>& index_shape = ctx.shape(1);
    ONNX_REQUIRE(ctx, !index_shape.empty() && index_shape.back() == 1 && !ctx.runtime_dims(1).back(),
                 "run-time indices with a last axis other than 1 are not supported, got shape "
                     << ShapeString(index_shape));
    std::vector<int64_t> rows(index_shape.begin(), index_shape.end() - 1);
    std::vector<bool> rows_runtime = ctx.runtime_dims(1);
    rows_runtime.pop_back();
    std::vector<int64_t> dims = rows;
    int inferred = 0;
    for (size_t d = 0; d < dims.size(); ++d)
      if (rows_runtime[d]) dims[d] = -1, ++inferred;
    ONNX_REQUIRE(ctx, inferred <= 1, "indices with " << inferred << " axes sized at run time are not supported");
    const std::string flat = ctx.TempBlob("rows");
    *ctx.AddLayer("Reshape", {ctx.blob(1)}, {flat}, "rows")->mutable_reshape_param()->mutable_shape() =
        ToBlobShape(dims);
    return GatherLayer(ctx, 0, flat, rows, rows_runtime);
  }
  const HostTensor& indices = ctx.constant(1);
  ONNX_REQUIRE(ctx, !indices.shape.empty(), "indices must have at least one axis");
  const int64_t k = indices.shape.back();
  ONNX_REQUIRE(ctx, k >= 1 && k <= static_cast<int64_t>(data.size()),
               "the indices' last axis (" << k << ") must be 1 to the data's rank " << data.size());
  // Each tuple as one row number of data viewed as rows x width.
  int64_t rows = 1;
  for (int64_t d = 0; d < k; ++d) rows *= data[d];
  const int64_t width = ShapeCount(data) / std::max<int64_t>(rows, 1);
  HostTensor row_ids;
  row_ids.type = onnx::TensorProto::INT64;
  row_ids.shape.assign(indices.shape.begin(), indices.shape.end() - 1);
  const std::vector<int64_t> index = indices.ints();
  for (size_t t = 0; t < index.size() / k; ++t) {
    int64_t row = 0;
    for (int64_t j = 0; j < k; ++j) {
      int64_t i = index[t * k + j];
      if (i < 0) i += data[j];
      ONNX_REQUIRE(ctx, i >= 0 && i < data[j], "index " << index[t * k + j] << " is out of range for axis " << j << " of size " << data[j]);
      row = row * data[j] + i;
    }
    row_ids.values.push_back(static_cast<double>(row));
  }
  std::vector<int64_t> out = row_ids.shape;
  out.insert(out.end(), data.begin() + k, data.end());
  if (ctx.is_constant(0)) {
    HostTensor table = ctx.constant(0);
    table.shape = {rows, width};
    HostTensor gathered = HostGather(table, row_ids, 0);
    gathered.shape = out;
    return ctx.SetConstantOutput(0, gathered);
  }
  if (ctx.is_weight(0)) return EmbedRowsOfTable(ctx, rows, width, &row_ids, row_ids.shape, out);
  // Run-time data (an attention mask picked per batch and position): rows
  // of data viewed as rows x width, by a GatherElements along the rows.
  const int64_t picks = static_cast<int64_t>(row_ids.values.size());
  HostTensor row_index;
  row_index.type = onnx::TensorProto::INT64;
  row_index.shape = {picks, width};
  for (double row : row_ids.values) row_index.values.insert(row_index.values.end(), width, row);
  const std::string flat = ctx.TempBlob("rows");
  *ctx.AddLayer("Reshape", {ctx.blob(0)}, {flat}, "rows")->mutable_reshape_param()->mutable_shape() =
      ToBlobShape({rows, width});
  const std::string picked = ctx.TempBlob("picked");
  ctx.AddLayer("GatherElements", {flat, ctx.ConstantBlob(row_index, "indices")}, {picked}, "picked")
      ->mutable_gather_elements_param()->set_axis(0);
  *ctx.AddLayer("Reshape", {picked}, {ctx.output_name(0)})->mutable_reshape_param()->mutable_shape() =
      ToBlobShape(out);
  ctx.SetOutput(0, out);
}
REGISTER_ONNX_OP(ImportGatherND, "GatherND");

// CumSum of constants (positions from a mask's running count), on the host.
void ImportCumSum(NodeContext& ctx) {
  ctx.CheckAttributes({"exclusive", "reverse"});
  ONNX_REQUIRE(ctx, ctx.is_constant(0),
               "a running sum of run-time data is not supported (only of constants)");
  const HostTensor& x = ctx.constant(0);
  ONNX_REQUIRE(ctx, ctx.constant(1).count() == 1, "the axis must be a scalar");
  const int rank = static_cast<int>(x.shape.size());
  const int axis = NormalizeAxis(ctx, static_cast<int64_t>(ctx.constant(1).values[0]), rank);
  const bool exclusive = ctx.attr_int("exclusive", 0) != 0, reverse = ctx.attr_int("reverse", 0) != 0;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape[d];
  for (int d = axis + 1; d < rank; ++d) inner *= x.shape[d];
  const int64_t n = x.shape[axis];
  HostTensor out = x;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double sum = 0;
      for (int64_t step = 0; step < n; ++step) {
        const int64_t k = reverse ? n - 1 - step : step;
        const size_t at = static_cast<size_t>((o * n + k) * inner + i);
        const double value = x.values[at];
        if (!exclusive) sum += value;
        out.values[at] = sum;
        if (exclusive) sum += value;
      }
    }
  ctx.SetConstantOutput(0, out);
}
REGISTER_ONNX_OP(ImportCumSum, "CumSum");

// A Gather of fixed sizes out of a run-time Shape (Shape(boxes)[1] where
// only the box count follows the data): the constants.
bool GatherFixedSizes(NodeContext& ctx) {
  const std::vector<Value::SizeSource>& sources = ctx.input(0).size_sources;
  if (sources.empty() || !ctx.is_constant(1) || ctx.rank(0) != 1) return false;
  HostTensor picked = ctx.constant(1);
  picked.type = onnx::TensorProto::INT64;
  for (double& k : picked.values) {
    int64_t i = static_cast<int64_t>(k);
    if (i < 0) i += static_cast<int64_t>(sources.size());
    if (i < 0 || i >= static_cast<int64_t>(sources.size()) || !sources[i].value.empty()) return false;
    k = static_cast<double>(sources[i].constant);
  }
  ctx.SetConstantOutput(0, picked);
  return true;
}

void ImportGather(NodeContext& ctx) {
  const int rank = ctx.rank(0);
  const int axis = NormalizeAxis(ctx, ctx.attr_int("axis", 0), rank);
  if (GatherFixedSizes(ctx)) return;
  // Rows of a stored table, unless everything folds on the host; where
  // sizes follow the data, or run-time indices pick from other data (a
  // detector's boxes picked by TopK), the Gather layer.
  const bool table = axis == 0 && ctx.is_weight(0) && !ctx.input(0).tensor.is_integer() &&
                     !(ctx.is_constant(0) && ctx.is_constant(1));
  if (ctx.has_runtime_dims(0) || ctx.has_runtime_dims(1) || (!ctx.is_constant(1) && !table))
    return GatherLayer(ctx, axis, ctx.blob(1), ctx.shape(1), ctx.runtime_dims(1));
  if (table) return GatherRowsOfTable(ctx);
  HostTensor indices = ctx.constant(1);
  const int64_t dim = ctx.shape(0)[axis];
  for (double& v : indices.values) {
    if (v < 0) v += dim;
    ONNX_REQUIRE(ctx, v >= 0 && v < dim, "index out of range for axis " << axis << " of size " << dim);
  }
  if (ctx.is_constant(0)) return ctx.SetConstantOutput(0, HostGather(ctx.constant(0), indices, axis));
  // Run-time data: each index is a one-wide StridedSlice; several are
  // concatenated; then the indices' shape replaces the axis.
  std::vector<int64_t> out_shape(ctx.shape(0).begin(), ctx.shape(0).begin() + axis);
  out_shape.insert(out_shape.end(), indices.shape.begin(), indices.shape.end());
  out_shape.insert(out_shape.end(), ctx.shape(0).begin() + axis + 1, ctx.shape(0).end());
  std::vector<std::string> parts;
  for (size_t i = 0; i < indices.values.size(); ++i) {
    const std::string part = ctx.TempBlob("index" + std::to_string(i));
    caffe::LayerParameter* layer = ctx.AddLayer("StridedSlice", {ctx.blob(0)}, {part}, "index" + std::to_string(i));
    const int idx = static_cast<int>(indices.values[i]);
    layer->mutable_strided_slice_param()->add_axis(axis);
    layer->mutable_strided_slice_param()->add_start(idx);
    layer->mutable_strided_slice_param()->add_end(idx + 1);
    parts.push_back(part);
  }
  std::string gathered = parts.at(0);
  if (parts.size() > 1) {
    gathered = ctx.TempBlob("gathered");
    ctx.AddLayer("Concat", parts, {gathered}, "concat")->mutable_concat_param()->set_axis(axis);
  }
  caffe::LayerParameter* reshape = ctx.AddLayer("Reshape", {gathered}, {ctx.output_name(0)});
  *reshape->mutable_reshape_param()->mutable_shape() = ToBlobShape(out_shape);
  ctx.SetOutput(0, out_shape);
}
REGISTER_ONNX_OP(ImportGather, "Gather");

// GatherElements (torch.gather): folded on the host where both inputs are
// constant, else the GatherElements layer (run-time indices as a blob).
void ImportGatherElements(NodeContext& ctx) {
  ctx.CheckAttributes({"axis"});
  const std::vector<int64_t>& data = ctx.shape(0);
  const std::vector<int64_t>& indices = ctx.shape(1);
  const int rank = static_cast<int>(data.size());
  ONNX_REQUIRE(ctx, rank >= 1 && static_cast<int>(indices.size()) == rank,
               "the indices (shape " << ShapeString(indices) << ") must have the data's rank "
                                     << rank);
  const int axis = NormalizeAxis(ctx, ctx.attr_int("axis", 0), rank);
  for (int d = 0; d < rank; ++d)
    ONNX_REQUIRE(ctx, d == axis || indices[d] <= data[d],
                 "the indices' axis " << d << " (" << indices[d] << ") exceeds the data's ("
                                      << data[d] << ")");
  if (ctx.is_constant(0) && ctx.is_constant(1)) {
    HostTensor index = ctx.constant(1);
    for (double& v : index.values) {
      if (v < 0) v += data[axis];
      ONNX_REQUIRE(ctx, v >= 0 && v < data[axis],
                   "index out of range for axis " << axis << " of size " << data[axis]);
    }
    return ctx.SetConstantOutput(0, HostGatherElements(ctx.constant(0), index, axis));
  }
  caffe::LayerParameter* layer =
      ctx.AddLayer("GatherElements", {ctx.blob(0), ctx.blob(1)}, {ctx.output_name(0)});
  layer->mutable_gather_elements_param()->set_axis(axis);
  ctx.SetOutput(0, indices);
  ctx.MarkOutputInteger(0, ctx.input(0).integer || ctx.input(0).tensor.is_integer());
}
REGISTER_ONNX_OP(ImportGatherElements, "GatherElements");

// Mode 'wrap' (opset 19), as np.pad: output index i of a padded axis reads
// input index (i - pad_begin) mod size. Negative pads crop first (one
// StridedSlice); then each padded axis is a Concat of the StridedSlices
// that walk the input cyclically.
void ImportWrapPad(NodeContext& ctx, const std::vector<int64_t>& pads) {
  const int rank = ctx.rank(0);
  std::vector<int64_t> shape = ctx.shape(0);
  std::string current = ctx.blob(0);
  std::vector<int> padded;
  bool crop = false;
  for (int d = 0; d < rank; ++d) {
    crop = crop || pads[d] < 0 || pads[d + rank] < 0;
    if (pads[d] > 0 || pads[d + rank] > 0) padded.push_back(d);
  }
  if (crop) {
    const std::string top = padded.empty() ? ctx.output_name(0) : ctx.TempBlob("crop");
    caffe::StridedSliceParameter* p =
        ctx.AddLayer("StridedSlice", {current}, {top}, "crop")->mutable_strided_slice_param();
    for (int d = 0; d < rank; ++d) {
      if (pads[d] >= 0 && pads[d + rank] >= 0) continue;
      const int64_t begin = std::max<int64_t>(0, -pads[d]), end = shape[d] + std::min<int64_t>(0, pads[d + rank]);
      ONNX_REQUIRE(ctx, end > begin, "the negative pads crop axis " << d << " of size " << shape[d]
                                         << " to nothing: empty (zero-sized) tensors are not supported");
      p->add_axis(d);
      p->add_start(static_cast<int>(begin));
      p->add_end(static_cast<int>(end));
      shape[d] = end - begin;
    }
    current = top;
  }
  for (size_t k = 0; k < padded.size(); ++k) {
    const int d = padded[k];
    const int64_t size = shape[d], begin = std::max<int64_t>(0, pads[d]),
                  total = begin + size + std::max<int64_t>(0, pads[d + rank]);
    ONNX_REQUIRE(ctx, total / size <= 64, "wrap padding of " << total - size << " on axis " << d
                                              << " of size " << size << " (more than 64 repeats) is not supported");
    std::vector<std::string> parts;
    for (int64_t i = 0; i < total;) {
      const int64_t src = ((i - begin) % size + size) % size, n = std::min(size - src, total - i);
      const std::string part = ctx.TempBlob("wrap" + std::to_string(d) + "_" + std::to_string(parts.size()));
      caffe::StridedSliceParameter* p =
          ctx.AddLayer("StridedSlice", {current}, {part}, part.substr(part.rfind('/') + 1))
              ->mutable_strided_slice_param();
      p->add_axis(d);
      p->add_start(static_cast<int>(src));
      p->add_end(static_cast<int>(src + n));
      parts.push_back(part);
      i += n;
    }
    const std::string top = k + 1 == padded.size() ? ctx.output_name(0) : ctx.TempBlob("wrapped" + std::to_string(d));
    ctx.AddLayer("Concat", parts, {top}, "concat" + std::to_string(d))->mutable_concat_param()->set_axis(d);
    shape[d] = total;
    current = top;
  }
  ctx.SetOutput(0, shape);
}

void ImportPad(NodeContext& ctx) {
  ctx.CheckAttributes({"mode", "pads", "value"});
  const int rank = ctx.rank(0);
  std::vector<int64_t> pads;
  float value = 0;
  if (ctx.opset() < 11) {
    pads = ctx.attr_ints("pads");
    value = ctx.attr_float("value", 0.f);
  } else {
    pads = ctx.constant(1).ints();
    if (ctx.has_input(2)) value = static_cast<float>(ctx.constant(2).values.at(0));
    if (ctx.has_input(3)) {
      // Opset 18: pads for the listed axes only (begins, then ends).
      const std::vector<int64_t> axes = ctx.constant(3).ints();
      ONNX_REQUIRE(ctx, pads.size() == 2 * axes.size(),
                   "pads has " << pads.size() << " entries for " << axes.size() << " axes");
      std::vector<int64_t> full(2 * rank, 0);
      std::vector<bool> seen(rank, false);
      for (size_t i = 0; i < axes.size(); ++i) {
        const int axis = NormalizeAxis(ctx, axes[i], rank);
        ONNX_REQUIRE(ctx, !seen[axis], "axis " << axes[i] << " is given twice");
        seen[axis] = true;
        full[axis] = pads[i];
        full[axis + rank] = pads[i + axes.size()];
      }
      pads = full;
    }
  }
  ONNX_REQUIRE(ctx, static_cast<int>(pads.size()) == 2 * rank,
               "pads has " << pads.size() << " entries for rank " << rank);
  const std::string mode = ctx.attr_string("mode", "constant");
  static const std::map<std::string, caffe::PadParameter::Mode> modes = {
      {"constant", caffe::PadParameter::CONSTANT},
      {"reflect", caffe::PadParameter::REFLECT},
      {"edge", caffe::PadParameter::EDGE}};
  ONNX_REQUIRE(ctx, modes.count(mode) || (mode == "wrap" && ctx.opset() >= 19),
               "mode '" << mode << "' is not supported");
  std::vector<int64_t> shape = ctx.shape(0);
  bool any = false;
  for (int d = 0; d < rank; ++d) {
    shape[d] += pads[d] + pads[d + rank];
    any = any || pads[d] || pads[d + rank];
  }
  if (!any) return ctx.SetOutput(0, shape, ctx.blob(0));
  if (mode == "wrap") return ImportWrapPad(ctx, pads);
  caffe::LayerParameter* layer = ctx.AddLayer("Pad", {ctx.blob(0)}, {ctx.output_name(0)});
  caffe::PadParameter* p = layer->mutable_pad_param();
  p->set_mode(modes.at(mode));
  p->set_value(value);
  for (int d = 0; d < rank; ++d) {
    p->add_pad_begin(static_cast<int>(pads[d]));
    p->add_pad_end(static_cast<int>(pads[d + rank]));
  }
  ctx.SetOutput(0, shape);
}
REGISTER_ONNX_OP(ImportPad, "Pad");

// Expand to a shape known at run time, made of traced sizes (Faster
// R-CNN's region indices expanded to the pooled regions' shape): a Tile
// along each axis of fixed size the input broadcasts; an axis that follows
// the data must already have that size in the input.
void ExpandToSizeSources(NodeContext& ctx) {
  const std::vector<Value::SizeSource>& sources = ctx.input(1).size_sources;
  if (sources.empty()) ctx.constant(1);  // must be known at import time, then
  const std::vector<int64_t>& in = ctx.shape(0);
  ONNX_REQUIRE(ctx, in.size() <= sources.size(),
               "expanding rank " << in.size() << " to rank " << sources.size() << " is not possible");
  const std::vector<bool> in_runtime = ctx.runtime_dims(0);
  // Fewer axes, a constant (torch.export's full_like: a scalar expanded), or
  // a size 1 taking a run-time size (arange(classes) expanded to the
  // scores' rows): the input plus zeros of the target shape, broadcast at
  // run time; a constant scalar is the FullLike itself.
  bool at_run_time = in.size() < sources.size() || ctx.is_constant(0);
  for (size_t d = 0; d < in.size() && !at_run_time; ++d) {
    bool follows = false;
    SourceSize(ctx, sources[d], &follows);
    at_run_time = follows && !in_runtime[d];
  }
  if (at_run_time) {
    std::vector<bool> runtime;
    if (ctx.is_constant(0) && ctx.constant(0).count() == 1) {
      const std::vector<int64_t> shape = FullOfSizeSources(
          ctx, 1, static_cast<float>(ctx.constant(0).values[0]), ctx.output_name(0), &runtime);
      ctx.SetOutput(0, shape);
      ctx.SetRuntimeDims(0, runtime);
      return ctx.MarkOutputInteger(0, ctx.constant(0).is_integer());
    }
    const std::string zeros = ctx.TempBlob("zeros");
    const std::vector<int64_t> target = FullOfSizeSources(ctx, 1, 0.f, zeros, &runtime);
    ctx.AddLayer("BinaryOp", {ctx.blob(0), zeros}, {ctx.output_name(0)})
        ->mutable_binary_op_param()->set_operation(caffe::BinaryOpParameter::ADD);
    // Bounds: each axis the larger (a run-time size meets a 1 here).
    std::vector<int64_t> out = target;
    for (size_t d = 0; d < in.size(); ++d) {
      int64_t& o = out[out.size() - in.size() + d];
      o = std::max(o, in[d]);
    }
    ctx.SetOutput(0, out);
    for (size_t d = 0; d < in.size(); ++d)
      runtime[runtime.size() - in.size() + d] = runtime[runtime.size() - in.size() + d] || in_runtime[d];
    ctx.SetRuntimeDims(0, runtime);
    return ctx.MarkOutputInteger(0, ctx.input(0).integer ||
                                        (ctx.is_constant(0) && ctx.constant(0).is_integer()));
  }
  std::vector<int64_t> shape = in;
  std::string current = ctx.blob(0);
  std::vector<int> tiled;
  std::vector<int64_t> tiles;
  for (size_t d = 0; d < in.size(); ++d) {
    bool follows = false;
    const int64_t size = SourceSize(ctx, sources[d], &follows);
    if (follows || in_runtime[d] || size == in[d] || size == 1) continue;
    ONNX_REQUIRE(ctx, in[d] == 1, "cannot expand axis " << d << " of size " << in[d] << " to " << size);
    tiled.push_back(static_cast<int>(d));
    tiles.push_back(size);
    shape[d] = size;
  }
  if (tiled.empty()) return ctx.SetOutputToInput(0, 0);
  for (size_t i = 0; i < tiled.size(); ++i) {
    const std::string top = i + 1 == tiled.size() ? ctx.output_name(0) : ctx.TempBlob("tile" + std::to_string(i));
    caffe::LayerParameter* layer = ctx.AddLayer("Tile", {current}, {top}, "axis" + std::to_string(tiled[i]));
    layer->mutable_tile_param()->set_axis(tiled[i]);
    layer->mutable_tile_param()->set_tiles(static_cast<int>(tiles[i]));
    current = top;
  }
  ctx.SetOutput(0, shape);
  ctx.SetRuntimeDims(0, in_runtime);
}

void ImportExpand(NodeContext& ctx) {
  if (!ctx.is_constant(1)) return ExpandToSizeSources(ctx);
  const auto target = ctx.constant(1).ints();
  const auto shape = BroadcastShapes(ctx, ctx.shape(0), target);
  if (ctx.is_constant(0)) {
    HostTensor zeros;
    zeros.type = ctx.constant(0).type;
    zeros.shape = shape;
    zeros.values.assign(HostValueCount(shape), 0.0);
    return ctx.SetConstantOutput(0, HostBinary(ctx, ctx.constant(0), zeros,
                                               [](double a, double) { return a; }));
  }
  if (shape == ctx.shape(0)) return ctx.SetOutput(0, shape, ctx.blob(0));
  // x + zeros of the target shape: the broadcast, with the gradient summed back.
  caffe::LayerParameter* layer = ctx.AddLayer("BinaryOp", {ctx.blob(0)}, {ctx.output_name(0)});
  caffe::BinaryOpParameter* p = layer->mutable_binary_op_param();
  p->set_operation(caffe::BinaryOpParameter::ADD);
  *p->mutable_operand_shape() = ToBlobShape(shape);
  HostTensor zeros;
  zeros.shape = shape;
  zeros.values.assign(HostValueCount(shape), 0.0);
  ctx.AddValueBlob(layer, zeros);
  ctx.SetOutput(0, shape);
}
REGISTER_ONNX_OP(ImportExpand, "Expand");

void ImportTile(NodeContext& ctx) {
  const auto repeats = ctx.constant(1).ints();
  const int rank = ctx.rank(0);
  ONNX_REQUIRE(ctx, static_cast<int>(repeats.size()) == rank, "repeats has " << repeats.size() << " entries for rank " << rank);
  std::vector<int64_t> shape = ctx.shape(0);
  if (ctx.is_constant(0)) {
    // Folded on the host (anchor grids): output element i reads the input
    // element whose index is i's index modulo the input's dims.
    const HostTensor& in = ctx.constant(0);
    HostTensor out;
    out.type = in.type;
    for (int d = 0; d < rank; ++d) out.shape.push_back(shape[d] * repeats[d]);
    out.values.resize(HostValueCount(out.shape));
    for (int64_t i = 0; i < static_cast<int64_t>(out.values.size()); ++i) {
      int64_t rest = i, source = 0, stride = 1;
      for (int d = rank - 1; d >= 0; --d) {
        source += (rest % out.shape[d]) % shape[d] * stride;
        rest /= out.shape[d];
        stride *= shape[d];
      }
      out.values[i] = in.values[source];
    }
    return ctx.SetConstantOutput(0, std::move(out));
  }
  std::string current = ctx.blob(0);
  std::vector<int> tiled;
  for (int d = 0; d < rank; ++d)
    if (repeats[d] != 1) tiled.push_back(d);
  if (tiled.empty()) return ctx.SetOutput(0, shape, current);
  for (size_t i = 0; i < tiled.size(); ++i) {
    const int d = tiled[i];
    const std::string top = i + 1 == tiled.size() ? ctx.output_name(0) : ctx.TempBlob("tile" + std::to_string(d));
    caffe::LayerParameter* layer = ctx.AddLayer("Tile", {current}, {top}, "axis" + std::to_string(d));
    layer->mutable_tile_param()->set_axis(d);
    layer->mutable_tile_param()->set_tiles(static_cast<int>(repeats[d]));
    shape[d] *= repeats[d];
    current = top;
  }
  ctx.SetOutput(0, shape);
}
REGISTER_ONNX_OP(ImportTile, "Tile");

// The handlers above that follow sizes known only at run time.
ALLOW_RUNTIME_DIMS("Shape", "Size", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Split",
                   "Slice", "Gather", "GatherND", "Reshape", "Flatten", "Expand");

}  // namespace
}  // namespace onnx_import
}  // namespace dlcaffe
