// TextGenerator (dlcaffe generate): the key/value cache gives the logits of
// rerunning the whole context, on small decoders with random weights, one
// with learned positions and heads side by side, one with rotary positions
// and (B, H, T, D) heads; and SampleToken draws as its options say.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "dlcaffe/text_generator.hpp"
#include "util/error_of.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

constexpr int kVocabulary = 11, kWidth = 12, kHeads = 3, kContext = 24;

std::string Linear(const std::string& name, const std::string& bottom, int width) {
  return "layer { name: '" + name + "' type: 'InnerProduct' bottom: '" + bottom + "' top: '" +
         name + "' inner_product_param { num_output: " + std::to_string(width) +
         " axis: 2 weight_filler { type: 'gaussian' std: 0.3 } bias_filler { type: 'gaussian' "
         "std: 0.1 } } }\n";
}

// Q or K of block `b` as (1, H, T, D), turned by RoPE.
std::string RotaryHeads(const std::string& b, const std::string& x, bool rotate) {
  const std::string heads = b + x + "_heads", permuted = b + x + "_bhtd";
  std::string text = "layer { name: '" + heads + "' type: 'Reshape' bottom: '" + b + x +
                     "' top: '" + heads + "' reshape_param { shape { dim: 0 dim: 0 dim: " +
                     std::to_string(kHeads) + " dim: -1 } } }\n" + "layer { name: '" + permuted +
                     "' type: 'Permute' bottom: '" + heads + "' top: '" + permuted +
                     "' permute_param { order: 0 order: 2 order: 1 order: 3 } }\n";
  if (rotate)
    text += "layer { name: '" + b + x + "_rope' type: 'RotaryEmbedding' bottom: '" + permuted +
            "' top: '" + permuted + "' }\n";
  return text;
}

// A two-block causal decoder: tokens (1, kContext) -> logits (1, kContext, V).
std::string Decoder(bool rotary) {
  std::string text = "name: 'tiny_decoder'\n"
                     "layer { name: 'tokens' type: 'Input' top: 'tokens' input_param { shape { "
                     "dim: 1 dim: " + std::to_string(kContext) + " } } }\n"
                     "layer { name: 'tok' type: 'Embed' bottom: 'tokens' top: 'x0' embed_param { "
                     "num_output: " + std::to_string(kWidth) + " input_dim: " +
                     std::to_string(kVocabulary) +
                     " bias_term: false weight_filler { type: 'gaussian' std: 1 } } }\n";
  if (!rotary)
    text += "layer { name: 'pos' type: 'PositionEmbedding' bottom: 'x0' top: 'x0' "
            "position_embedding_param { max_positions: " + std::to_string(kContext) +
            " weight_filler { type: 'gaussian' std: 1 } } }\n";
  std::string x = "x0";
  for (int i = 0; i < 2; ++i) {
    const std::string b = "b" + std::to_string(i) + "_";
    text += "layer { name: '" + b + "ln' type: 'LayerNorm' bottom: '" + x + "' top: '" + b +
            "ln' }\n" + Linear(b + "qkv", b + "ln", 3 * kWidth) +
            "layer { name: '" + b + "split' type: 'Slice' bottom: '" + b + "qkv' top: '" + b +
            "q' top: '" + b + "k' top: '" + b + "v' slice_param { axis: 2 slice_point: " +
            std::to_string(kWidth) + " slice_point: " + std::to_string(2 * kWidth) + " } }\n";
    std::string att_bottoms = "bottom: '" + b + "q' bottom: '" + b + "k' bottom: '" + b + "v' ";
    std::string att_param = "attention_param { causal: true num_heads: " +
                            std::to_string(kHeads) + " }";
    std::string att_top = b + "att";
    if (rotary) {
      text += RotaryHeads(b, "q", true) + RotaryHeads(b, "k", true) + RotaryHeads(b, "v", false);
      att_bottoms = "bottom: '" + b + "q_bhtd' bottom: '" + b + "k_bhtd' bottom: '" + b +
                    "v_bhtd' ";
      att_param = "attention_param { causal: true }";
      att_top = b + "att_bhtd";
    }
    text += "layer { name: '" + att_top + "' type: 'Attention' " + att_bottoms + "top: '" +
            att_top + "' " + att_param + " }\n";
    if (rotary)
      text += "layer { name: '" + b + "att_bthd' type: 'Permute' bottom: '" + att_top +
              "' top: '" + b + "att_bthd' permute_param { order: 0 order: 2 order: 1 order: 3 "
              "} }\nlayer { name: '" + b + "att' type: 'Reshape' bottom: '" + b +
              "att_bthd' top: '" + b + "att' reshape_param { shape { dim: 0 dim: 0 dim: -1 } "
              "} }\n";
    text += Linear(b + "proj", b + "att", kWidth) + "layer { name: '" + b +
            "res' type: 'Eltwise' bottom: '" + x + "' bottom: '" + b + "proj' top: '" + b +
            "res' }\n";
    x = b + "res";
  }
  return text + Linear("logits", x, kVocabulary);
}

std::vector<int> RandomTokens(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<int> ids(n);
  for (int& id : ids) id = static_cast<int>(rng() % kVocabulary);
  return ids;
}

}  // namespace

