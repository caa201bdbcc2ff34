// What torch.export (PyTorch's dynamo-based ONNX exporter) says about a
// graph's initializers. That exporter stores the ExportedProgram's graph
// signature as text in GraphProto.metadata_props (onnx >= 1.16), one line a
// placeholder:
//   p_blocks_0_ln_1_weight: PARAMETER target='blocks.0.ln_1.weight'
//   b_causal_mask: BUFFER target='causal_mask' persistent=True
//   c_lifted_tensor_0: CONSTANT_TENSOR target='lifted_tensor_0'
// The targets are the names the initializers carry, so this is the one
// place an ONNX file tells a trained parameter from a buffer.
#pragma once
#include <map>
#include <set>
#include <string>

#include "onnx/onnx_pb.h"

namespace dlcaffe {
namespace onnx_import {

struct TorchExportSignature {
  bool present = false;                 // the graph carries a signature
  std::set<std::string> parameters;     // PARAMETER targets
  std::set<std::string> non_trained;    // BUFFER and CONSTANT_TENSOR targets
  // The FX placeholder of each PARAMETER ("p_blocks_0_ln_1_weight") and its
  // target ("blocks.0.ln_1.weight"): FX nodes name parameters by the former.
  std::map<std::string, std::string> parameter_of_placeholder;
};

// The graph's metadata_props, read whether or not the onnx library we build
// against knows the field (it is field 16; older ones keep it unknown).
std::map<std::string, std::string> GraphMetadata(const onnx::GraphProto& graph);
// A node's metadata_props (field 9 since onnx 1.16; the dynamo exporter
// writes "namespace", "pkg.torch.onnx.fx_node", "pkg.torch.onnx.name_scopes").
std::map<std::string, std::string> NodeMetadata(const onnx::NodeProto& node);

TorchExportSignature ReadTorchExportSignature(const onnx::GraphProto& graph);

}  // namespace onnx_import
}  // namespace dlcaffe
