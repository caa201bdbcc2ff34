// RecoverFoldedParameters (torch_export_folds.hpp).
#include "import/torch_export_folds.hpp"

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>

#include "import/onnx_tensor.hpp"
#include "import/torch_export_signature.hpp"

namespace dlcaffe {
namespace onnx_import {
namespace {

// What a node's FX metadata says: the aten op and its positional arguments
// ("%name" for a node or placeholder, "" for anything else).
struct FxCall {
  std::string target;             // "torch.ops.aten.linear.default"
  std::vector<std::string> args;  // "p_lm_head_weight", "layer_norm", ""
  std::set<std::string> names;    // every %name in the arguments, in lists too
  std::vector<std::string> module_scopes;  // "transformer", "transformer.h.0", ...
};

// Parses "%x : [...] = call_function[target=T](args = (%a, [1, 2], %b), kwargs = {})".
FxCall ParseFxCall(const std::map<std::string, std::string>& metadata) {
  FxCall call;
  auto fx = metadata.find("pkg.torch.onnx.fx_node");
  if (fx != metadata.end()) {
    const std::string& text = fx->second;
    const size_t t = text.find("target=");
    if (t != std::string::npos) call.target = text.substr(t + 7, text.find(']', t) - t - 7);
    const size_t a = text.find("args = (");
    if (a != std::string::npos) {
      int depth = 0;
      std::string arg;
      for (size_t i = a + 8; i < text.size(); ++i) {
        const char c = text[i];
        if (depth == 0 && (c == ',' || c == ')')) {
          const size_t start = arg.find_first_not_of(' ');
          const std::string trimmed = start == std::string::npos ? "" : arg.substr(start);
          call.args.push_back(!trimmed.empty() && trimmed[0] == '%' ? trimmed.substr(1) : "");
          arg.clear();
          if (c == ')') break;
          continue;
        }
        if (c == '(' || c == '[') ++depth;
        if (c == ')' || c == ']') --depth;
        arg += c;
      }
      static const std::regex name("%([A-Za-z0-9_]+)");
      const std::string rest = text.substr(a);
      for (std::sregex_iterator it(rest.begin(), rest.end(), name), end; it != end; ++it)
        call.names.insert((*it)[1]);
    }
  }
  // name_scopes: "['', 'transformer', 'transformer.h.0', 'add_1']": the
  // module paths between the root and the FX node's own name.
  auto scopes = metadata.find("pkg.torch.onnx.name_scopes");
  if (scopes != metadata.end()) {
    static const std::regex quoted("'([^']*)'");
    std::vector<std::string> all;
    for (std::sregex_iterator it(scopes->second.begin(), scopes->second.end(), quoted), end; it != end; ++it)
      all.push_back((*it)[1]);
    for (size_t i = 1; i + 1 < all.size(); ++i) call.module_scopes.push_back(all[i]);
  }
  return call;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string ShapeText(const std::vector<int64_t>& shape) { return ShapeString(shape); }

// The FX node name a folded constant keeps ("expand", "embedding_1"), less
// its counter.
std::string FoldedOpName(const std::string& name) {
  static const std::regex counted("^([a-z_]+?)(_[0-9]+)?$");
  std::smatch m;
  return std::regex_match(name, m, counted) ? m[1].str() : "";
}

onnx::TensorProto FloatTensor(const std::string& name, const std::vector<int64_t>& shape,
                              const std::vector<double>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : shape) t.add_dims(d);
  for (double v : values) t.add_float_data(static_cast<float>(v));
  return t;
}

onnx::TensorProto Int64Tensor(const std::string& name, const std::vector<int64_t>& shape,
                              const std::vector<int64_t>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : shape) t.add_dims(d);
  for (int64_t v : values) t.add_int64_data(v);
  return t;
}

HostTensor Transposed2d(const HostTensor& a) {
  HostTensor t;
  t.type = a.type;
  t.shape = {a.shape[1], a.shape[0]};
  t.values.resize(a.values.size());
  for (int64_t i = 0; i < a.shape[0]; ++i)
    for (int64_t j = 0; j < a.shape[1]; ++j) t.values[j * a.shape[0] + i] = a.values[i * a.shape[1] + j];
  return t;
}

class Recovery {
 public:
  Recovery(onnx::GraphProto* graph, const std::string& model_dir)
      : graph_(*graph), model_dir_(model_dir), signature_(ReadTorchExportSignature(*graph)) {}

