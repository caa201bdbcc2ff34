// ImportOnnx: reads the model, checks its opset, turns initializers and
// graph inputs into values, runs each node's op handler in graph order,
// then the pattern fusions and the in-place rewrite (src/passes/).
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

#include <glog/logging.h>

#include "dlcaffe/io.hpp"
#include "dlcaffe/net.hpp"
#include "dlcaffe/net_file_readers.hpp"
#include "dlcaffe/onnx_import.hpp"
#include "import/onnx_decode_positions.hpp"
#include "import/onnx_graph.hpp"
#include "import/onnx_trainable.hpp"
#include "import/torch_export_folds.hpp"
#include "passes/net_pass.hpp"

namespace dlcaffe {

namespace {
using namespace onnx_import;

constexpr int kMinOpset = 9, kMaxOpset = 21;

onnx::ModelProto ReadModel(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DLC_REQUIRE(in, path << ": cannot open the ONNX model");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  const std::string data = bytes.str();
  DLC_REQUIRE(!data.empty(), path << ": the file is empty, not an ONNX model");
  onnx::ModelProto model;
  DLC_REQUIRE(model.ParseFromString(data),
              path << ": not a valid ONNX model (the file is truncated or corrupt: it does not "
                      "parse as an ONNX ModelProto)");
  DLC_REQUIRE(model.has_graph() && model.has_ir_version(),
              path << ": not a valid ONNX model (no graph or IR version; the file is truncated "
                      "or not an ONNX model)");
  return model;
}

int DefaultOpset(const std::string& path, const onnx::ModelProto& model) {
  int opset = -1;
  for (const auto& id : model.opset_import())
    if (id.domain().empty() || id.domain() == "ai.onnx") opset = static_cast<int>(id.version());
  DLC_REQUIRE(opset >= 0, path << ": the model imports no version of the default ONNX opset (models of other "
                             "domains only are not supported)");
  DLC_REQUIRE(opset >= kMinOpset && opset <= kMaxOpset,
              path << ": opset " << opset << " is outside the range the importer supports ("
                   << kMinOpset << " to " << kMaxOpset << ")");
  return opset;
}

// Integer graph inputs (token ids, positions, masks) come in at run time,
// held as floats: exact up to 2^24, far beyond any vocabulary.
bool IsIntegerInputType(int elem) {
  switch (elem) {
    case onnx::TensorProto::INT64: case onnx::TensorProto::INT32: case onnx::TensorProto::INT16:
    case onnx::TensorProto::INT8: case onnx::TensorProto::UINT8: case onnx::TensorProto::UINT16:
    case onnx::TensorProto::UINT32: case onnx::TensorProto::BOOL:
      return true;
    default:
      return false;
  }
}

std::vector<int64_t> InputShape(const std::string& path, const onnx::ValueInfoProto& input,
                                const OnnxImportOptions& options, bool* dynamic) {
  DLC_REQUIRE(input.type().has_tensor_type(),
              path << ": graph input '" << input.name()
                   << "' is not a tensor (sequence, map and optional inputs are not supported)");
  const auto& tensor = input.type().tensor_type();
  const int elem = tensor.elem_type();
  DLC_REQUIRE(elem == onnx::TensorProto::FLOAT || elem == onnx::TensorProto::UNDEFINED ||
                  IsIntegerInputType(elem),
              path << ": graph input '" << input.name() << "' has element type "
                   << ElementTypeName(elem)
                   << "; the importer takes float inputs and integer ones (token ids, "
                      "positions, masks)");
  auto given = options.input_shapes.find(input.name());
  if (given != options.input_shapes.end())
    return std::vector<int64_t>(given->second.begin(), given->second.end());
  DLC_REQUIRE(tensor.has_shape(), path << ": graph input '" << input.name()
                                       << "' has no shape; give it one (--input_shape)");
  std::vector<int64_t> shape;
  for (const auto& d : tensor.shape().dim()) {
    if (!(d.has_dim_value() && d.dim_value() > 0) && options.dynamic_dimension_value > 0) {
      *dynamic = true;
      shape.push_back(options.dynamic_dimension_value);
      continue;
    }
    DLC_REQUIRE(d.has_dim_value() && d.dim_value() > 0,
                path << ": graph input '" << input.name() << "' has a dynamic dimension "
                     << (d.has_dim_param() ? "'" + d.dim_param() + "'" : std::string("(unnamed)"))
                     << "; give the input a fixed shape (--input_shape of convert_onnx, dlcaffe "
                        "bench or tune), or build the Net from the .onnx file, which follows "
                        "its input blobs' shapes");
    shape.push_back(d.dim_value());
  }
  return shape;
}

}  // namespace

bool IsOnnxPath(const std::string& path) {
  return path.size() > 5 && path.compare(path.size() - 5, 5, ".onnx") == 0;
}

void RelocateParameters(const caffe::NetParameter& net,
                        std::map<std::string, OnnxParameterSource>* parameters) {
  for (const auto& layer : net.layer())
    for (int j = 0; j < layer.param_size(); ++j) {
      auto it = parameters->find(layer.param(j).name());
      if (layer.param(j).has_name() && it != parameters->end()) it->second = {layer.name(), j};
    }
}

OnnxModel ImportOnnx(const std::string& path, const OnnxImportOptions& options) {
  onnx::ModelProto model = ReadModel(path);
  const int opset = DefaultOpset(path, model);
  Graph graph(path, options, opset);
  graph.set_producer(model.producer_name(), model.producer_version());
  OnnxModel result;
  result.opset = opset;
  if (options.training) {
    // torch.onnx.export's optimizer folds some parameters into constants:
    // put them back under their names, so that they train.
    FoldRecovery recovery = RecoverFoldedParameters(model.mutable_graph(), graph.model_dir());
    for (const auto& line : recovery.recovered) LOG(INFO) << path << ": parameter " << line;
    if (!recovery.frozen.empty()) {
      std::string names;
      for (const auto& name : recovery.frozen) names += (names.empty() ? "" : ", ") + name;
      LOG(WARNING) << path << ": the exporter folded " << recovery.frozen.size()
                   << " parameter(s) into constants the import cannot trace back: " << names
                   << ". They stay frozen (not trained); export with torch.onnx.export(..., "
                      "optimize=False) to keep every parameter.";
    }
    result.recovered_parameters = std::move(recovery.recovered);
    result.frozen_parameters = std::move(recovery.frozen);
    result.partial_tables = std::move(recovery.partial_rows);
    result.tied_parameters = std::move(recovery.tied);
  }
  const onnx::GraphProto& g = model.graph();
  std::set<std::string> trainable;
  if (options.training)
    trainable = options.trained_initializers ? *options.trained_initializers : TrainableInitializers(g);
  // A tied weight asked for by its other name trains as the one stored.
  for (const auto& [alias, parameter] : result.tied_parameters)
    if (trainable.count(alias)) trainable.insert(parameter);
  std::set<std::string> initializer_names;
  for (const auto& init : g.initializer()) {
    Value v;
    v.constant = true;
    v.tensor = FromTensorProto(init, graph.model_dir(), path + ": initializer '" + init.name() + "'");
    v.shape = v.tensor.shape;
    v.initializer = init.name();
    initializer_names.insert(init.name());
    // An infinite or NaN value (masked_fill's -inf) is a constant: no
    // training step could move it.
    for (double x : v.tensor.values)
      if (!std::isfinite(x)) {
        trainable.erase(init.name());
        break;
      }
    graph.Set(init.name(), std::move(v));
  }
  for (const auto& name : options.frozen_initializers) {
    DLC_REQUIRE(initializer_names.count(name),
                path << ": '" << name << "' (to freeze) is not an initializer of the model");
    trainable.erase(name);
  }
  graph.SetTrainable(std::move(trainable));
  if (!options.training) graph.SetInferenceConstants(InferenceConstants(g));
  // Every tensor name of the file is taken before any blob gets a name of
  // the importer's making ("bitwise_and" + "_1" must not be a later node's
  // output).
  for (const auto& node : g.node())
    for (const auto& out : node.output())
      if (!out.empty()) graph.ClaimBlobName(out);

  // One Input layer for the graph inputs that are not initializers.
  caffe::LayerParameter input_layer;
  std::string defaulted;  // inputs with dynamic_dimension_value dimensions, for messages
  for (const auto& input : g.input()) {
    if (initializer_names.count(input.name())) continue;
    auto fixed = options.constant_input_files.find(input.name());
    if (fixed != options.constant_input_files.end()) {
      Value v;
      v.constant = true;
      v.tensor = ReinterpretBits(FromTensorProto(ReadTensorProtoFile(fixed->second),
                                                 graph.model_dir(), fixed->second),
                                 input.type().tensor_type().elem_type());
      v.shape = v.tensor.shape;
      graph.Set(input.name(), std::move(v));
      continue;
    }
    Value v;
    bool dynamic = false;
    v.shape = InputShape(path, input, options, &dynamic);
    if (dynamic) {
      result.dynamic_inputs.push_back(input.name());
      std::string dims;
      for (int64_t d : v.shape) dims += (dims.empty() ? "" : "x") + std::to_string(d);
      defaulted += (defaulted.empty() ? "'" : ", '") + input.name() + "' " + dims;
    }
    v.integer = IsIntegerInputType(input.type().tensor_type().elem_type());
    v.blob = input.name();
    input_layer.add_top(input.name());
    *input_layer.mutable_input_param()->add_shape() = ToBlobShape(v.shape);
    graph.ClaimBlobName(input.name());
    result.inputs.push_back(input.name());
    graph.Set(input.name(), std::move(v));
  }
  for (const auto& name : options.input_shapes)
    DLC_REQUIRE(std::find(result.inputs.begin(), result.inputs.end(), name.first) !=
                    result.inputs.end(),
                path << ": a shape is given for '" << name.first
                     << "', which is not a graph input");
  if (input_layer.top_size() > 0) {
    input_layer.set_name(graph.UniqueLayerName("input"));
    input_layer.set_type("Input");
    *graph.net().add_layer() = input_layer;
  }

  std::unique_ptr<DecodePositions> positions;
  if (options.incremental_decoding) {
    DLC_REQUIRE(!options.training, path << ": a training import cannot be one for decoding");
    DLC_REQUIRE(!result.inputs.empty(), path << ": importing for decoding needs a token input");
    for (const auto& input : g.input())
      if (input.name() == result.inputs[0]) {
        std::vector<int64_t> shape;
        for (const auto& d : graph.Get(input.name(), path).shape) shape.push_back(d);
        positions = std::make_unique<DecodePositions>(graph, input, shape);
      }
  }

  try {
    for (int i = 0; i < g.node_size(); ++i) {
      const onnx::NodeProto& original = g.node(i);
      const onnx::NodeProto& node = positions ? positions->Prepare(original, i) : original;
      ImportNode(graph, node, i);
      if (positions) positions->Record(original, i);
    }
    if (positions) result.decode_position_values = positions->run_time_values();

    for (const auto& output : g.output()) {
      const std::string where = path + ": graph output: ";
      result.outputs.push_back(graph.Materialize(output.name(), where));
    }
  } catch (const Error& e) {
    // Shapes the caller did not choose: say which.
    if (defaulted.empty()) throw;
    std::string what = e.what();
    if (what.rfind(path + ": ", 0) == 0) what = what.substr(path.size() + 2);
    throw Error(path + ": imported with its dynamic dimensions at " +
                std::to_string(options.dynamic_dimension_value) + " (" + defaulted + "): " + what +
                " (import it at shapes it takes: OnnxImportOptions::input_shapes, then "
                "Net::set_input_shape_resolver)");
  }

  graph.net().set_name(g.name().empty() ? "onnx_model" : g.name());
  result.parameters = graph.parameters();
  result.net.Swap(&graph.net());
  // The graph rewrites: fused subgraphs, then in-place layers (which the
  // Net's own fusions look for), keeping graph inputs and outputs.
  std::set<std::string> keep(result.inputs.begin(), result.inputs.end());
  keep.insert(result.outputs.begin(), result.outputs.end());
  if (options.fuse_patterns) result.applied_fusions = RunFusionPasses(&result.net, keep);
  MakeLayersInPlace(&result.net, keep);
  // Parameters whose layers a fusion replaced follow them.
  RelocateParameters(result.net, &result.parameters);
  LOG(INFO) << "Imported " << path << " (opset " << opset << "): " << result.net.layer_size()
            << " layers" << (options.training ? ", for training" : "")
            << (options.incremental_decoding
                    ? ", for decoding (" + std::to_string(result.decode_position_values) +
                          " values from positions on the device)"
                    : std::string())
            << (result.applied_fusions.empty()
                    ? std::string()
                    : ", " + std::to_string(result.applied_fusions.size()) + " fused subgraphs");
  return result;
}

OnnxImportOptions OnnxImportOptionsFor(const RunOptions& run, bool training) {
  OnnxImportOptions options;
  options.training = training;
  // graph_passes off keeps exporters' subgraphs op by op (to measure the
  // fusions); fusion off, which turns off the Net's fusions, turns off these
  // too.
  options.fuse_patterns = run.fusion && run.graph_passes != RunOptions::Choice::kOff;
  return options;
}

std::function<caffe::NetParameter(const std::map<std::string, std::vector<int>>&)>
OnnxInputShapeResolver(const std::string& path, const OnnxImportOptions& options) {
  return [path, options](const std::map<std::string, std::vector<int>>& shapes) {
    OnnxImportOptions at_shapes = options;
    for (const auto& [name, shape] : shapes) at_shapes.input_shapes[name] = shape;
    return ImportOnnx(path, at_shapes).net;
  };
}

caffe::NetParameter ReadNetOrOnnx(const std::string& path, const RunOptions& run,
                                  bool training,
                                  const std::map<std::string, std::vector<int>>& input_shapes) {
  caffe::NetParameter param;
  if (IsOnnxPath(path)) {
    OnnxImportOptions options = OnnxImportOptionsFor(run, training);
    options.input_shapes = input_shapes;
    param = ImportOnnx(path, options).net;
  } else {
    DLC_REQUIRE(input_shapes.empty(), path << ": input shapes are given (--input_shape) for a "
                                              "prototxt, whose Input layers fix them");
    param = ReadCaffeNet(path);
  }
  return param;
}

}  // namespace dlcaffe
