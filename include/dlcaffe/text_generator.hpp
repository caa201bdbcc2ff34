// Sampling text from a language model's deploy net, one token after another
// (`dlcaffe generate`). The net's first input takes token ids (1 x T; T is
// the longest context it sees) and its first output gives logits (1 x T x V).
//
// With the key/value cache (Net::SetDecodeState) each new token runs one
// position through the net; without it every token reruns the whole context.
// Both give the same logits while the sequence fits the context; past it,
// the cached generator starts again from the last half of the context, and
// the uncached one slides a window of the context's length.
#pragma once
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "dlcaffe/net.hpp"

namespace dlcaffe {

struct SamplingOptions {
  // Logits are divided by it; 0 picks the most likely token.
  float temperature = 1.f;
  // Only the k most likely tokens are drawn from (0: all).
  int top_k = 0;
};

// Draws a token id from `logits` (one per vocabulary entry).
int SampleToken(const std::vector<float>& logits, const SamplingOptions& options,
                std::mt19937_64& rng);

class TextGenerator {
 public:
  TextGenerator(Net& net, bool use_cache);
  ~TextGenerator();

  // The positions the net sees at once (its input's length) and the size of
  // its vocabulary (its output's last axis).
  int context() const { return context_; }
  int vocabulary() const { return vocabulary_; }

  // Forgets the sequence so far.
  void Reset();
  // Appends `ids` to the sequence and returns the logits the net gives the
  // position after the last one.
  std::vector<float> Feed(const std::vector<int>& ids);
  // Feeds the prompt (at least one token), then samples `tokens` tokens,
  // calling `on_token` with each; returns them.
  std::vector<int> Generate(const std::vector<int>& prompt, int tokens,
                            const SamplingOptions& options, std::mt19937_64& rng,
                            const std::function<void(int)>& on_token = {});

 private:
  // Runs `ids` at positions [position, position + ids.size()); returns the
  // last position's logits.
  std::vector<float> Run(const std::vector<int>& ids, int position);

  Net& net_;
  bool use_cache_;
  int context_ = 0, vocabulary_ = 0;
  std::vector<int> history_;  // the tokens of the sequence so far
  int cached_ = 0;            // how many of them the key/value caches hold
};

}  // namespace dlcaffe
