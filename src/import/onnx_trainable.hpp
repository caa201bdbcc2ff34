// Which float initializers of an ONNX graph are trained parameters. ONNX
// does not say (PyTorch writes parameters and buffers alike as
// initializers), so a training import decides by the graph: an initializer
// is trained when a gradient can reach it from a graph output, through the
// inputs each op differentiates (a Where's branches, not its condition; a
// Gather's table, not its indices; nothing through a comparison or a Shape).
// A causal-mask buffer read only by Equal/Where is therefore a constant the
// importer folds, while a class token read by Expand/Concat is trained.
// Constants exporters fold into initializers of their own naming
// ("onnx::Add_12", "val_173": swin's attention mask built by torch.export)
// and initializers holding inf or NaN (masked_fill's -inf) are not trained.
// Buffers that do reach the output (rotary cos/sin tables) are trained
// unless the user freezes them (OnnxImportOptions::frozen_initializers).
#pragma once
#include <set>
#include <string>

#include "onnx/onnx_pb.h"

namespace dlcaffe {
namespace onnx_import {

std::set<std::string> TrainableInitializers(const onnx::GraphProto& graph);

}  // namespace onnx_import
}  // namespace dlcaffe
