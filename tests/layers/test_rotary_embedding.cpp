#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>

#include "util/gradient_checker.hpp"
#include "util/in_place_check.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

struct Case {
  std::vector<int> shape;  // ... x T x D
  int rotary_dim;          // 0: D
  bool interleaved;
  int offset;
  float base;
};

std::string RopeText(const Case& c) {
  return "type: 'RotaryEmbedding' rotary_embedding_param { rotary_dim: " +
         std::to_string(c.rotary_dim) + " base: " + std::to_string(c.base) +
         " interleaved: " + (c.interleaved ? "true" : "false") +
         " position_offset: " + std::to_string(c.offset) + " }";
}

std::string Describe(const Case& c) {
  std::string s = "shape";
  for (int d : c.shape) s += " " + std::to_string(d);
  return s + ", " + RopeText(c);
}

void PrintTo(const Case& c, std::ostream* os) { *os << Describe(c); }

// Hugging Face's apply_rotary_pos_emb in double: pair i of row r, at
// position r % T + offset, turned by position * base^(-2i / R).
std::vector<double> ReferenceRope(const std::vector<float>& x, const Case& c,
                                  std::vector<double>* positions) {
  const int d = c.shape.back(), t = c.shape[c.shape.size() - 2];
  const int r_dim = c.rotary_dim == 0 ? d : c.rotary_dim, half = r_dim / 2;
  std::vector<double> y(x.begin(), x.end());
  positions->assign(x.size(), 0.0);
  for (size_t row = 0; row * d < x.size(); ++row) {
    const double pos = double(row % t) + c.offset;
    for (int i = 0; i < d; ++i) (*positions)[row * d + i] = pos;
    for (int i = 0; i < half; ++i) {
      const double angle = pos * std::pow(double(c.base), -2.0 * i / r_dim);
      const size_t a = row * d + (c.interleaved ? 2 * i : i);
      const size_t b = c.interleaved ? a + 1 : a + half;
      y[a] = x[a] * std::cos(angle) - x[b] * std::sin(angle);
      y[b] = x[b] * std::cos(angle) + x[a] * std::sin(angle);
    }
  }
  return y;
}

}  // namespace

class RotaryEmbeddingTest : public ::testing::TestWithParam<Case> {};

TEST_P(RotaryEmbeddingTest, ForwardMatchesReference) {
  const Case& c = GetParam();
  Blob bottom(TestContext(), c.shape), top(TestContext());
  FillGaussian(&bottom, 0.f, 1.f, 7);
  auto layer = MakeLayer(RopeText(c));
  layer->SetUp({&bottom}, {&top});
  ASSERT_EQ(top.shape(), bottom.shape());
  EXPECT_TRUE(layer->blobs().empty());
  layer->Forward({&bottom}, {&top});
  const std::vector<float> x = bottom.ReadData(), y = top.ReadData();
  std::vector<double> positions;
  const std::vector<double> expected = ReferenceRope(x, c, &positions);
  // A float angle is off by about 1e-7 of itself, so the bound grows with
  // the position (PoCL: at most 9e-8 per position, 1.9e-4 at 4000).
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(y[i], expected[i], 2e-6 + 5e-7 * positions[i])
        << Describe(c) << ", element " << i;
}

TEST_P(RotaryEmbeddingTest, GradientMatchesNumeric) {
  const Case& c = GetParam();
  SCOPED_TRACE(Describe(c));
  Blob bottom(TestContext(), c.shape), top(TestContext());
  FillGaussian(&bottom, 0.f, 1.f, 11);
  auto layer = MakeLayer(RopeText(c));
  layer->SetUp({&bottom}, {&top});
  CheckGradient(*layer, {&bottom}, {&top});
}

