// The ONNX importer's working state, and what an op handler sees of one
// node: its inputs (host constants or blobs, their shapes known, or bounded
// where an axis follows the data: Value::runtime_dims), its
// attributes, and the calls that add dlcaffe layers or folded constants for
// its outputs. Op handlers live in onnx_ops_*.cpp and register themselves
// by op type (REGISTER_ONNX_OP), as layers do.
#pragma once
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "caffe.pb.h"
#include "dlcaffe/error.hpp"
#include "dlcaffe/onnx_import.hpp"
#include "import/onnx_tensor.hpp"

namespace dlcaffe {
namespace onnx_import {

// One ONNX tensor as the importer knows it.
struct Value {
  std::vector<int64_t> shape;  // known, or a bound on runtime_dims' axes
  bool constant = false;       // known on the host (initializer or folded)
  HostTensor tensor;           // constant: the values
  std::string initializer;     // set for graph initializers (float: a parameter)
  std::string blob;            // the blob holding it at run time ("" until needed)
  // A 2-d initializer's transpose (how exporters feed a torch Linear's
  // weight to MatMul): that initializer's name, so that the weight stays a
  // parameter in its own layout.
  std::string transposed_initializer;
  // A run-time tensor of integers (token ids, positions), held as floats
  // (exact below 2^24): integer-only arithmetic on it is refused.
  bool integer = false;
  // IsNaN of this run-time blob: never a blob itself; only the pattern
  // Where(IsNaN(x), 0, x) after a Softmax reads it (onnx_ops_select.cpp).
  std::string nan_test_of;
  // A tensor sequence (SplitToSequence): the names of its elements' values.
  // It never becomes a blob; SequenceAt picks an element.
  std::vector<std::string> sequence;
  // Axes whose size follows the data (after NonZero, a TopK of run-time k,
  // NonMaxSuppression): `shape` holds their upper bound, and the layers
  // size them at run time. Empty: every axis is as `shape` says.
  std::vector<bool> runtime_dims;
  // A run-time Shape output: the value whose whole shape it holds.
  std::string shape_of;
  // A run-time integer vector (or scalar) made of sizes: where each element
  // comes from (onnx_size_sources.cpp), so that a Reshape given it can size
  // its layer. Empty where unknown.
  struct SizeSource {
    std::string value;  // a value's axis, or "" for `constant`
    int axis = -1;
    int64_t constant = 0;
  };
  std::vector<SizeSource> size_sources;

  bool has_runtime_dims() const {
    for (bool d : runtime_dims)
      if (d) return true;
    return false;
  }
};


class Graph;

class NodeContext {
 public:
  NodeContext(Graph& graph, const onnx::NodeProto& node, int index);

  const onnx::NodeProto& node() const { return node_; }
  const std::string& op() const { return node_.op_type(); }
  int opset() const;
  const OnnxImportOptions& options() const;
  const Graph& graph() const { return graph_; }
  // "model.onnx: node 'Conv_0' (Conv): " — the start of every error.
  std::string Where() const;

  // The type of the layer that writes `blob` ("" for none: an input, or a
  // constant's Parameter).
  std::string ProducerType(const std::string& blob) const;
  // A Parameter layer holding `value` (not learnable), for constants a layer
  // takes as a bottom; returns its blob.
  std::string ConstantBlob(const HostTensor& value, const std::string& suffix);

  // Inputs. An empty name (an omitted optional input) is absent.
  int num_inputs() const { return node_.input_size(); }
  bool has_input(int i) const { return i < node_.input_size() && !node_.input(i).empty(); }
  const Value& input(int i) const;
  const std::vector<int64_t>& shape(int i) const { return input(i).shape; }
  int rank(int i) const { return static_cast<int>(shape(i).size()); }
  // Known at import time and free to fold on the host: a constant, or an
  // initializer that is not a trained parameter (Graph::IsTrainable).
  bool is_constant(int i) const;
  // Input i has axes whose size follows the data (Value::runtime_dims), and
  // which: one flag per axis.
  bool has_runtime_dims(int i) const { return has_input(i) && input(i).has_runtime_dims(); }
  std::vector<bool> runtime_dims(int i) const;
  // The run-time axes of an output of `rank` that broadcasts all inputs
  // (numpy alignment, from the last axis): any input's flag on the axis.
  std::vector<bool> BroadcastRuntimeDims(size_t rank) const;
  // Input i is a trained parameter: it must stay a learnable blob.
  bool is_trainable(int i) const;
  // Known at import time, so that a layer can own it as a blob (a weight):
  // constants and every initializer, trainable or not.
  bool is_weight(int i) const { return has_input(i) && input(i).constant; }
  // Every present input is_constant (the node can be evaluated on the host).
  bool all_constant() const;
  // The host value of input i; an error if it is only known at run time.
  const HostTensor& constant(int i) const;
  // The blob of input i (a constant gets a Parameter layer on first use).
  std::string blob(int i);