  FoldRecovery Run() {
    FoldRecovery result;
    if (!signature_.present) return result;
    for (const auto& init : graph_.initializer()) initializers_.insert(init.name());
    // Initializers listed as graph inputs too (old IRs) can be fed: not folds.
    for (const auto& input : graph_.input()) initializers_.erase(input.name());
    for (const auto& p : signature_.parameters)
      if (!initializers_.count(p)) missing_.insert(p);
    if (missing_.empty()) return result;
    // Linear weights and tied aliases: the FX node names the parameter.
    for (int n = 0; n < graph_.node_size(); ++n) {
      const onnx::NodeProto& node = graph_.node(n);
      const FxCall call = ParseFxCall(NodeMetadata(node));
      const bool linear = Contains(call.target, "aten.linear") && call.args.size() >= 2 &&
                          (node.op_type() == "MatMul" || node.op_type() == "Gemm") &&
                          node.input_size() > 1;
      const bool embedding = Contains(call.target, "aten.embedding") && !call.args.empty() &&
                             node.op_type() == "Gather" && node.input_size() > 0;
      if (!linear && !embedding) continue;
      const std::string parameter = Parameter(call.args[linear ? 1 : 0]);
      // A module reading another module's weight: the two are tied (one
      // tensor; the signature lists both names, the graph reads one).
      if (!call.module_scopes.empty() && !parameter.empty()) {
        const std::string own = call.module_scopes.back() + ".weight";
        if (own != parameter && missing_.count(own)) {
          missing_.erase(own);
          result.tied[own] = parameter;
          result.recovered.push_back(own + ": tied to " + parameter + " (one parameter, trained and saved as " +
                                     parameter + ")");
        }
      }
      if (linear && !(node.op_type() == "Gemm" && GemmTransposesB(node)))
        RecoverTransposed(node.input(1), parameter, &result);
      else if (embedding)
        RecoverAlias(node.input(0), parameter, &result);
    }
    // Constants named after the FX node that computed them from a parameter
    // (the node itself is gone): the one missing parameter of the module
    // that reads them.
    for (int n = 0; n < graph_.node_size() && !missing_.empty(); ++n) {
      const onnx::NodeProto& node = graph_.node(n);
      const FxCall call = ParseFxCall(NodeMetadata(node));
      if (call.module_scopes.empty()) continue;
      for (const std::string& input : node.input()) {
        if (!initializers_.count(input) || signature_.parameters.count(input) || !call.names.count(input))
          continue;
        const std::string op = FoldedOpName(input);
        if (op != "expand" && op != "embedding") continue;
        const std::string candidate = OnlyMissingUnder(call.module_scopes.back(), op == "embedding");
        if (candidate.empty()) continue;
        if (op == "expand") RecoverBroadcast(input, candidate, &result);
        else RecoverPositions(input, candidate, &result);
      }
    }
    result.frozen.assign(missing_.begin(), missing_.end());
    if (!new_nodes_.empty()) {
      // The new nodes read initializers only: they go first.
      google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
      for (auto& node : new_nodes_) *nodes.Add() = std::move(node);
      for (auto& node : *graph_.mutable_node()) *nodes.Add() = std::move(node);
      graph_.mutable_node()->Swap(&nodes);
    }
    return result;
  }

 private:
  static bool GemmTransposesB(const onnx::NodeProto& node) {
    for (const auto& a : node.attribute())
      if (a.name() == "transB") return a.i() != 0;
    return false;
  }

