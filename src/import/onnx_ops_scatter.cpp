// ScatterND on constants, evaluated on the host: the masks exporters build
// by slice assignment (swin_t's shifted-window mask: img_mask[:, h, w, :] =
// region) arrive as ScatterND of constant tensors.
#include <algorithm>

#include "import/onnx_graph.hpp"

namespace dlcaffe {
namespace onnx_import {
namespace {

void ImportScatterND(NodeContext& ctx) {
  ctx.CheckAttributes({"reduction"});
  ONNX_REQUIRE(ctx, ctx.all_constant(),
               "run-time inputs are not supported (only constant tensors, such as masks, are "
               "scattered on the host)");
  const std::string reduction = ctx.attr_string("reduction", "none");
  ONNX_REQUIRE(ctx, reduction == "none" || reduction == "add" || reduction == "mul" ||
                        reduction == "max" || reduction == "min",
               "reduction '" << reduction << "' is not supported");
  HostTensor out = ctx.constant(0);
  const HostTensor& indices = ctx.constant(1);
  const HostTensor& updates = ctx.constant(2);
  const std::vector<int64_t>& data_shape = out.shape;
  ONNX_REQUIRE(ctx, !indices.shape.empty(), "indices must have at least one axis");
  const int64_t k = indices.shape.back();
  const int rank = static_cast<int>(data_shape.size());
  ONNX_REQUIRE(ctx, k >= 1 && k <= rank, "the indices' last axis (" << k << ") must be 1 to the data's rank " << rank);
  // Each index tuple addresses a slice of `slice` values.
  int64_t slice = 1;
  for (int d = static_cast<int>(k); d < rank; ++d) slice *= data_shape[d];
  const int64_t tuples = indices.count() / k;
  ONNX_REQUIRE(ctx, updates.count() == tuples * slice,
               "updates hold " << updates.count() << " values, the indices address " << tuples * slice);
  const std::vector<int64_t> index = indices.ints();
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = 0;
    for (int64_t j = 0; j < k; ++j) {
      int64_t i = index[t * k + j];
      const int64_t dim = data_shape[j];
      if (i < 0) i += dim;
      ONNX_REQUIRE(ctx, i >= 0 && i < dim, "index " << index[t * k + j] << " is out of range for axis " << j << " of size " << dim);
      offset = offset * dim + i;
    }
    offset *= slice;
    for (int64_t e = 0; e < slice; ++e) {
      double& v = out.values[offset + e];
      const double u = updates.values[t * slice + e];
      if (reduction == "none") v = u;
      else if (reduction == "add") v += u;
      else if (reduction == "mul") v *= u;
      else if (reduction == "max") v = std::max(v, u);
      else v = std::min(v, u);
    }
  }
  ctx.SetConstantOutput(0, out);
}
REGISTER_ONNX_OP(ImportScatterND, "ScatterND");

// ScatterElements without reduction (torch's scatter: Faster R-CNN puts
// each level's pooled regions back in order): the ScatterElements layer.
void ImportScatterElements(NodeContext& ctx) {
  ctx.CheckAttributes({"axis", "reduction"});
  const std::string reduction = ctx.attr_string("reduction", "none");
  ONNX_REQUIRE(ctx, reduction == "none", "reduction '" << reduction << "' is not supported");
  ONNX_REQUIRE(ctx, !ctx.all_constant(), "scattering constants is not supported");
  const int axis = NormalizeAxis(ctx, ctx.attr_int("axis", 0), ctx.rank(0));
  ctx.AddLayer("ScatterElements", {ctx.blob(0), ctx.blob(1), ctx.blob(2)}, {ctx.output_name(0)})
      ->mutable_gather_elements_param()->set_axis(axis);
  ctx.SetOutput(0, ctx.shape(0));
  ctx.SetRuntimeDims(0, ctx.runtime_dims(0));
  ctx.MarkOutputInteger(0, ctx.input(0).integer && ctx.input(2).integer);
}
REGISTER_ONNX_OP(ImportScatterElements, "ScatterElements");
ALLOW_RUNTIME_DIMS("ScatterElements");

}  // namespace
}  // namespace onnx_import
}  // namespace dlcaffe
