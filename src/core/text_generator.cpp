// TextGenerator and SampleToken (text_generator.hpp).
#include "dlcaffe/text_generator.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "dlcaffe/error.hpp"

namespace dlcaffe {

int SampleToken(const std::vector<float>& logits, const SamplingOptions& options,
                std::mt19937_64& rng) {
  DLC_REQUIRE(!logits.empty(), "no logits to sample from");
  DLC_REQUIRE(std::isfinite(options.temperature) && options.temperature >= 0.f,
              "the temperature must be finite and >= 0, got " << options.temperature);
  DLC_REQUIRE(options.top_k >= 0, "top_k must be >= 0, got " << options.top_k);
  for (size_t i = 0; i < logits.size(); ++i)
    DLC_REQUIRE(!std::isnan(logits[i]), "the model gave a NaN logit for token " << i);
  const int n = static_cast<int>(logits.size());
  if (options.temperature == 0.f)
    return static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  // The candidates: every token, or the top_k most likely (ties by id).
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  const int k = options.top_k == 0 ? n : std::min(options.top_k, n);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  order.resize(k);
  const double top = logits[order[0]];
  std::vector<double> weights(k);
  for (int i = 0; i < k; ++i)
    weights[i] = std::exp((double(logits[order[i]]) - top) / options.temperature);
  std::discrete_distribution<int> pick(weights.begin(), weights.end());
  return order[pick(rng)];
}

TextGenerator::TextGenerator(Net& net, bool use_cache) : net_(net), use_cache_(use_cache) {
  DLC_REQUIRE(!net.input_blobs().empty() && !net.output_blobs().empty(),
              "net '" << net.name() << "': generation needs an input of token ids and an "
                      "output of logits");
  const Blob& input = *net.input_blobs()[0];
  net.SetDecodeState(DecodeState());
  net.Reshape();  // the output's shape for the input's, whatever ran before
  DLC_REQUIRE(input.num_axes() == 2 && input.shape(0) == 1 && input.shape(1) > 0,
              "net '" << net.name() << "': its first input must be token ids of shape (1, T) "
                      "(T: the longest context), got " << input.shape_string());
  context_ = input.shape(1);
  const Blob& output = *net.output_blobs()[0];
  DLC_REQUIRE(output.num_axes() == 3 && output.shape(0) == 1 && output.shape(1) == context_,
              "net '" << net.name() << "': its first output must be logits of shape (1, "
                      << context_ << ", V), got " << output.shape_string());
  vocabulary_ = output.shape(2);
}

TextGenerator::~TextGenerator() {
  // Leave the net as it was made: whole sequences, its input's length.
  try {
    net_.SetDecodeState(DecodeState());
    net_.input_blobs()[0]->Reshape({1, context_});
  } catch (...) {
  }
}

void TextGenerator::Reset() {
  history_.clear();
  cached_ = 0;
}

std::vector<float> TextGenerator::Run(const std::vector<int>& ids, int position) {
  Blob& input = *net_.input_blobs()[0];
  input.Reshape({1, static_cast<int>(ids.size())});
  input.WriteData(std::vector<float>(ids.begin(), ids.end()));
  DecodeState state;
  if (use_cache_) {
    state.incremental = true;
    state.position = position;
    state.capacity = context_;
  }
  net_.SetDecodeState(state);
  net_.ForwardNoLoss();
  const Blob& logits = *net_.output_blobs()[0];
  std::vector<float> last(vocabulary_);
  const size_t last_row = logits.count() / vocabulary_ - 1;
  net_.context().Read(logits.data(), last_row * vocabulary_ * sizeof(float),
                      vocabulary_ * sizeof(float), last.data());
  return last;
}

std::vector<float> TextGenerator::Feed(const std::vector<int>& ids) {
  DLC_REQUIRE(!ids.empty(), "nothing to feed the model");
  for (int id : ids)
    DLC_REQUIRE(id >= 0 && id < vocabulary_,
                "token id " << id << " is outside the model's vocabulary of " << vocabulary_);
  history_.insert(history_.end(), ids.begin(), ids.end());
  const int length = static_cast<int>(history_.size());
  if (!use_cache_) {  // the whole context again, its last positions if longer
    const int start = std::max(0, length - context_);
    return Run(std::vector<int>(history_.begin() + start, history_.end()), 0);
  }
  if (length > context_) {
    // Past the context: start again from its last half (positions from 0).
    const int keep = std::max(1, context_ / 2);
    history_.erase(history_.begin(), history_.end() - std::min(keep, length));
    cached_ = 0;
  }
  const std::vector<int> fresh(history_.begin() + cached_, history_.end());
  std::vector<float> logits = Run(fresh, cached_);
  cached_ = static_cast<int>(history_.size());
  return logits;
}

std::vector<int> TextGenerator::Generate(const std::vector<int>& prompt, int tokens,
                                         const SamplingOptions& options, std::mt19937_64& rng,
                                         const std::function<void(int)>& on_token) {
  DLC_REQUIRE(!prompt.empty(), "the prompt must hold at least one token");
  DLC_REQUIRE(tokens >= 0, "the number of tokens to generate must be >= 0, got " << tokens);
  Reset();
  std::vector<float> logits = Feed(prompt);
  std::vector<int> generated;
  for (int i = 0; i < tokens; ++i) {
    const int id = SampleToken(logits, options, rng);
    generated.push_back(id);
    if (on_token) on_token(id);
    if (i + 1 < tokens) logits = Feed({id});
  }
  return generated;
}

}  // namespace dlcaffe