  std::string Parameter(const std::string& placeholder) const {
    auto it = signature_.parameter_of_placeholder.find(placeholder);
    return it == signature_.parameter_of_placeholder.end() ? "" : it->second;
  }

  int InitializerIndex(const std::string& name) const {
    for (int i = 0; i < graph_.initializer_size(); ++i)
      if (graph_.initializer(i).name() == name) return i;
    return -1;
  }

  HostTensor Value(const std::string& name) const {
    const int i = InitializerIndex(name);
    return FromTensorProto(graph_.initializer(i), model_dir_, "initializer '" + name + "'");
  }

  void RemoveInitializer(const std::string& name) {
    const int i = InitializerIndex(name);
    graph_.mutable_initializer()->DeleteSubrange(i, 1);
    initializers_.erase(name);
  }

  void AddInitializer(onnx::TensorProto tensor) {
    initializers_.insert(tensor.name());
    *graph_.add_initializer() = std::move(tensor);
  }

  // Every node input named `from` reads `to` instead.
  void Rename(const std::string& from, const std::string& to) {
    for (auto& node : *graph_.mutable_node())
      for (auto& input : *node.mutable_input())
        if (input == from) input = to;
    for (auto& output : *graph_.mutable_output())
      if (output.name() == from) output.set_name(to);
  }

  void AddNode(const std::string& op, const std::vector<std::string>& inputs, const std::string& output,
               const std::vector<int64_t>& perm = {}) {
    onnx::NodeProto node;
    node.set_op_type(op);
    node.set_name("recovered/" + output);
    for (const auto& i : inputs) node.add_input(i);
    node.add_output(output);
    if (!perm.empty()) {
      onnx::AttributeProto* a = node.add_attribute();
      a->set_name("perm");
      a->set_type(onnx::AttributeProto::INTS);
      for (int64_t p : perm) a->add_ints(p);
    }
    new_nodes_.push_back(std::move(node));
  }

  static bool SameValues(const HostTensor& a, const HostTensor& b) {
    return a.shape == b.shape && a.values == b.values;
  }

  // `folded` (a MatMul's right operand) is W^T for parameter `parameter`.
  void RecoverTransposed(const std::string& folded, const std::string& parameter, FoldRecovery* r) {
    if (parameter.empty() || folded == parameter || !initializers_.count(folded) ||
        signature_.parameters.count(folded))
      return;
    const HostTensor value = Value(folded);
    if (value.shape.size() != 2 || value.type != onnx::TensorProto::FLOAT) return;
    const HostTensor weight = Transposed2d(value);
    if (initializers_.count(parameter)) {  // tied, or recovered before: the same values
      if (!SameValues(Value(parameter), weight)) return;
    } else {
      if (!missing_.count(parameter)) return;
      AddInitializer(FloatTensor(parameter, weight.shape, weight.values));
      missing_.erase(parameter);
      r->recovered.push_back(parameter + " " + ShapeText(weight.shape) + ": transposed from '" +
                             folded + "' (a Linear weight the exporter folded)");
    }
    RemoveInitializer(folded);
    AddNode("Transpose", {parameter}, folded, {1, 0});
  }

  // `stored` is parameter `parameter` under another name (a tied weight).
  void RecoverAlias(const std::string& stored, const std::string& parameter, FoldRecovery* r) {
    if (parameter.empty() || stored == parameter || !initializers_.count(stored) ||
        signature_.parameters.count(stored))
      return;
    if (initializers_.count(parameter)) {
      if (!SameValues(Value(parameter), Value(stored))) return;
      RemoveInitializer(stored);
    } else {
      if (!missing_.count(parameter)) return;
      const int i = InitializerIndex(stored);
      graph_.mutable_initializer(i)->set_name(parameter);
      initializers_.erase(stored);
      initializers_.insert(parameter);
      missing_.erase(parameter);
      r->recovered.push_back(parameter + ": stored as '" + stored + "' (tied weights, one parameter)");
    }
    Rename(stored, parameter);
  }

