// DecodePositions (onnx_decode_positions.hpp).
#include "import/onnx_decode_positions.hpp"

namespace dlcaffe {
namespace onnx_import {

namespace {

// Ops whose result is the same when both operands shift by one amount.
bool CancelsAShift(const std::string& op) {
  return op == "Sub" || op == "Equal" || op == "Less" || op == "LessOrEqual" || op == "Greater" ||
         op == "GreaterOrEqual";
}

}  // namespace

DecodePositions::DecodePositions(Graph& graph, const onnx::ValueInfoProto& token_input,
                                 const std::vector<int64_t>& token_shape)
    : graph_(graph), token_input_(token_input.name()) {
  const auto& dims = token_input.type().tensor_type().shape().dim();
  for (int d = 0; d < dims.size(); ++d)
    if (!(dims[d].has_dim_value() && dims[d].dim_value() > 0)) token_axis_ = d;
  DLC_REQUIRE(token_axis_ >= 0 && token_axis_ < static_cast<int>(token_shape.size()),
              graph.path() << ": its token input '" << token_input_
                           << "' has a fixed length; export it with the sequence axis dynamic "
                              "(torch.onnx.export(..., dynamic_shapes=...)) to decode from it");
  length_ = token_shape[token_axis_];
}

const onnx::NodeProto& DecodePositions::Prepare(const onnx::NodeProto& node, int index) {
  bool follows = false;
  for (const auto& input : node.input()) follows = follows || following_.count(input);
  if (!follows || NodeContext(graph_, node, index).all_constant()) return node;
  onnx::NodeProto copy = node;
  for (int i = 0; i < copy.input_size(); ++i)
    if (following_.count(copy.input(i))) copy.set_input(i, RunTime(copy.input(i)));
  rewritten_.push_back(std::move(copy));
  return rewritten_.back();
}

void DecodePositions::Record(const onnx::NodeProto& node, int index) {
  const std::string& op = node.op_type();
  bool any_from_shapes = op == "Shape" || op == "Size";
  int following = 0, present = 0;
  for (const auto& input : node.input()) {
    if (input.empty()) continue;
    ++present;
    any_from_shapes = any_from_shapes || from_shapes_.count(input);
    following += static_cast<int>(following_.count(input));
  }
  for (const auto& output : node.output()) {
    if (output.empty() || !graph_.Has(output)) continue;
    const Value& value = graph_.Get(output, "");
    if (!value.constant) continue;  // imported as layers: on the device already
    if (any_from_shapes) from_shapes_.insert(output);
    if (op == "Shape" || op == "Size") continue;
    if (op == "Range" && node.input_size() == 3 && from_shapes_.count(node.input(1))) {
      // Range(0, the token axis's length, 1): the positions.
      const auto& start = graph_.Get(node.input(0), "").tensor.values;
      const auto& limit = graph_.Get(node.input(1), "").tensor.values;
      const auto& delta = graph_.Get(node.input(2), "").tensor.values;
      if (start.size() == 1 && start[0] == 0 && delta.size() == 1 && delta[0] == 1 &&
          limit.size() == 1 && limit[0] == double(length_)) {
        sources_.insert(output);
        following_[output] = {&node, index};
        continue;
      }
    }
    if (following == 0 || (CancelsAShift(op) && following == present)) continue;
    following_[output] = {&node, index};
  }
}

std::string DecodePositions::RunTime(const std::string& name) {
  auto known = run_time_.find(name);
  if (known != run_time_.end()) return known->second;
  const auto [node, index] = following_.at(name);
  if (sources_.count(name)) {
    const std::string blob = graph_.UniqueBlobName(name + "_positions");
    caffe::LayerParameter* layer = graph_.net().add_layer();
    layer->set_name(graph_.UniqueLayerName(name + "_positions"));
    layer->set_type("Positions");
    layer->add_bottom(graph_.Materialize(token_input_, graph_.path() + ": "));
    layer->add_top(blob);
    layer->mutable_positions_param()->set_axis(token_axis_);
    Value v;
    v.shape = {length_};
    v.blob = blob;
    v.integer = true;
    graph_.Set(blob, std::move(v));
    return run_time_[name] = blob;
  }
  // The node once more, on the run-time versions of its inputs that follow
  // positions, into outputs of new names.
  onnx::NodeProto copy = *node;
  for (int i = 0; i < copy.input_size(); ++i)
    if (following_.count(copy.input(i))) copy.set_input(i, RunTime(copy.input(i)));
  for (int k = 0; k < copy.output_size(); ++k) {
    if (copy.output(k).empty()) continue;
    const std::string blob = graph_.UniqueBlobName(copy.output(k) + "_at_positions");
    run_time_[copy.output(k)] = blob;
    copy.set_output(k, blob);
  }
  rewritten_.push_back(std::move(copy));
  ImportNode(graph_, rewritten_.back(), index);
  return run_time_.at(name);
}

}  // namespace onnx_import
}  // namespace dlcaffe
