// Which float initializers of an ONNX graph are trained parameters. ONNX
// does not say (PyTorch writes parameters and buffers alike as
// initializers), so a training import decides by the graph: an initializer
// is trained when a gradient can reach it from a graph output, through the
// inputs each op differentiates (a Where's branches, not its condition; a
// Gather's table, not its indices; nothing through a comparison or a Shape).
// A causal-mask buffer read only by Equal/Where is therefore a constant the
// importer folds, while a class token read by Expand/Concat is trained.
// Where torch.export's graph signature is in the file (the dynamo exporter's
// metadata, src/import/torch_export_signature.hpp), exactly its parameters
// are trained: its buffers and the constants it folded ("unsqueeze_2",
// "triu", "val_173") are not. Else constants exporters fold into
// initializers of their own naming ("onnx::Add_12", "val_173") are not
// trained, except where they are a MatMul/Gemm/Conv weight (TorchScript's
// folded nn.Linear weight "onnx::MatMul_12"), and buffers that do reach the
// output (rotary cos/sin tables) are trained unless the user freezes them
// (OnnxImportOptions::frozen_initializers). Initializers holding inf or NaN
// (masked_fill's -inf) are never trained (onnx_importer.cpp).
#pragma once
#include <set>
#include <string>

#include "onnx/onnx_pb.h"

namespace dlcaffe {
namespace onnx_import {

std::set<std::string> TrainableInitializers(const onnx::GraphProto& graph);

// An inference import keeps every float initializer a named blob (a weight
// file may fill it by name), except those torch.export's signature says are
// not parameters (its buffers and folded constants, such as the attention
// scale GPT-2's export multiplies Q and K by): constants, folded and fused
// like any other. Empty without a signature.
std::set<std::string> InferenceConstants(const onnx::GraphProto& graph);

}  // namespace onnx_import
}  // namespace dlcaffe