TEST(TextGenerator, KeyValueCacheGivesTheLogitsOfTheWholeContext) {
  for (bool rotary : {false, true}) {
    SCOPED_TRACE(rotary ? "rotary positions, (B, H, T, D) heads" : "learned positions");
    Net net(NetFromText(Decoder(rotary), caffe::TEST), TestContext());
    const std::vector<int> tokens = RandomTokens(kContext, rotary ? 5 : 3);
    std::vector<std::vector<float>> uncached;
    {
      TextGenerator whole(net, false);
      ASSERT_EQ(whole.context(), kContext);
      ASSERT_EQ(whole.vocabulary(), kVocabulary);
      for (int id : tokens) uncached.push_back(whole.Feed({id}));
    }
    TextGenerator cached(net, true);
    // A prompt of 5 tokens, then one at a time.
    std::vector<std::vector<float>> got{cached.Feed({tokens.begin(), tokens.begin() + 5})};
    for (int t = 5; t < kContext; ++t) got.push_back(cached.Feed({tokens[t]}));
    double largest = 0;
    for (int t = 4; t < kContext; ++t) {
      const std::vector<float>& want = uncached[t];
      const std::vector<float>& have = got[t - 4];
      for (int v = 0; v < kVocabulary; ++v) {
        largest = std::max(largest, std::fabs(double(want[v])));
        ASSERT_NEAR(have[v], want[v], 1e-4 * std::max(1.0, std::fabs(double(want[v]))))
            << "position " << t << ", token " << v;
      }
    }
    EXPECT_GT(largest, 0.5);  // the logits are not all near zero
  }
}

// Greedy decoding picks the same tokens with and without the cache; past the
// context the cached generator starts again and still runs.
TEST(TextGenerator, GreedyGenerationIsTheSameWithAndWithoutTheCache) {
  Net net(NetFromText(Decoder(false), caffe::TEST), TestContext());
  SamplingOptions greedy;
  greedy.temperature = 0.f;
  std::mt19937_64 rng_a(1), rng_b(1);
  const std::vector<int> prompt = RandomTokens(3, 9);
  std::vector<int> a, b;
  {
    TextGenerator whole(net, false);
    a = whole.Generate(prompt, kContext - 3, greedy, rng_a);
  }
  {
    TextGenerator cached(net, true);
    b = cached.Generate(prompt, kContext - 3, greedy, rng_b);
    EXPECT_EQ(cached.Generate(prompt, 2 * kContext, greedy, rng_b).size(), 2u * kContext);
  }
  EXPECT_EQ(a, b);
  // The net is left as it was made.
  EXPECT_EQ(net.input_blobs()[0]->shape(), std::vector<int>({1, kContext}));
  EXPECT_FALSE(net.decode_state().incremental);
}

TEST(TextGenerator, NetsThatCannotDecodeIncrementallyAreNamed) {
  const std::string text =
      "name: 'unfused' layer { name: 'x' type: 'Input' top: 'x' input_param { shape { dim: 1 "
      "dim: 4 dim: 4 } } }\n"
      "layer { name: 'scores' type: 'MatMul' bottom: 'x' bottom: 'x' top: 'scores' "
      "matmul_param { transpose_b: true } }\n";
  Net net(NetFromText(text, caffe::TEST), TestContext());
  DecodeState state;
  state.incremental = true;
  state.capacity = 4;
  const std::string what = ErrorOf([&] { net.SetDecodeState(state); });
  EXPECT_NE(what.find("layer 'scores' (MatMul)"), std::string::npos) << what;
  state.position = 4;
  EXPECT_NE(ErrorOf([&] { net.SetDecodeState(state); }).find("position < capacity"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { TextGenerator g(net, true); }).find("token ids of shape (1, T)"),
            std::string::npos);
}

TEST(SampleToken, FollowsTemperatureAndTopK) {
  std::mt19937_64 rng(7);
  const std::vector<float> logits{0.f, std::log(3.f), -1.f, std::log(3.f) - 0.5f};
  SamplingOptions options;
  options.temperature = 0.f;
  EXPECT_EQ(SampleToken(logits, options, rng), 1);
  options.temperature = 5.f;
  options.top_k = 1;
  for (int i = 0; i < 20; ++i) EXPECT_EQ(SampleToken(logits, options, rng), 1);
  // Temperature 1 over the top 2 (tokens 1 and 3): p(1) = 3 / (3 + 3e^-0.5).
  options.temperature = 1.f;
  options.top_k = 2;
  int ones = 0;
  const int draws = 20000;
  for (int i = 0; i < draws; ++i) {
    const int id = SampleToken(logits, options, rng);
    ASSERT_TRUE(id == 1 || id == 3) << id;
    ones += id == 1;
  }
  const double p1 = 1.0 / (1.0 + std::exp(-0.5));
  EXPECT_NEAR(double(ones) / draws, p1, 4 * std::sqrt(p1 * (1 - p1) / draws));
  // Temperature 2 over all: p(0) / p(2) = e^(1/2).
  options.temperature = 2.f;
  options.top_k = 0;
  int zeros = 0, twos = 0;
  for (int i = 0; i < draws; ++i) {
    const int id = SampleToken(logits, options, rng);
    zeros += id == 0;
    twos += id == 2;
  }
  EXPECT_NEAR(double(zeros) / twos, std::exp(0.5), 0.15);
  options.temperature = -1.f;
  EXPECT_NE(ErrorOf([&] { SampleToken(logits, options, rng); }).find("temperature"),
            std::string::npos);
}

}  // namespace test
}  // namespace dlcaffe
