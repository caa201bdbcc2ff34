// ONNX ops whose output size follows the data, as torchvision's detectors
// export their post-processing: NonZero, TopK (its k may be computed),
// NonMaxSuppression, If on a run-time condition, and RoiAlign over regions
// found so. A Caffe-style net
// carries them by sizing at run time: the layers read the count they need
// (one host read each) and reshape their tops in Forward, and each later
// layer's Reshape follows, as Caffe's Layer::Forward does. The importer
// marks such axes (Value::runtime_dims, `shape` holding a bound) and only
// the handlers that follow them (ALLOW_RUNTIME_DIMS) take them.
#include <algorithm>
#include <climits>

#include "import/onnx_graph.hpp"

namespace dlcaffe {
namespace onnx_import {
namespace {

HostTensor HostNonZero(const HostTensor& x) {
  const int rank = static_cast<int>(x.shape.size());
  std::vector<int64_t> found;
  for (size_t i = 0; i < x.values.size(); ++i)
    if (x.values[i] != 0) found.push_back(static_cast<int64_t>(i));
  HostTensor t;
  t.type = onnx::TensorProto::INT64;
  t.shape = {rank, static_cast<int64_t>(found.size())};
  t.values.assign(rank * found.size(), 0.0);
  for (size_t k = 0; k < found.size(); ++k) {
    int64_t rest = found[k];
    for (int d = rank - 1; d >= 0; --d) {
      t.values[d * found.size() + k] = static_cast<double>(rest % x.shape[d]);
      rest /= x.shape[d];
    }
  }
  return t;
}

void ImportNonZero(NodeContext& ctx) {
  const int rank = ctx.rank(0);
  ONNX_REQUIRE(ctx, rank >= 1, "NonZero of a scalar is not supported");
  if (ctx.is_constant(0)) return ctx.SetConstantOutput(0, HostNonZero(ctx.constant(0)));
  // The TorchScript exporter writes one NonZero of a mask per tensor it
  // indexes with it (a class's scores, then its boxes): the second is the
  // first's output, which saves a pass and a read to the host.
  const std::string seen = "NonZero of " + ctx.node().input(0);
  if (ctx.has_named_value(seen)) return ctx.SetOutputValue(0, ctx.named_value(seen));
  ctx.AddLayer("NonZero", {ctx.blob(0)}, {ctx.output_name(0)});
  ctx.SetOutput(0, {rank, std::max<int64_t>(1, ShapeCount(ctx.shape(0)))});
  ctx.SetRuntimeDims(0, {false, true});
  ctx.MarkOutputInteger(0, true);
  ctx.SetNamedValue(seen, ctx.output_value(0));
}
REGISTER_ONNX_OP(ImportNonZero, "NonZero");

void ImportTopK(NodeContext& ctx) {
  ctx.CheckAttributes({"axis", "largest", "sorted", "k"});
  const std::vector<int64_t>& in = ctx.shape(0);
  const int rank = ctx.rank(0);
  ONNX_REQUIRE(ctx, rank >= 1, "TopK of a scalar is not supported");
  const int axis = NormalizeAxis(ctx, ctx.attr_int("axis", -1), rank);
  ONNX_REQUIRE(ctx, !ctx.is_constant(0), "TopK of a constant is not supported");
  std::vector<int64_t> shape = in;
  std::vector<bool> runtime = ctx.runtime_dims(0);
  std::vector<std::string> bottoms = {ctx.blob(0)};
  int64_t k = -1;
  if (ctx.opset() < 10) {
    k = ctx.attr_int("k", -1);
  } else if (ctx.is_constant(1)) {
    const HostTensor& kt = ctx.constant(1);
    ONNX_REQUIRE(ctx, kt.count() == 1, "k must hold one value, got shape " << ShapeString(kt.shape));
    k = static_cast<int64_t>(kt.values[0]);
  } else {
    // k computed at run time (min(candidates, boxes found)): read by the layer.
    ONNX_REQUIRE(ctx, ShapeCount(ctx.shape(1)) == 1,
                 "k must hold one value, got shape " << ShapeString(ctx.shape(1)));
    bottoms.push_back(ctx.blob(1));
  }
  caffe::LayerParameter* layer = ctx.AddLayer(
      "TopK", bottoms,
      {ctx.output_name(0), ctx.has_output(1) ? ctx.output_name(1) : ctx.TempBlob("indices")});
  caffe::TopKParameter* p = layer->mutable_top_k_param();
  p->set_axis(axis);
  p->set_largest(ctx.attr_int("largest", 1) != 0);
  p->set_sorted(ctx.attr_int("sorted", 1) != 0);
  if (k >= 0) {
    ONNX_REQUIRE(ctx, runtime[axis] || k <= in[axis],
                 "k " << k << " exceeds axis " << axis << " of the input, shape " << ShapeString(in));
    ONNX_REQUIRE(ctx, k >= 1 && k <= INT_MAX, "k " << k << " is not supported (1 to 2^31 - 1 are)");
    p->set_k(static_cast<int>(k));
    shape[axis] = k;
    runtime[axis] = false;
  } else {
    runtime[axis] = true;
  }
  for (int o = 0; o < 2; ++o) {
    ctx.SetOutput(o, shape);
    ctx.SetRuntimeDims(o, runtime);
  }
  ctx.MarkOutputInteger(0, ctx.input(0).integer);
  ctx.MarkOutputInteger(1, true);
}
REGISTER_ONNX_OP(ImportTopK, "TopK");

void ImportNonMaxSuppression(NodeContext& ctx) {
  ctx.CheckAttributes({"center_point_box"});
  const std::vector<int64_t>& boxes = ctx.shape(0);
  const std::vector<int64_t>& scores = ctx.shape(1);
  ONNX_REQUIRE(ctx, boxes.size() == 3 && boxes[2] == 4 && scores.size() == 3,
               "takes boxes B x N x 4 and scores B x C x N, got " << ShapeString(boxes) << " and "
                                                                  << ShapeString(scores));
  caffe::LayerParameter* layer =
      ctx.AddLayer("NonMaxSuppression", {ctx.blob(0), ctx.blob(1)}, {ctx.output_name(0)});
  caffe::NonMaxSuppressionParameter* p = layer->mutable_non_max_suppression_param();
  p->set_center_point_box(static_cast<int>(ctx.attr_int("center_point_box", 0)));
  int64_t max_out = 0;
  if (ctx.has_input(2)) {
    // torchvision writes INT64_MAX (no limit), which a double rounds above it.
    const double m = ctx.constant(2).values.at(0);
    max_out = m >= 9.2e18 ? INT64_MAX : static_cast<int64_t>(m);
  }
  p->set_max_output_boxes_per_class(std::max<int64_t>(max_out, 0));
  if (ctx.has_input(3)) p->set_iou_threshold(static_cast<float>(ctx.constant(3).values.at(0)));
  if (ctx.has_input(4)) p->set_score_threshold(static_cast<float>(ctx.constant(4).values.at(0)));
  const int64_t bound = boxes[0] * scores[1] * std::min(boxes[1], std::max<int64_t>(max_out, 0));
  ctx.SetOutput(0, {std::max<int64_t>(bound, 1), 3});
  ctx.SetRuntimeDims(0, {true, false});
  ctx.MarkOutputInteger(0, true);
}
REGISTER_ONNX_OP(ImportNonMaxSuppression, "NonMaxSuppression");

const onnx::GraphProto& Branch(const NodeContext& ctx, const std::string& name) {
  for (const auto& a : ctx.node().attribute())
    if (a.name() == name && a.has_g()) return a.g();
  ONNX_REQUIRE(ctx, false, "has no " << name);
  throw;  // unreachable
}

// If: a constant condition imports the branch it picks. A run-time one
// imports both and picks each output with a Switch layer: both branches
// run, so the one not taken must run on what the other is taken for
// (torchvision's else branch runs NonMaxSuppression on no boxes).
void ImportIf(NodeContext& ctx) {
  const onnx::GraphProto& then_branch = Branch(ctx, "then_branch");
  const onnx::GraphProto& else_branch = Branch(ctx, "else_branch");
  ONNX_REQUIRE(ctx, then_branch.output_size() == ctx.num_outputs() &&
                        else_branch.output_size() == ctx.num_outputs(),
               "the branches have " << then_branch.output_size() << " and "
                                    << else_branch.output_size() << " outputs, the node "
                                    << ctx.num_outputs());
  if (ctx.is_constant(0)) {
    const onnx::GraphProto& taken = ctx.constant(0).values.at(0) != 0 ? then_branch : else_branch;
    ctx.ImportSubgraph(taken);
    for (int k = 0; k < ctx.num_outputs(); ++k)
      ctx.SetOutputValue(k, ctx.named_value(taken.output(k).name()));
    return;
  }
  ONNX_REQUIRE(ctx, ShapeCount(ctx.shape(0)) == 1, "the condition must hold one value");
  ctx.ImportSubgraph(then_branch);
  ctx.ImportSubgraph(else_branch);
  for (int k = 0; k < ctx.num_outputs(); ++k) {
    const std::string& a = then_branch.output(k).name();
    const std::string& b = else_branch.output(k).name();
    const Value &va = ctx.named_value(a), &vb = ctx.named_value(b);
    ONNX_REQUIRE(ctx, va.shape.size() == vb.shape.size(),
                 "output " << k << " has rank " << va.shape.size() << " in the then branch and "
                           << vb.shape.size() << " in the else branch: not supported");
    std::vector<int64_t> shape(va.shape.size());
    std::vector<bool> runtime(va.shape.size());
    std::vector<bool> ra = va.runtime_dims, rb = vb.runtime_dims;
    ra.resize(shape.size(), false);
    rb.resize(shape.size(), false);
    for (size_t d = 0; d < shape.size(); ++d) {
      shape[d] = std::max<int64_t>({va.shape[d], vb.shape[d], 1});
      runtime[d] = ra[d] || rb[d] || va.shape[d] != vb.shape[d];
    }
    ctx.AddLayer("Switch", {ctx.blob(0), ctx.MaterializeNamed(a), ctx.MaterializeNamed(b)},
                 {ctx.output_name(k)}, "output" + std::to_string(k));
    ctx.SetOutput(k, shape);
    ctx.SetRuntimeDims(k, runtime);
    const bool integer_a = va.constant ? va.tensor.is_integer() : va.integer;
    const bool integer_b = vb.constant ? vb.tensor.is_integer() : vb.integer;
    ctx.MarkOutputInteger(k, integer_a && integer_b);
  }
}
REGISTER_ONNX_OP(ImportIf, "If");

// RoiAlign (torchvision's MultiScaleRoIAlign, once per level): the
// RoiAlign layer, its region count following the data.
void ImportRoiAlign(NodeContext& ctx) {
  ctx.CheckAttributes({"coordinate_transformation_mode", "mode", "output_height", "output_width",
                       "sampling_ratio", "spatial_scale"});
  ONNX_REQUIRE(ctx, ctx.rank(0) == 4, "the features must be N x C x H x W, got " << ShapeString(ctx.shape(0)));
  const std::string mode = ctx.attr_string("mode", "avg");
  ONNX_REQUIRE(ctx, mode == "avg", "mode '" << mode << "' is not supported (avg is)");
  // Opset 16 added the attribute, defaulting to half_pixel; before, regions
  // were taken as output_half_pixel does. PyTorch 1.x writes torchvision's
  // roi_align (aligned=False) at any opset without the attribute, meaning
  // the old behaviour (what PyTorch computes); ONNX Runtime reads such a
  // file as half_pixel and differs from PyTorch.
  const bool legacy_pytorch = ctx.graph().producer_name() == "pytorch" &&
                              ctx.graph().producer_version().rfind("1.", 0) == 0;
  const std::string transform = ctx.attr_string(
      "coordinate_transformation_mode",
      ctx.opset() >= 16 && !legacy_pytorch ? "half_pixel" : "output_half_pixel");
  ONNX_REQUIRE(ctx, transform == "half_pixel" || transform == "output_half_pixel",
               "coordinate_transformation_mode '" << transform << "' is not supported");
  caffe::LayerParameter* layer = ctx.AddLayer(
      "RoiAlign", {ctx.blob(0), ctx.blob(1), ctx.blob(2)}, {ctx.output_name(0)});
  caffe::RoiAlignParameter* p = layer->mutable_roi_align_param();
  const int64_t height = ctx.attr_int("output_height", 1), width = ctx.attr_int("output_width", 1);
  p->set_output_height(static_cast<int>(height));
  p->set_output_width(static_cast<int>(width));
  p->set_sampling_ratio(static_cast<int>(ctx.attr_int("sampling_ratio", 0)));
  p->set_spatial_scale(ctx.attr_float("spatial_scale", 1.f));
  p->set_half_pixel(transform == "half_pixel");
  const int64_t regions = ctx.shape(1).at(0);
  ctx.SetOutput(0, {regions, ctx.shape(0)[1], height, width});
  const std::vector<bool> r = ctx.runtime_dims(1);
  ctx.SetRuntimeDims(0, {r.at(0), false, false, false});
  ctx.MarkOutputInteger(0, false);
}
REGISTER_ONNX_OP(ImportRoiAlign, "RoiAlign");

ALLOW_RUNTIME_DIMS("NonZero", "TopK", "NonMaxSuppression", "RoiAlign");

}  // namespace
}  // namespace onnx_import
}  // namespace dlcaffe
