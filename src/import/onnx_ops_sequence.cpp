// Tensor sequences as exporters write them: torch.export turns a split of a
// tensor with dynamic dimensions (GPT's q, k, v = qkv.split(C, dim=2)) into
// SplitToSequence, whose elements SequenceAt picks at constant positions.
// The sequence is a list of element values (Value::sequence), never a blob:
// the elements are a Slice layer's tops, or host values.
#include <numeric>

#include "import/onnx_graph.hpp"
#include "import/onnx_host_ops.hpp"

namespace dlcaffe {
namespace onnx_import {
namespace {

// The sizes of the parts along the axis: `split` a scalar (parts of that
// size, the last one smaller), a list of sizes, or absent (parts of 1).
std::vector<int64_t> PartSizes(NodeContext& ctx, int64_t axis_size) {
  if (!ctx.has_input(1)) return std::vector<int64_t>(axis_size, 1);
  const HostTensor& split = ctx.constant(1);
  std::vector<int64_t> sizes = split.ints();
  if (split.shape.empty()) {
    ONNX_REQUIRE(ctx, sizes.size() == 1 && sizes[0] > 0,
                 "the split size must be positive");
    const int64_t part = sizes[0];
    sizes.assign(axis_size / part, part);
    if (axis_size % part) sizes.push_back(axis_size % part);
    return sizes;
  }
  for (int64_t s : sizes)
    ONNX_REQUIRE(ctx, s > 0, "split sizes must be positive (empty parts are not supported)");
  ONNX_REQUIRE(ctx, std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) == axis_size,
               "split sizes do not add up to the axis' size " << axis_size);
  return sizes;
}

void ImportSplitToSequence(NodeContext& ctx) {
  ctx.CheckAttributes({"axis", "keepdims"});
  const std::vector<int64_t>& in = ctx.shape(0);
  const int axis = NormalizeAxis(ctx, ctx.attr_int("axis", 0), ctx.rank(0));
  const std::vector<int64_t> sizes = PartSizes(ctx, in[axis]);
  // keepdims applies only without `split` (parts of 1): 0 drops the axis.
  const bool drop_axis = !ctx.has_input(1) && ctx.attr_int("keepdims", 1) == 0;
  const std::string& name = ctx.output_name(0);
  Value sequence;
  std::vector<std::string> tops;
  int64_t start = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    std::vector<int64_t> part = in;
    part[axis] = sizes[k];
    std::vector<int64_t> element_shape = part;
    if (drop_axis) element_shape.erase(element_shape.begin() + axis);
    Value element;
    element.shape = element_shape;
    if (ctx.is_constant(0)) {
      std::vector<int64_t> starts(in.size(), 0), steps(in.size(), 1);
      starts[axis] = start;
      element.constant = true;
      element.tensor = HostSlice(ctx.constant(0), starts, steps, part);
      element.tensor.shape = element_shape;
    } else {
      element.blob = ctx.TempBlob(std::to_string(k));
      element.integer = ctx.input(0).integer;
      tops.push_back(element.blob);
    }
    start += sizes[k];
    sequence.sequence.push_back(name + "[" + std::to_string(k) + "]");
    ctx.SetNamedValue(sequence.sequence.back(), std::move(element));
  }
  if (!tops.empty()) {
    // One Slice (none for a single part); dropping the axis of parts of 1
    // is a Reshape of each.
    std::vector<std::string> parts = tops;
    if (drop_axis)
      for (size_t k = 0; k < tops.size(); ++k) parts[k] = ctx.TempBlob("part" + std::to_string(k));
    if (tops.size() == 1) {
      parts[0] = ctx.blob(0);
    } else {
      caffe::LayerParameter* layer = ctx.AddLayer("Slice", {ctx.blob(0)}, parts);
      layer->mutable_slice_param()->set_axis(axis);
      int64_t point = 0;
      for (size_t k = 0; k + 1 < sizes.size(); ++k)
        layer->mutable_slice_param()->add_slice_point(point += sizes[k]);
    }
    for (size_t k = 0; k < tops.size(); ++k) {
      Value element = ctx.named_value(sequence.sequence[k]);
      if (drop_axis) {
        *ctx.AddLayer("Reshape", {parts[k]}, {tops[k]}, "squeeze" + std::to_string(k))
             ->mutable_reshape_param()->mutable_shape() = ToBlobShape(element.shape);
      } else {
        element.blob = parts[k];
        ctx.SetNamedValue(sequence.sequence[k], std::move(element));
      }
    }
  }
  ctx.SetOutputValue(0, std::move(sequence));
}
REGISTER_ONNX_OP(ImportSplitToSequence, "SplitToSequence");

void ImportSequenceAt(NodeContext& ctx) {
  ctx.CheckAttributes({});
  const std::vector<std::string> elements = ctx.input(0).sequence;
  ONNX_REQUIRE(ctx, !elements.empty(),
               "input 0 is not a tensor sequence of SplitToSequence (the only sequences "
               "the importer builds)");
  const std::vector<int64_t> position = ctx.constant(1).ints();
  ONNX_REQUIRE(ctx, position.size() == 1, "the position must be one integer");
  const int64_t n = static_cast<int64_t>(elements.size());
  const int64_t at = position[0] < 0 ? position[0] + n : position[0];
  ONNX_REQUIRE(ctx, at >= 0 && at < n,
               "position " << position[0] << " is outside a sequence of " << n << " tensors");
  ctx.SetOutputValue(0, ctx.named_value(elements[at]));
}
REGISTER_ONNX_OP(ImportSequenceAt, "SequenceAt");

}  // namespace
}  // namespace onnx_import
}  // namespace dlcaffe