TEST_P(RotaryEmbeddingTest, BackwardIsTheInverseRotation) {
  const Case& c = GetParam();
  Blob bottom(TestContext(), c.shape), top(TestContext());
  FillGaussian(&bottom, 0.f, 1.f, 13);
  auto layer = MakeLayer(RopeText(c));
  layer->SetUp({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  top.WriteDiff(top.ReadData());
  layer->Backward({&top}, {true}, {&bottom});
  const std::vector<float> x = bottom.ReadData(), back = bottom.ReadDiff();
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_NEAR(back[i], x[i], 1e-5) << Describe(c) << ", element " << i;
}

INSTANTIATE_TEST_SUITE_P(
    OddShapes, RotaryEmbeddingTest,
    ::testing::Values(Case{{2, 3, 5, 8}, 0, false, 0, 10000.f},
                      Case{{2, 3, 5, 8}, 0, true, 0, 10000.f},
                      // Partial rotary (GPT-NeoX's rotary_pct): 4 features pass.
                      Case{{2, 7, 10}, 6, false, 0, 10000.f},
                      Case{{2, 7, 10}, 6, true, 3, 10000.f},
                      // Odd D, a later chunk of a sequence, another base.
                      Case{{3, 13, 9}, 4, false, 37, 500.f},
                      Case{{2, 1, 130}, 0, false, 5, 10000.f},
                      Case{{13, 2}, 0, true, 0, 10000.f},
                      // Far into a sequence (a KV cache's next token).
                      Case{{2, 3, 1, 14}, 0, false, 4000, 10000.f}));

// The pairing, by hand, for x = (1, 2, 3, 4) at position 1 (base 10000, D 4:
// angles 1 and 0.01): rotate-half pairs (0, 2) and (1, 3), interleaved
// (0, 1) and (2, 3). Position 0 is the identity.
TEST(RotaryEmbedding, PairsAsHuggingFaceAndGptJ) {
  const double c1 = std::cos(1.0), s1 = std::sin(1.0), c2 = std::cos(0.01), s2 = std::sin(0.01);
  const std::vector<double> half{1 * c1 - 3 * s1, 2 * c2 - 4 * s2, 3 * c1 + 1 * s1,
                                 4 * c2 + 2 * s2};
  const std::vector<double> interleaved{1 * c1 - 2 * s1, 2 * c1 + 1 * s1, 3 * c2 - 4 * s2,
                                        4 * c2 + 3 * s2};
  for (bool inter : {false, true}) {
    Blob bottom(TestContext(), {1, 2, 4}), top(TestContext());
    bottom.WriteData(std::vector<float>{1, 2, 3, 4, 1, 2, 3, 4});
    auto layer = MakeLayer(std::string("type: 'RotaryEmbedding' rotary_embedding_param { ") +
                           (inter ? "interleaved: true" : "") + " }");
    layer->SetUp({&bottom}, {&top});
    layer->Forward({&bottom}, {&top});
    const std::vector<float> y = top.ReadData();
    const std::vector<double>& expected = inter ? interleaved : half;
    for (int i = 0; i < 4; ++i) {
      EXPECT_FLOAT_EQ(y[i], float(i + 1)) << "position 0, " << i;
      EXPECT_NEAR(y[4 + i], expected[i], 1e-6) << (inter ? "interleaved, " : "half, ") << i;
    }
  }
}

// While a net decodes incrementally, the decode position adds to
// position_offset: the same as a layer whose offset holds both.
TEST(RotaryEmbedding, DecodeStatePositionAddsToTheOffset) {
  Blob bottom(TestContext(), {2, 3, 1, 8}), top(TestContext()), expected(TestContext());
  FillGaussian(&bottom, 0.f, 1.f, 17);
  auto decoding = MakeLayer("type: 'RotaryEmbedding' rotary_embedding_param { position_offset: 2 }");
  auto shifted = MakeLayer("type: 'RotaryEmbedding' rotary_embedding_param { position_offset: 39 }");
  decoding->SetUp({&bottom}, {&top});
  shifted->SetUp({&bottom}, {&expected});
  DecodeState state;
  state.incremental = true;
  state.position = 37;
  state.capacity = 64;
  decoding->SetDecodeState(state);
  decoding->Reshape({&bottom}, {&top});
  decoding->Forward({&bottom}, {&top});
  shifted->Forward({&bottom}, {&expected});
  EXPECT_EQ(top.ReadData(), expected.ReadData());
  decoding->SetDecodeState(DecodeState());  // off again: position 2 only
  decoding->Forward({&bottom}, {&top});
  EXPECT_NE(top.ReadData(), expected.ReadData());
}

TEST(RotaryEmbedding, InPlaceMatchesOutOfPlace) {
  for (const char* text : {"type: 'RotaryEmbedding' rotary_embedding_param { rotary_dim: 6 }",
                           "type: 'RotaryEmbedding' rotary_embedding_param { interleaved: true "
                           "position_offset: 9 }"}) {
    ExpectInPlaceMatchesOutOfPlace(text, {2, 5, 10},
                                   [](Blob* x) { FillGaussian(x, 0.f, 2.f, 5); });
  }
}

TEST(RotaryEmbedding, BadParametersAndShapesAreErrors) {
  const std::vector<std::tuple<std::vector<int>, std::string, std::string>> cases = {
      {{2, 3, 8}, "rotary_dim: 5", "rotary_dim 5 must be even and at most the last axis, 8"},
      {{2, 3, 8}, "rotary_dim: 10", "rotary_dim 10 must be even and at most the last axis, 8"},
      {{2, 3, 7}, "", "rotary_dim 7 (0: all of the last axis) must be even"},
      {{8}, "", "needs an input of at least 2 axes (... x T x D), got 8 (8)"},
      {{2, 3, 8}, "base: 0", "base must be finite and > 0"},
      {{2, 3, 8}, "position_offset: 4000000000", "position_offset 4000000000 is too large"},
  };
  for (const auto& c : cases) {
    Blob x(TestContext(), std::get<0>(c)), y(TestContext());
    try {
      MakeLayer("type: 'RotaryEmbedding' rotary_embedding_param { " + std::get<1>(c) + " }")
          ->SetUp({&x}, {&y});
      ADD_FAILURE() << std::get<1>(c) << " accepted";
    } catch (const Error& e) {
      const std::string error = e.what();
      EXPECT_NE(error.find("layer 'test_layer' (RotaryEmbedding)"), std::string::npos) << error;
      EXPECT_NE(error.find(std::get<2>(c)), std::string::npos) << std::get<1>(c) << ": " << error;
    }
  }
}

}  // namespace test
}  // namespace dlcaffe