  // Attributes.
  bool has_attr(const std::string& name) const;
  int64_t attr_int(const std::string& name, int64_t fallback) const;
  float attr_float(const std::string& name, float fallback) const;
  std::string attr_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& name) const;
  std::vector<float> attr_floats(const std::string& name) const;
  HostTensor attr_tensor(const std::string& name) const;
  // Fails naming each attribute that is not in `known` (an attribute the
  // importer would silently ignore could change the result).
  void CheckAttributes(const std::set<std::string>& known) const;

  // Outputs.
  int num_outputs() const { return node_.output_size(); }
  bool has_output(int k) const { return k < node_.output_size() && !node_.output(k).empty(); }
  const std::string& output_name(int k) const {
    DLC_REQUIRE(has_output(k), Where() << "needs output " << k);
    return node_.output(k);
  }
  void SetConstantOutput(int k, HostTensor value);
  // The same, remembering that the value is the transpose of a 2-d initializer.
  void SetTransposedInitializerOutput(int k, HostTensor value, const std::string& initializer);
  // Output k is input i under another name (Identity): the same blob, or the
  // same constant, an initializer staying a (shared) parameter.
  void SetOutputToInput(int k, int i);
  // Output k is blob `blob` of this shape (by default the output's own name,
  // which a layer of this node must top).
  // A run-time output holds integers when every run-time input does.
  void SetOutput(int k, std::vector<int64_t> shape, const std::string& blob = "");
  // Overrides that rule (a Cast to float).
  void MarkOutputInteger(int k, bool integer);
  // Output k's axes whose size follows the data. SetOutput gives an output
  // of input 0's shape input 0's flags; this sets them (empty: none).
  void SetRuntimeDims(int k, std::vector<bool> dims);
  // Imports the nodes of a subgraph (an If's branch) into this graph: its
  // initializers become constants, its nodes layers; outer values are seen
  // by name.
  void ImportSubgraph(const onnx::GraphProto& subgraph);
  // Output k's value as set so far (SetOutput first).
  Value& output_value(int k);
  // The blob of the value named `name` (a constant gets a Parameter layer).
  std::string MaterializeNamed(const std::string& name);
  // Output k is `value` as it is (a sequence, a sequence's element).
  void SetOutputValue(int k, Value value);
  // Sets a value under a name of the node's own making (a sequence's
  // elements), and reads one back.
  void SetNamedValue(const std::string& name, Value value);
  const Value& named_value(const std::string& name) const;
  bool has_named_value(const std::string& name) const;

  // A layer named after the node (a suffix tells several apart).
  caffe::LayerParameter* AddLayer(const std::string& type, const std::vector<std::string>& bottoms,
                                  const std::vector<std::string>& tops,
                                  const std::string& suffix = "");
  // A fresh intermediate blob name.
  std::string TempBlob(const std::string& suffix);
  // Adds input i's constant value as the layer's next blob (reshaped to
  // `shape` when given; same count). A float initializer becomes a
  // learnable parameter named after it (OnnxModel::parameters records
  // where); any other constant gets lr_mult 0.
  void AddParamBlob(caffe::LayerParameter* layer, int input_index,
                    const std::vector<int64_t>& shape = {});
  // Adds `value` as the layer's next blob, not learnable (lr_mult 0) or
  // learnable (a parameter named `initializer`); a non-empty `initializer`
  // is recorded in OnnxModel::parameters either way.
  void AddValueBlob(caffe::LayerParameter* layer, const HostTensor& value,
                    const std::vector<int64_t>& shape = {}, const std::string& initializer = "",
                    bool learnable = false);

