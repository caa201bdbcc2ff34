// ONNX models in: an .onnx file becomes a dlcaffe NetParameter (an Input
// layer per graph input, ordinary dlcaffe layers, the weights in the layers'
// blobs), so that a Net can be built from it, or it can be written out as a
// prototxt and a .caffemodel (tools/convert_onnx).
//
// Blob names are the ONNX tensor names. A description has fixed shapes: the
// graph's inputs get theirs from the model, `input_shapes` or, for dynamic
// dimensions, `dynamic_dimension_value`, and the shape arithmetic exporters
// write (Shape, Gather, Concat, Cast, ...) is evaluated at import time. A Net
// built from an .onnx path follows its input shapes by importing again at
// new ones (OnnxInputShapeResolver, Net::set_input_shape_resolver).
#pragma once
#include "dlcaffe/run_options.hpp"
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dlcaffe/caffe.pb.h"

namespace dlcaffe {

struct OnnxImportOptions {
  // false: inference (BatchNormalization uses its stored statistics, Dropout
  // is dropped). true: for training (BatchNormalization uses batch
  // statistics, Dropout is the identity too, so that a gradient check is
  // deterministic; use the prototxt's Dropout layer for real training).
  bool training = false;
  // Recognise the subgraphs exporters spell out op by op (LayerNorm, GELU,
  // SiLU, HardSwish) and run each as one layer.
  bool fuse_patterns = true;
  // Fixed shapes for graph inputs whose dimensions are symbolic (or to
  // override the stored ones).
  std::map<std::string, std::vector<int>> input_shapes;
  // The value of every dynamic input dimension (a dim_param, or none set)
  // that input_shapes does not fix; 0 refuses such inputs, naming them.
  int dynamic_dimension_value = 0;
  // Graph inputs whose values are fixed at import time, read from
  // TensorProto files (by input name): what a static-shape framework needs
  // for inputs that are really weights or shapes (ONNX's node tests feed
  // Conv weights, Reshape shapes and Gather indices as inputs).
  std::map<std::string, std::string> constant_input_files;
  // Initializers that a training import keeps fixed although a gradient
  // reaches them: buffers such as rotary cos/sin tables (ONNX does not tell
  // buffers from parameters; see src/import/onnx_trainable.hpp).
  std::set<std::string> frozen_initializers;
  // Where the caller knows the parameters (a training test's gradient
  // files name them): exactly these initializers are trained, instead of
  // those the analysis finds.
  std::optional<std::set<std::string>> trained_initializers;
  // A causal language model imported for decoding with the key/value cache
  // (Net::SetDecodeState, `dlcaffe generate`): what the model computes from
  // the positions of its tokens (position ids, rotary tables) runs on the
  // device from a Positions layer, which follows the decode position,
  // instead of being folded for positions from 0
  // (src/import/onnx_decode_positions.hpp). Needs a token input with a
  // dynamic sequence axis. Inference imports only.
  bool incremental_decoding = false;
};

// Where an ONNX initializer ended up: blob `blob_index` of layer `layer`.
// The values are the initializer's in the same order (the shapes may differ,
// e.g. a PRelu slope of shape C x 1 x 1 is a PReLU blob of shape C).
struct OnnxParameterSource {
  std::string layer;
  int blob_index = 0;
};

// Points each imported parameter at the layer blob that now holds it (found
// by the ParamSpec name the importer gave it), after the graph passes'
// fusions moved blobs into other layers.
void RelocateParameters(const caffe::NetParameter& net,
                        std::map<std::string, OnnxParameterSource>* parameters);

struct OnnxModel {
  caffe::NetParameter net;           // layers with their weights in blobs
  std::vector<std::string> inputs;   // graph inputs (blob names), in order
  std::vector<std::string> outputs;  // graph outputs (blob names), in order
  // Initializers that became layer blobs, by initializer name.
  std::map<std::string, OnnxParameterSource> parameters;
  int opset = 0;
  std::vector<std::string> applied_fusions;  // one entry per fused subgraph
  // Graph inputs imported with dynamic_dimension_value for a dimension.
  std::vector<std::string> dynamic_inputs;
  // A training import of torch.onnx.export's default (optimized) file:
  // parameters recovered from the constants its optimizer folded them into
  // (one line each: name, shape, how), those that stay frozen, and tables
  // of which the file keeps only rows 0..N-1 (a gather of positions).
  std::vector<std::string> recovered_parameters;
  std::vector<std::string> frozen_parameters;
  std::map<std::string, int64_t> partial_tables;
  // Tied weights: each other name of a parameter -> the parameter's name.
  std::map<std::string, std::string> tied_parameters;
  // An incremental_decoding import: how many values the model computes from
  // its positions were put on the device (0: none, or no arange over the
  // token axis was found).
  int decode_position_values = 0;
};

// Reads and converts `path`. Throws dlcaffe::Error naming the file, and the
// node and its op type where one is at fault (unsupported op or attribute,
// an opset outside 9..21, a shape that cannot be folded, missing external
// data, a truncated or corrupt file).
OnnxModel ImportOnnx(const std::string& path, const OnnxImportOptions& options = {});

// Whether `path` names an ONNX model (by its extension), for tools that take
// either a prototxt or an .onnx file.
bool IsOnnxPath(const std::string& path);

// A NetParameter for `path`: an .onnx model imported (its weights in the
// layers' blobs) or a prototxt read and upgraded. `training` as in
// OnnxImportOptions; `input_shapes` fixes an .onnx model's input shapes
// (dynamic dimensions need them).
// `options` decide the pattern fusions (OnnxImportOptionsFor).
caffe::NetParameter ReadNetOrOnnx(const std::string& path, const RunOptions& options,
                                  bool training = false,
                                  const std::map<std::string, std::vector<int>>& input_shapes = {});

// Input shapes as the tools take them: "name:d0,d1,...[;name:...]".
std::map<std::string, std::vector<int>> ParseInputShapes(const std::string& text);

// The options ReadNetOrOnnx imports with: `training`, and the pattern
// fusions unless the run options turn off graph_passes or fusion.
OnnxImportOptions OnnxImportOptionsFor(const RunOptions& options, bool training);

// A Net::InputShapeResolver for the model at `path`: ImportOnnx with
// `options` at the given input shapes (a new set of shapes costs one import,
// file read included).
std::function<caffe::NetParameter(const std::map<std::string, std::vector<int>>&)>
OnnxInputShapeResolver(const std::string& path, const OnnxImportOptions& options);

// The graph inputs of the model at `path` that are not initializers, in
// order: what ONNX's backend tests feed input_0.pb, input_1.pb, ... to
// (whatever names the files' tensors carry).
std::vector<std::string> OnnxGraphInputNames(const std::string& path);

// The same inputs with the axes the file leaves dynamic (a dim_param, or no
// size), read without importing the model.
struct OnnxGraphInput {
  std::string name;
  std::vector<int> dynamic_axes;
};
std::vector<OnnxGraphInput> OnnxGraphInputs(const std::string& path);

// An ONNX TensorProto file (.pb) as floats, e.g. a backend test's
// input_0.pb. `name` receives the tensor's name.
std::vector<float> ReadOnnxTensorFile(const std::string& path, std::vector<int>* shape,
                                      std::string* name = nullptr);

// Writes floats as an ONNX TensorProto file (onnx_test_runner --dump_dir).
void WriteOnnxTensorFile(const std::string& path, const std::string& name,
                         const std::vector<int>& shape, const std::vector<float>& values);

}  // namespace dlcaffe
