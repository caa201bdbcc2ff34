// Incremental decoding: a language model generating one token after another
// runs only the new positions through the net, while the layers that look at
// earlier positions keep what they need of them (Attention its key/value
// cache) and the layers that depend on absolute positions shift by
// `position` (PositionEmbedding, RotaryEmbedding). Net::SetDecodeState sets
// it on every layer.
#pragma once

namespace dlcaffe {

struct DecodeState {
  // Off (the default): every pass sees whole sequences from position 0.
  bool incremental = false;
  // The absolute position of the inputs' first row.
  int position = 0;
  // How many positions the key/value caches hold: position + the inputs'
  // length never exceeds it. Changing it empties the caches.
  int capacity = 0;
};

inline bool operator==(const DecodeState& a, const DecodeState& b) {
  return a.incremental == b.incremental && a.position == b.position && a.capacity == b.capacity;
}

}  // namespace dlcaffe