 private:
  Graph& graph_;
  const onnx::NodeProto& node_;
  int index_;
  int layers_added_ = 0;
};

#define ONNX_REQUIRE(ctx, cond, message) DLC_REQUIRE(cond, (ctx).Where() << message)

using OpHandler = std::function<void(NodeContext&)>;

class OpRegistry {
 public:
  static void Add(const std::string& op_type, OpHandler handler);
  static const OpHandler* Find(const std::string& op_type);
  static std::vector<std::string> Ops();
  // The ops whose handlers take inputs with run-time sizes
  // (Value::runtime_dims) and emit layers that follow them; ImportNode
  // refuses such inputs to every other op.
  static void AllowRuntimeDims(const std::string& op_type);
  static bool AllowsRuntimeDims(const std::string& op_type);
};

struct OpRegisterer {
  OpRegisterer(const std::vector<std::string>& op_types, OpHandler handler) {
    for (const auto& op : op_types) OpRegistry::Add(op, handler);
  }
};

#define ONNX_OP_CONCAT_(a, b) a##b
#define ONNX_OP_CONCAT(a, b) ONNX_OP_CONCAT_(a, b)
struct RuntimeDimsAllower {
  explicit RuntimeDimsAllower(const std::vector<std::string>& op_types) {
    for (const auto& op : op_types) OpRegistry::AllowRuntimeDims(op);
  }
};

// ALLOW_RUNTIME_DIMS("Transpose", "Concat"); beside the handlers.
#define ALLOW_RUNTIME_DIMS(...)                                                           \
  static ::dlcaffe::onnx_import::RuntimeDimsAllower ONNX_OP_CONCAT(g_onnx_runtime_dims_, \
                                                                   __LINE__)({__VA_ARGS__})

// REGISTER_ONNX_OP(ImportActivation, "Relu", "Sigmoid");
#define REGISTER_ONNX_OP(handler, ...)                                               \
  static ::dlcaffe::onnx_import::OpRegisterer ONNX_OP_CONCAT(g_onnx_op_, __LINE__)( \
      {__VA_ARGS__}, handler)

// The whole import's state.
class Graph {
 public:
  Graph(const std::string& path, const OnnxImportOptions& options, int opset);

  const std::string& path() const { return path_; }
  std::string model_dir() const;
  const OnnxImportOptions& options() const { return options_; }
  int opset() const { return opset_; }
  // The exporter that wrote the file (ModelProto's producer_name and
  // producer_version), for its known departures from the spec.
  void set_producer(const std::string& name, const std::string& version) {
    producer_name_ = name;
    producer_version_ = version;
  }
  const std::string& producer_name() const { return producer_name_; }
  const std::string& producer_version() const { return producer_version_; }

  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  Value& Get(const std::string& name, const std::string& where);
  void Set(const std::string& name, Value value);
  // The blob of a value (a constant gets a Parameter layer).
  std::string Materialize(const std::string& name, const std::string& where);

  // Whether `value` is a trained parameter: in a training import, an
  // initializer that TrainableInitializers picked and the user did not
  // freeze; in an inference import, any float initializer but the
  // InferenceConstants (as blobs they keep their names; nothing trains them).
  bool IsTrainable(const Value& value) const;
  void SetTrainable(std::set<std::string> names) { trainable_ = std::move(names); }
  // An inference import's initializers that are not parameters
  // (InferenceConstants).
  void SetInferenceConstants(std::set<std::string> names) { inference_constants_ = std::move(names); }

  caffe::NetParameter& net() { return net_; }
  std::map<std::string, OnnxParameterSource>& parameters() { return parameters_; }
  std::string UniqueLayerName(const std::string& base);
  std::string UniqueBlobName(const std::string& base);
  void ClaimBlobName(const std::string& name) { blob_names_.insert(name); }

 private:
  std::string path_;
  OnnxImportOptions options_;
  int opset_;
  std::string producer_name_, producer_version_;
  std::map<std::string, Value> values_;
  caffe::NetParameter net_;
  std::map<std::string, OnnxParameterSource> parameters_;
  std::set<std::string> layer_names_, blob_names_;
  std::set<std::string> trainable_;
  std::set<std::string> inference_constants_;
};

// After a node's handler: the size sources (Value::size_sources) its
// output takes from its inputs (onnx_size_sources.cpp).
void TrackSizeSources(NodeContext& ctx);
// Before a node's handler: folds what its size sources decide (an Equal of
// sizes and -1); true where it set the outputs.
bool FoldOnSizeSources(NodeContext& ctx);

// Runs the op handler of `node` (graph position `index`), naming the node in
// its errors.
void ImportNode(Graph& graph, const onnx::NodeProto& node, int index);

// Axis helpers: a negative axis counts from the end.
int NormalizeAxis(const NodeContext& ctx, int64_t axis, int rank);
// The numpy broadcast of two shapes (an error naming the node otherwise).
std::vector<int64_t> BroadcastShapes(const NodeContext& ctx, const std::vector<int64_t>& a,
                                     const std::vector<int64_t>& b);
caffe::BlobShape ToBlobShape(const std::vector<int64_t>& shape);

}  // namespace onnx_import
}  // namespace dlcaffe
