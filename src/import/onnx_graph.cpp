#include "import/onnx_graph.hpp"

#include <algorithm>
#include <stdexcept>

namespace dlcaffe {
namespace onnx_import {

namespace {
std::map<std::string, OpHandler>& Handlers() {
  static std::map<std::string, OpHandler> handlers;
  return handlers;
}
}  // namespace

void OpRegistry::Add(const std::string& op_type, OpHandler handler) {
  Handlers()[op_type] = std::move(handler);
}

const OpHandler* OpRegistry::Find(const std::string& op_type) {
  auto it = Handlers().find(op_type);
  return it == Handlers().end() ? nullptr : &it->second;
}

std::vector<std::string> OpRegistry::Ops() {
  std::vector<std::string> ops;
  for (const auto& entry : Handlers()) ops.push_back(entry.first);
  return ops;
}

namespace {
std::set<std::string>& RuntimeDimsOps() {
  static std::set<std::string> ops;
  return ops;
}
}  // namespace

void OpRegistry::AllowRuntimeDims(const std::string& op_type) { RuntimeDimsOps().insert(op_type); }

bool OpRegistry::AllowsRuntimeDims(const std::string& op_type) {
  return RuntimeDimsOps().count(op_type) > 0;
}

// ---- Graph ----

Graph::Graph(const std::string& path, const OnnxImportOptions& options, int opset)
    : path_(path), options_(options), opset_(opset) {}

std::string Graph::model_dir() const {
  const size_t slash = path_.find_last_of('/');
  return slash == std::string::npos ? "." : path_.substr(0, slash);
}

Value& Graph::Get(const std::string& name, const std::string& where) {
  auto it = values_.find(name);
  DLC_REQUIRE(it != values_.end(), where << "input '" << name
                                         << "' is not produced by any earlier node, "
                                            "initializer or graph input");
  return it->second;
}

void Graph::Set(const std::string& name, Value value) { values_[name] = std::move(value); }

std::string Graph::UniqueLayerName(const std::string& base) {
  std::string name = base;
  for (int i = 1; layer_names_.count(name); ++i) name = base + "_" + std::to_string(i);
  layer_names_.insert(name);
  return name;
}

std::string Graph::UniqueBlobName(const std::string& base) {
  std::string name = base;
  for (int i = 1; blob_names_.count(name) || values_.count(name); ++i)
    name = base + "_" + std::to_string(i);
  blob_names_.insert(name);
  return name;
}

bool Graph::IsTrainable(const Value& value) const {
  if (!value.constant || value.initializer.empty() || value.tensor.is_integer()) return false;
  if (!options_.training) return !inference_constants_.count(value.initializer);
  return trainable_.count(value.initializer) > 0;
}

std::string Graph::Materialize(const std::string& name, const std::string& where) {
  Value& value = Get(name, where);
  if (!value.blob.empty()) return value.blob;
  DLC_REQUIRE(value.sequence.empty(),
              where << "'" << name << "' is a tensor sequence: sequences are not supported "
                       "as graph outputs or as inputs of ops other than SequenceAt");
  DLC_REQUIRE(value.nan_test_of.empty(),
              where << "'" << name << "' is IsNaN of run-time data, which is not supported "
                       "except as Where(IsNaN(p), 0, p) after a Softmax (PyTorch's attention)");
  DLC_REQUIRE(value.constant, where << "tensor '" << name << "' has no blob");
  // A constant used at run time: a Parameter layer holds it.
  const std::string blob = UniqueBlobName(name);
  caffe::LayerParameter* layer = net_.add_layer();
  layer->set_name(UniqueLayerName("constant_" + name));
  layer->set_type("Parameter");
  layer->add_top(blob);
  *layer->mutable_parameter_param()->mutable_shape() = ToBlobShape(value.shape);
  caffe::BlobProto* proto = layer->add_blobs();
  *proto->mutable_shape() = ToBlobShape(value.shape);
  for (double v : value.tensor.values) proto->add_data(static_cast<float>(v));
  caffe::ParamSpec* spec = layer->add_param();
  if (IsTrainable(value)) {
    spec->set_name(value.initializer);
    parameters_[value.initializer] = {layer->name(), 0};
  } else {
    spec->set_lr_mult(0.f);
    spec->set_decay_mult(0.f);
  }
  value.blob = blob;
  return blob;
}

void ImportNode(Graph& graph, const onnx::NodeProto& node, int index) {
  NodeContext ctx(graph, node, index);
  DLC_REQUIRE(node.domain().empty() || node.domain() == "ai.onnx",
              ctx.Where() << "operators of domain '" << node.domain()
                          << "' are not supported by the importer");
  const OpHandler* handler = OpRegistry::Find(node.op_type());
  DLC_REQUIRE(handler, ctx.Where() << "operator '" << node.op_type()
                                   << "' is not supported by the importer");
  if (!OpRegistry::AllowsRuntimeDims(node.op_type()))
    for (int i = 0; i < ctx.num_inputs(); ++i)
      DLC_REQUIRE(!ctx.has_runtime_dims(i),
                  ctx.Where() << "input '" << node.input(i)
                              << "' has a size that follows the data (it comes after a NonZero, "
                                 "a TopK of run-time k or a NonMaxSuppression): not supported "
                                 "by the importer for "
                              << node.op_type());
  try {
    if (!FoldOnSizeSources(ctx)) (*handler)(ctx);
    TrackSizeSources(ctx);
  } catch (const Error& e) {
    // Host helpers (tensor values, shape products) know no node: name it.
    const std::string what = e.what();
    if (what.rfind(graph.path() + ": ", 0) == 0) throw;
    throw Error(ctx.Where() + what);
  } catch (const std::out_of_range&) {
    // A handler read past a tensor a malformed file left short (the
    // handlers check what they can name; this is the net under them).
    throw Error(ctx.Where() + "an input or attribute holds fewer values than " +
                node.op_type() + " reads");
  }
  for (int k = 0; k < node.output_size(); ++k)
    DLC_REQUIRE(node.output(k).empty() || graph.Has(node.output(k)) || k > 0,
                ctx.Where() << "produced no value for output '" << node.output(k) << "'");
}

// ---- NodeContext ----

NodeContext::NodeContext(Graph& graph, const onnx::NodeProto& node, int index)
    : graph_(graph), node_(node), index_(index) {}

int NodeContext::opset() const { return graph_.opset(); }
const OnnxImportOptions& NodeContext::options() const { return graph_.options(); }

std::string NodeContext::Where() const {
  std::string name = node_.name().empty() ? "#" + std::to_string(index_) : node_.name();
  return graph_.path() + ": node '" + name + "' (" + node_.op_type() + "): ";
}

const Value& NodeContext::input(int i) const {
  DLC_REQUIRE(has_input(i), Where() << "needs input " << i);
  return graph_.Get(node_.input(i), Where());
}

bool NodeContext::is_constant(int i) const {
  return has_input(i) && input(i).constant && !(options().training && is_trainable(i));
}

bool NodeContext::is_trainable(int i) const { return has_input(i) && graph_.IsTrainable(input(i)); }

bool NodeContext::all_constant() const {
  for (int i = 0; i < num_inputs(); ++i)
    if (has_input(i) && !is_constant(i)) return false;
  return true;
}

const HostTensor& NodeContext::constant(int i) const {
  const Value& v = input(i);
  DLC_REQUIRE(v.constant, Where() << "input " << i << " ('" << node_.input(i)
                                  << "') must be known at import time (a constant or "
                                     "initializer, or computed from shapes only); values known only at run "
                                     "time are not supported here");
  return v.tensor;
}

std::string NodeContext::ProducerType(const std::string& blob) const {
  const caffe::NetParameter& net = graph_.net();
  for (int l = net.layer_size() - 1; l >= 0; --l)
    for (const auto& top : net.layer(l).top())
      if (top == blob) return net.layer(l).type();
  return "";
}

std::string NodeContext::ConstantBlob(const HostTensor& value, const std::string& suffix) {
  const std::string top = TempBlob(suffix);
  caffe::LayerParameter* layer = AddLayer("Parameter", {}, {top}, suffix);
  *layer->mutable_parameter_param()->mutable_shape() = ToBlobShape(value.shape);
  AddValueBlob(layer, value);
  return top;
}

std::string NodeContext::blob(int i) {
  DLC_REQUIRE(has_input(i), Where() << "needs input " << i);
  return graph_.Materialize(node_.input(i), Where());
}

namespace {
const onnx::AttributeProto* FindAttr(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}
}  // namespace

bool NodeContext::has_attr(const std::string& name) const { return FindAttr(node_, name); }

int64_t NodeContext::attr_int(const std::string& name, int64_t fallback) const {
  const auto* a = FindAttr(node_, name);
  if (!a) return fallback;
  ONNX_REQUIRE(*this, a->type() == onnx::AttributeProto::INT || a->has_i(),
               "attribute '" << name << "' must be an int");
  return a->i();
}

float NodeContext::attr_float(const std::string& name, float fallback) const {
  const auto* a = FindAttr(node_, name);
  if (!a) return fallback;
  ONNX_REQUIRE(*this, a->type() == onnx::AttributeProto::FLOAT || a->has_f(),
               "attribute '" << name << "' must be a float");
  return a->f();
}

std::string NodeContext::attr_string(const std::string& name, const std::string& fallback) const {
  const auto* a = FindAttr(node_, name);
  return a ? a->s() : fallback;
}

std::vector<int64_t> NodeContext::attr_ints(const std::string& name) const {
  const auto* a = FindAttr(node_, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
}

std::vector<float> NodeContext::attr_floats(const std::string& name) const {
  const auto* a = FindAttr(node_, name);
  return a ? std::vector<float>(a->floats().begin(), a->floats().end()) : std::vector<float>{};
}

HostTensor NodeContext::attr_tensor(const std::string& name) const {
  const auto* a = FindAttr(node_, name);
  ONNX_REQUIRE(*this, a && a->has_t(), "needs the tensor attribute '" << name << "'");
  return FromTensorProto(a->t(), graph_.model_dir(), Where() + "attribute '" + name + "'");
}

void NodeContext::CheckAttributes(const std::set<std::string>& known) const {
  for (const auto& a : node_.attribute())
    ONNX_REQUIRE(*this, known.count(a.name()),
                 "attribute '" << a.name() << "' is not supported by the importer");
}

void NodeContext::SetConstantOutput(int k, HostTensor value) {
  if (!has_output(k)) return;
  Value v;
  v.shape = value.shape;
  v.constant = true;
  v.tensor = std::move(value);
  graph_.Set(node_.output(k), std::move(v));
}

void NodeContext::SetTransposedInitializerOutput(int k, HostTensor value,
                                                 const std::string& initializer) {
  SetConstantOutput(k, std::move(value));
  if (has_output(k)) graph_.Get(node_.output(k), Where()).transposed_initializer = initializer;
}

void NodeContext::SetOutputToInput(int k, int i) {
  if (!has_output(k)) return;
  if (!input(i).constant) blob(i);
  Value v = input(i);
  graph_.Set(node_.output(k), std::move(v));
}

void NodeContext::SetOutputValue(int k, Value value) {
  if (has_output(k)) graph_.Set(node_.output(k), std::move(value));
}

void NodeContext::SetNamedValue(const std::string& name, Value value) {
  graph_.Set(name, std::move(value));
}

bool NodeContext::has_named_value(const std::string& name) const { return graph_.Has(name); }

const Value& NodeContext::named_value(const std::string& name) const {
  return graph_.Get(name, Where());
}

void NodeContext::SetOutput(int k, std::vector<int64_t> shape, const std::string& blob) {
  if (!has_output(k)) return;
  for (int64_t d : shape)
    ONNX_REQUIRE(*this, d > 0, "output '" << node_.output(k) << "' would have shape "
                                          << ShapeString(shape)
                                          << ": empty (zero-sized) tensors are not supported");
  Value v;
  v.shape = std::move(shape);
  v.blob = blob.empty() ? node_.output(k) : blob;
  bool any_run_time = false, all_integer = true;
  for (int i = 0; i < num_inputs(); ++i) {
    if (!has_input(i) || input(i).constant) continue;
    any_run_time = true;
    all_integer = all_integer && input(i).integer;
  }
  v.integer = any_run_time && all_integer;
  if (has_input(0) && input(0).has_runtime_dims() && input(0).shape == v.shape)
    v.runtime_dims = input(0).runtime_dims;
  graph_.Set(node_.output(k), std::move(v));
}

void NodeContext::ImportSubgraph(const onnx::GraphProto& subgraph) {
  for (const auto& init : subgraph.initializer()) {
    Value v;
    v.constant = true;
    v.tensor = FromTensorProto(init, graph_.model_dir(), Where() + "initializer '" + init.name() + "'");
    v.shape = v.tensor.shape;
    graph_.Set(init.name(), std::move(v));
  }
  for (int i = 0; i < subgraph.node_size(); ++i) ImportNode(graph_, subgraph.node(i), i);
}

Value& NodeContext::output_value(int k) { return graph_.Get(output_name(k), Where()); }

std::string NodeContext::MaterializeNamed(const std::string& name) {
  return graph_.Materialize(name, Where());
}

std::vector<bool> NodeContext::runtime_dims(int i) const {
  std::vector<bool> dims = input(i).runtime_dims;
  dims.resize(input(i).shape.size(), false);
  return dims;
}

std::vector<bool> NodeContext::BroadcastRuntimeDims(size_t rank) const {
  std::vector<bool> runtime(rank, false);
  for (int i = 0; i < num_inputs(); ++i) {
    if (!has_input(i)) continue;
    const std::vector<bool> r = runtime_dims(i);
    for (size_t d = 0; d < r.size() && d < rank; ++d)
      runtime[rank - 1 - d] = runtime[rank - 1 - d] || r[r.size() - 1 - d];
  }
  return runtime;
}

void NodeContext::SetRuntimeDims(int k, std::vector<bool> dims) {
  if (!has_output(k)) return;
  Value& v = graph_.Get(node_.output(k), Where());
  ONNX_REQUIRE(*this, dims.empty() || dims.size() == v.shape.size(),
               "internal: " << dims.size() << " run-time size flags for output '"
                            << node_.output(k) << "' of rank " << v.shape.size());
  v.runtime_dims = std::move(dims);
}

void NodeContext::MarkOutputInteger(int k, bool integer) {
  if (has_output(k)) graph_.Get(node_.output(k), Where()).integer = integer;
}

caffe::LayerParameter* NodeContext::AddLayer(const std::string& type,
                                             const std::vector<std::string>& bottoms,
                                             const std::vector<std::string>& tops,
                                             const std::string& suffix) {
  std::string base = node_.name().empty() ? node_.op_type() + "_" + std::to_string(index_)
                                          : node_.name();
  if (!suffix.empty()) base += "/" + suffix;
  caffe::LayerParameter* layer = graph_.net().add_layer();
  layer->set_name(graph_.UniqueLayerName(base));
  layer->set_type(type);
  for (const auto& b : bottoms) layer->add_bottom(b);
  for (const auto& t : tops) {
    layer->add_top(t);
    graph_.ClaimBlobName(t);
  }
  ++layers_added_;
  return layer;
}

std::string NodeContext::TempBlob(const std::string& suffix) {
  const std::string base = (has_output(0) ? node_.output(0) : node_.op_type()) + "/" + suffix;
  return graph_.UniqueBlobName(base);
}

void NodeContext::AddValueBlob(caffe::LayerParameter* layer, const HostTensor& value,
                               const std::vector<int64_t>& shape, const std::string& initializer,
                               bool learnable) {
  const std::vector<int64_t>& s = shape.empty() && value.shape.size() ? value.shape : shape;
  ONNX_REQUIRE(*this, ShapeCount(s) == value.count(),
               "a parameter of shape " << ShapeString(value.shape) << " cannot be used as shape "
                                       << ShapeString(s));
  caffe::BlobProto* proto = layer->add_blobs();
  *proto->mutable_shape() = ToBlobShape(s);
  for (double v : value.values) proto->add_data(static_cast<float>(v));
  caffe::ParamSpec* spec = layer->add_param();
  if (learnable && !initializer.empty()) {
    spec->set_name(initializer);  // shared by name where an initializer is used twice
  } else if (!learnable) {
    spec->set_lr_mult(0.f);
    spec->set_decay_mult(0.f);
  }
  // Where the initializer went (a learnable use wins over a fixed one).
  if (!initializer.empty()) {
    auto& where = graph_.parameters();
    if (learnable || !where.count(initializer))
      where[initializer] = {layer->name(), layer->blobs_size() - 1};
  }
}

void NodeContext::AddParamBlob(caffe::LayerParameter* layer, int input_index,
                               const std::vector<int64_t>& shape) {
  const Value& v = input(input_index);
  const HostTensor& t = constant(input_index);
  AddValueBlob(layer, t, shape.empty() ? v.shape : shape, v.initializer, is_trainable(input_index));
}

// ---- helpers ----

int NormalizeAxis(const NodeContext& ctx, int64_t axis, int rank) {
  // A scalar has no axis: every caller indexes the shape with the result.
  ONNX_REQUIRE(ctx, axis >= -rank && axis < rank,
               "axis " << axis << " is out of range for rank " << rank);
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

std::vector<int64_t> BroadcastShapes(const NodeContext& ctx, const std::vector<int64_t>& a,
                                     const std::vector<int64_t>& b) {
  const size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    ONNX_REQUIRE(ctx, da == db || da == 1 || db == 1,
                 "shapes " << ShapeString(a) << " and " << ShapeString(b)
                           << " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

caffe::BlobShape ToBlobShape(const std::vector<int64_t>& shape) {
  caffe::BlobShape s;
  for (int64_t d : shape) s.add_dim(d);
  return s;
}

}  // namespace onnx_import
}  // namespace dlcaffe
