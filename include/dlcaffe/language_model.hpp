// Opening a causal language model for generation (`dlcaffe generate`,
// Python's dlcaffe.TextGenerator.open): a deploy prototxt with its weights,
// or an .onnx export whose token input has a dynamic sequence axis.
//
// The .onnx model is imported at `context` tokens and follows its token
// input's length (Net::set_input_shape_resolver). With `kv_cache` it is
// imported for decoding (OnnxImportOptions::incremental_decoding): what it
// computes from positions runs on the device and follows the decode
// position, so TextGenerator runs each new token alone against the
// key/value caches; without it every token reruns the whole sequence.
#pragma once
#include <memory>
#include <string>

#include "dlcaffe/net.hpp"

namespace dlcaffe {

// Throws naming the file: a prototxt without weights, an .onnx model whose
// token input has a fixed length.
std::unique_ptr<Net> OpenLanguageModel(const std::string& model, const std::string& weights,
                                       int context, bool kv_cache, Context& ctx);

}  // namespace dlcaffe
