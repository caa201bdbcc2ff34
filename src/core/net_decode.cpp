// Net::SetDecodeState: incremental decoding (decode_state.hpp) for every layer.
#include "dlcaffe/net.hpp"

namespace dlcaffe {

void Net::SetDecodeState(const DecodeState& state) {
  if (state.incremental) {
    DLC_REQUIRE(state.position >= 0 && state.capacity > 0 && state.position < state.capacity,
                "net '" << name_ << "': incremental decoding needs 0 <= position < capacity, got "
                        "position " << state.position << " and capacity " << state.capacity);
    DLC_REQUIRE(!follows_input_shapes() || resolver_decodes_positions_,
                "net '" << name_ << "' follows its inputs' shapes (an ONNX model with dynamic "
                        "dimensions) with positions folded from 0: it cannot decode "
                        "incrementally; import it for decoding (OnnxImportOptions::"
                        "incremental_decoding, as `dlcaffe generate` does)");
    for (size_t i = 0; i < layers_.size(); ++i)
      DLC_REQUIRE(layers_[i]->DecodesIncrementally(),
                  "net '" << name_ << "': layer '" << layer_names_[i] << "' ("
                          << layers_[i]->type() << ") mixes positions without a cache of the "
                          "earlier ones, so the net cannot decode incrementally; use the fused "
                          "Attention layer (or decode without a cache)");
  }
  for (const auto& layer : layers_) layer->SetDecodeState(state);
  decode_state_ = state;
}

}  // namespace dlcaffe
