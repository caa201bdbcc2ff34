// Parameters that torch.onnx.export's optimizer (the default since PyTorch
// 2.9) folded into constants, recovered for a training import. The file's
// graph signature lists every parameter (torch_export_signature.hpp), but the
// optimizer leaves some of them only as the constants it computed from them:
//   an nn.Linear weight W read by MatMul as W^T ("val_93"),
//   a tied weight stored under its other name ("lm_head.weight" for
//     "transformer.wte.weight"),
//   a broadcast of a parameter (ViT's class token expanded over the batch,
//     "expand"),
//   a gather of fixed positions from a table (GPT-2's and BERT's position
//     embeddings at positions 0..T-1, "embedding_1").
// Each node's metadata (onnx >= 1.16's NodeProto.metadata_props, read here
// as an unknown field where Debian's onnx lacks it) names its FX node, whose
// arguments name the parameters (%p_<path>), and the module scopes it ran in.
// From them the rewrite puts each parameter back as an initializer under its
// PyTorch name and the fold as a node computing the constant from it
// (Transpose, Expand, Gather), so that the import trains the parameter and
// saves it under its name. Values are checked: a fold whose constant is not
// what the rule says it is (a transpose, equal copies) is left alone.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"

namespace dlcaffe {
namespace onnx_import {

struct FoldRecovery {
  // One line per recovered parameter: "name (shape): how".
  std::vector<std::string> recovered;
  // Parameters of the signature that are still no initializer: they stay
  // frozen (constants), which the import says.
  std::vector<std::string> frozen;
  // Tables recovered from a gather of positions 0..rows-1: the file keeps
  // only those rows of PyTorch's table.
  std::map<std::string, int64_t> partial_rows;
  // Tied weights: a name the signature lists -> the parameter the graph
  // reads for it (GPT-2's transformer.wte.weight -> lm_head.weight).
  std::map<std::string, std::string> tied;
};

// Rewrites `graph` in place; `model_dir` for initializers with external data.
FoldRecovery RecoverFoldedParameters(onnx::GraphProto* graph, const std::string& model_dir);

}  // namespace onnx_import
}  // namespace dlcaffe
