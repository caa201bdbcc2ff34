// Where the elements of a run-time size vector come from. Exporters write a
// Reshape to a size known only at run time as Shape -> Gather -> Unsqueeze
// -> Concat -> Reshape (torchvision's boxes: reshape(-1 boxes, 4)). The
// Shape handler records, per element, the value and axis it reads (or the
// constant, for axes of fixed size); the ops that move such elements keep
// the record; a Reshape then gives its layer -1 for the one run-time axis
// and fixed sizes for the others (ImportReshape).
#include <algorithm>

#include "import/onnx_graph.hpp"

namespace dlcaffe {
namespace onnx_import {

namespace {

using SizeSources = std::vector<Value::SizeSource>;

// The sources of input i as a vector: recorded, or its constant values.
bool SourcesOf(const NodeContext& ctx, int i, SizeSources* out) {
  if (ctx.is_constant(i)) {
    const HostTensor& t = ctx.constant(i);
    if (!t.is_integer() || t.shape.size() > 1) return false;
    for (int64_t v : t.ints()) out->push_back({"", -1, v});
    return true;
  }
  const SizeSources& s = ctx.input(i).size_sources;
  out->insert(out->end(), s.begin(), s.end());
  return !s.empty();
}

}  // namespace

void TrackSizeSources(NodeContext& ctx) {
  const std::string& op = ctx.op();
  if (!ctx.has_output(0) || ctx.num_inputs() == 0 || !ctx.has_input(0)) return;
  Value& out = ctx.output_value(0);
  if (out.constant || out.shape.size() > 1 || !out.size_sources.empty()) return;
  SizeSources sources;
  if (op == "Unsqueeze" || op == "Squeeze" || op == "Reshape" || op == "Flatten" ||
      op == "Cast" || op == "Identity") {
    if (ctx.is_constant(0) || !SourcesOf(ctx, 0, &sources)) return;
  } else if (op == "Gather") {
    SizeSources data;
    if (ctx.is_constant(0) || !ctx.is_constant(1) || !SourcesOf(ctx, 0, &data)) return;
    for (int64_t k : ctx.constant(1).ints()) {
      if (k < 0) k += static_cast<int64_t>(data.size());
      if (k < 0 || k >= static_cast<int64_t>(data.size())) return;
      sources.push_back(data[k]);
    }
  } else if (op == "Where") {
    // A fixed condition picking between sizes (torch's expand(): -1 keeps
    // the size): element by element.
    SizeSources a, b;
    if (!ctx.is_constant(0) || !SourcesOf(ctx, 1, &a) || !SourcesOf(ctx, 2, &b)) return;
    const HostTensor& condition = ctx.constant(0);
    const size_t n = std::max({condition.values.size(), a.size(), b.size()});
    auto at = [n](const auto& v, size_t i) { return v.size() == n ? v[i] : v.at(0); };
    for (size_t i = 0; i < n; ++i)
      sources.push_back(at(condition.values, i) != 0 ? at(a, i) : at(b, i));
  } else if (op == "Concat") {
    for (int i = 0; i < ctx.num_inputs(); ++i)
      if (ctx.has_input(i) && !SourcesOf(ctx, i, &sources)) return;
  } else {
    return;
  }
  if (static_cast<int64_t>(sources.size()) == ShapeCount(out.shape)) out.size_sources = sources;
}

bool FoldOnSizeSources(NodeContext& ctx) {
  // Equal of sizes and constants: a size is never negative, so it equals no
  // negative constant (torch's expand() compares its sizes with -1).
  if (ctx.op() != "Equal" || ctx.num_inputs() != 2) return false;
  for (int s = 0; s < 2; ++s) {
    SizeSources sizes;
    if (ctx.is_constant(s) || !ctx.is_constant(1 - s) || !SourcesOf(ctx, s, &sizes)) continue;
    const HostTensor& other = ctx.constant(1 - s);
    if (other.values.size() != sizes.size() && other.values.size() != 1) return false;
    HostTensor out;
    out.type = onnx::TensorProto::BOOL;
    out.shape = ctx.shape(s);
    for (size_t i = 0; i < sizes.size(); ++i) {
      const double c = other.values.size() == 1 ? other.values[0] : other.values[i];
      if (sizes[i].value.empty()) {
        out.values.push_back(double(sizes[i].constant == c));
      } else if (c < 0) {
        out.values.push_back(0.0);
      } else {
        return false;  // a size known only at run time may equal it
      }
    }
    ctx.SetConstantOutput(0, out);
    return true;
  }
  return false;
}

}  // namespace onnx_import
}  // namespace dlcaffe
