#include "import/onnx_trainable.hpp"

#include <map>
#include <vector>

#include "import/torch_export_signature.hpp"

namespace dlcaffe {
namespace onnx_import {
namespace {

// The inputs of `node` that a gradient flows into (an empty list: none).
std::vector<int> DifferentiableInputs(const onnx::NodeProto& node) {
  static const std::set<std::string> kNone = {
      "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Not",
      "Shape", "Size", "ConstantOfShape", "Range", "ArgMax", "ArgMin", "NonZero", "IsNaN",
      "IsInf", "Floor", "Ceil", "Round", "Sign", "EyeLike", "RandomNormalLike",
      "RandomUniformLike", "BitShift"};
  static const std::set<std::string> kFirst = {
      "Reshape", "Expand", "Tile", "Slice", "Squeeze", "Unsqueeze", "Gather", "GatherElements",
      "GatherND", "Split", "Pad", "Resize", "Upsample", "Trilu", "Dropout", "Clip", "ReduceSum",
      "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
      "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp", "TopK", "CumSum", "Flatten",
      "Transpose", "Identity", "DepthToSpace", "SpaceToDepth"};
  const std::string& op = node.op_type();
  if (kNone.count(op)) return {};
  if (kFirst.count(op)) return {0};
  if (op == "Where") return {1, 2};
  if (op == "ScatterND" || op == "ScatterElements") return {0, 2};
  if (op == "Cast") {
    for (const auto& a : node.attribute())
      if (a.name() == "to" && a.i() != onnx::TensorProto::FLOAT &&
          a.i() != onnx::TensorProto::DOUBLE && a.i() != onnx::TensorProto::FLOAT16 &&
          a.i() != onnx::TensorProto::BFLOAT16)
        return {};
    return {0};
  }
  std::vector<int> all(node.input_size());
  for (int i = 0; i < node.input_size(); ++i) all[i] = i;
  return all;
}

// Names exporters give the constants they fold (TorchScript's "onnx::Mul_12",
// torch.export's "val_173"): never a module's parameter.
bool ExporterConstantName(const std::string& name) {
  if (name.rfind("onnx::", 0) == 0) return true;
  if (name.size() <= 4 || name.rfind("val_", 0) != 0) return false;
  return name.find_first_not_of("0123456789", 4) == std::string::npos;
}

// Initializers read as the weight of a MatMul, Gemm or convolution. A
// constant an exporter folded there is a parameter it transposed or
// reshaped (TorchScript's default folding turns nn.Linear's weight into
// "onnx::MatMul_12"): trained, whatever its name.
std::set<std::string> WeightOperands(const onnx::GraphProto& graph) {
  static const std::set<std::string> kWeighted = {"MatMul", "Gemm", "Conv", "ConvTranspose"};
  std::set<std::string> weights;
  for (const auto& node : graph.node())
    if (kWeighted.count(node.op_type()))
      for (int i = 0; i < node.input_size() && i < 2; ++i) weights.insert(node.input(i));
  return weights;
}

}  // namespace

std::set<std::string> TrainableInitializers(const onnx::GraphProto& graph) {
  // Tensors a gradient reaches, walking the (topologically ordered) nodes
  // backwards from the outputs.
  std::set<std::string> reached;
  for (const auto& output : graph.output()) reached.insert(output.name());
  for (int n = graph.node_size() - 1; n >= 0; --n) {
    const onnx::NodeProto& node = graph.node(n);
    bool any = false;
    for (const auto& out : node.output()) any = any || reached.count(out);
    if (!any) continue;
    for (int i : DifferentiableInputs(node))
      if (i < node.input_size() && !node.input(i).empty()) reached.insert(node.input(i));
  }
  // torch.export's signature decides alone: its parameters train, and what
  // it folded into constants of its own naming that the import could not
  // trace back to them (torch_export_folds.hpp) stays constant, as the
  // import says.
  const TorchExportSignature signature = ReadTorchExportSignature(graph);
  const bool signature_decides = signature.present && !signature.parameters.empty();
  const std::set<std::string> weights = WeightOperands(graph);

  std::set<std::string> trainable;
  for (const auto& init : graph.initializer()) {
    const std::string& name = init.name();
    const int type = init.data_type();
    const bool is_float = type == onnx::TensorProto::FLOAT || type == onnx::TensorProto::DOUBLE ||
                          type == onnx::TensorProto::FLOAT16 || type == onnx::TensorProto::BFLOAT16;
    if (!is_float || !reached.count(name)) continue;
    if (signature_decides) {
      if (signature.parameters.count(name)) trainable.insert(name);
    } else if (weights.count(name)) {
      trainable.insert(name);
    } else if (!signature.non_trained.count(name) && !ExporterConstantName(name)) {
      trainable.insert(name);
    }
  }
  return trainable;
}

std::set<std::string> InferenceConstants(const onnx::GraphProto& graph) {
  const TorchExportSignature signature = ReadTorchExportSignature(graph);
  std::set<std::string> constants;
  if (!signature.present || signature.parameters.empty()) return constants;
  for (const auto& init : graph.initializer())
    if (!signature.parameters.count(init.name())) constants.insert(init.name());
  return constants;
}

}  // namespace onnx_import
}  // namespace dlcaffe