  // The one missing parameter in module `scope` or below (for a table: a
  // ".weight"), or "".
  std::string OnlyMissingUnder(const std::string& scope, bool table) const {
    std::string found;
    for (const auto& p : missing_) {
      if (p.rfind(scope + ".", 0) != 0) continue;
      if (table && (p.size() < 7 || p.compare(p.size() - 7, 7, ".weight") != 0)) continue;
      if (!found.empty()) return "";
      found = p;
    }
    return found;
  }

  // `folded` is `parameter` expanded: it has equal copies along some axes.
  void RecoverBroadcast(const std::string& folded, const std::string& parameter, FoldRecovery* r) {
    const HostTensor value = Value(folded);
    if (value.type != onnx::TensorProto::FLOAT || value.shape.empty()) return;
    // Collapse each axis whose slices all equal the first one.
    HostTensor p = value;
    for (size_t axis = 0; axis < p.shape.size(); ++axis) {
      const int64_t n = p.shape[axis];
      if (n == 1) continue;
      int64_t outer = 1, inner = 1;
      for (size_t d = 0; d < axis; ++d) outer *= p.shape[d];
      for (size_t d = axis + 1; d < p.shape.size(); ++d) inner *= p.shape[d];
      bool equal = true;
      for (int64_t o = 0; o < outer && equal; ++o)
        for (int64_t k = 1; k < n && equal; ++k)
          for (int64_t i = 0; i < inner && equal; ++i)
            equal = p.values[(o * n + k) * inner + i] == p.values[(o * n) * inner + i];
      if (!equal) continue;
      HostTensor collapsed = p;
      collapsed.shape[axis] = 1;
      collapsed.values.clear();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) collapsed.values.push_back(p.values[(o * n) * inner + i]);
      p = collapsed;
    }
    const std::string shape_name = "recovered/" + parameter + "/shape";
    AddInitializer(FloatTensor(parameter, p.shape, p.values));
    AddInitializer(Int64Tensor(shape_name, {static_cast<int64_t>(value.shape.size())}, value.shape));
    RemoveInitializer(folded);
    AddNode("Expand", {parameter, shape_name}, folded);
    missing_.erase(parameter);
    r->recovered.push_back(parameter + " " + ShapeText(p.shape) + ": its broadcast '" + folded + "' " +
                           ShapeText(value.shape) + " had equal copies");
  }

  // `folded` is rows 0..rows-1 of table `parameter` (positions gathered).
  void RecoverPositions(const std::string& folded, const std::string& parameter, FoldRecovery* r) {
    const HostTensor value = Value(folded);
    if (value.type != onnx::TensorProto::FLOAT || value.shape.empty()) return;
    const int64_t width = value.shape.back();
    const int64_t rows = value.count() / std::max<int64_t>(width, 1);
    std::vector<int64_t> positions(rows);
    for (int64_t i = 0; i < rows; ++i) positions[i] = i;
    const std::vector<int64_t> index_shape(value.shape.begin(), value.shape.end() - 1);
    const std::string index_name = "recovered/" + parameter + "/positions";
    AddInitializer(FloatTensor(parameter, {rows, width}, value.values));
    AddInitializer(Int64Tensor(index_name, index_shape, positions));
    RemoveInitializer(folded);
    AddNode("Gather", {parameter, index_name}, folded);
    missing_.erase(parameter);
    r->partial_rows[parameter] = rows;
    r->recovered.push_back(parameter + " " + ShapeText({rows, width}) + ": rows 0.." +
                           std::to_string(rows - 1) + " of the table, from '" + folded +
                           "' (the file keeps only the positions it gathered)");
  }

  onnx::GraphProto& graph_;
  std::string model_dir_;
  TorchExportSignature signature_;
  std::set<std::string> initializers_, missing_;
  std::vector<onnx::NodeProto> new_nodes_;
};

}  // namespace

FoldRecovery RecoverFoldedParameters(onnx::GraphProto* graph, const std::string& model_dir) {
  return Recovery(graph, model_dir).Run();
}

}  // namespace onnx_import
}  // namespace dlcaffe
