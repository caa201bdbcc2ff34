// OpenLanguageModel (language_model.hpp). It lives in import/ because it
// imports ONNX models itself: with the key/value cache and the context as
// the token input's length.
#include "dlcaffe/language_model.hpp"

#include <glog/logging.h>

#include "dlcaffe/onnx_import.hpp"

namespace dlcaffe {

std::unique_ptr<Net> OpenLanguageModel(const std::string& model, const std::string& weights,
                                       int context, bool kv_cache, Context& ctx) {
  if (!IsOnnxPath(model)) {
    DLC_REQUIRE(!weights.empty(), model << ": a deploy prototxt needs its weights (.caffemodel)");
    auto net = std::make_unique<Net>(model, caffe::TEST, ctx);
    net->CopyTrainedLayersFrom(weights);
    return net;
  }
  DLC_REQUIRE(context > 0, model << ": the context (prompt and tokens) must be at least 1 token, got "
                                 << context);
  const std::vector<OnnxGraphInput> inputs = OnnxGraphInputs(model);
  DLC_REQUIRE(!inputs.empty(), model << ": the model has no input for token ids");
  DLC_REQUIRE(!inputs[0].dynamic_axes.empty(),
              model << ": its token input '" << inputs[0].name << "' has a fixed length; export "
                       "it with the sequence axis dynamic (torch.onnx.export(..., "
                       "dynamic_shapes=...)) to generate from it");
  OnnxImportOptions options = OnnxImportOptionsFor(ctx.options(), false);
  options.incremental_decoding = kv_cache;
  options.input_shapes[inputs[0].name] = {1, context};
  OnnxModel imported = ImportOnnx(model, options);
  imported.net.mutable_state()->set_phase(caffe::TEST);
  auto net = std::make_unique<Net>(imported.net, ctx);
  if (!weights.empty()) net->CopyTrainedLayersFrom(weights);
  net->set_input_shape_resolver(OnnxInputShapeResolver(model, options), kv_cache);
  if (kv_cache)
    LOG(INFO) << model << ": imported for decoding with the key/value cache; "
              << imported.decode_position_values
              << " values computed from positions follow the decode position";
  return net;
}

}  // namespace dlcaffe
