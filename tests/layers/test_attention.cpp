#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "util/error_of.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

// kWindows: (2, H, T, S) for a batch of 2 windows per image, as swin's
// shifted windows: batch item b adds mask item b % 2.
enum class MaskKind { kNone, kPlane, kPerBatch, kWindows };

struct Case {
  int B, H, T, S, dk, dv;
  bool causal;
  MaskKind mask;
  bool heads_in_last_axis;  // (B, T, H*D) with num_heads, else (B, H, T, D)
  bool sequence_first = false;  // with num_heads: (T, B, H*D)
  bool packed = false;          // with num_heads: Q, K, V side by side in one bottom
};

std::string Describe(const Case& c) {
  return "B" + std::to_string(c.B) + " H" + std::to_string(c.H) + " T" + std::to_string(c.T) +
         " S" + std::to_string(c.S) + " Dk" + std::to_string(c.dk) + " Dv" +
         std::to_string(c.dv) + (c.causal ? " causal" : "") +
         (c.mask == MaskKind::kPlane      ? " mask (T,S)"
          : c.mask == MaskKind::kPerBatch ? " mask (B,1,T,S)"
          : c.mask == MaskKind::kWindows  ? " mask (2,H,T,S)"
                                          : "") +
         (!c.heads_in_last_axis ? " (B,H,T,D)" : c.sequence_first ? " (T,B,H*D)" : " (B,T,H*D)") +
         (c.packed ? " packed" : "");
}

void PrintTo(const Case& c, std::ostream* os) { *os << Describe(c); }

std::vector<int> Shape(const Case& c, int rows, int d) {
  if (c.heads_in_last_axis && c.sequence_first) return {rows, c.B, c.H * d};
  if (c.heads_in_last_axis) return {c.B, rows, c.H * d};
  return {c.B, c.H, rows, d};
}

// Element (b, h, row, i) of a tensor in the case's layout.
size_t At(const Case& c, int rows, int d, int b, int h, int row, int i) {
  if (c.heads_in_last_axis && c.sequence_first) return ((size_t(row) * c.B + b) * c.H + h) * d + i;
  if (c.heads_in_last_axis) return ((size_t(b) * rows + row) * c.H + h) * d + i;
  return ((size_t(b) * c.H + h) * rows + row) * d + i;
}

std::string LayerText(const Case& c) {
  return "type: 'Attention' attention_param { causal: " + std::string(c.causal ? "true" : "false") +
         " num_heads: " + std::to_string(c.heads_in_last_axis ? c.H : 0) +
         (c.sequence_first ? " layout: SEQUENCE_FIRST" : "") +
         (c.packed ? " packed_qkv: true" : "") + " }";
}

// Q, K and V (rows x H*d each, in the case's layout) side by side per row.
std::vector<float> Pack(const std::vector<float>& q, const std::vector<float>& k,
                        const std::vector<float>& v, int width) {
  std::vector<float> packed;
  for (size_t row = 0; row * width < q.size(); ++row)
    for (const std::vector<float>* x : {&q, &k, &v})
      packed.insert(packed.end(), x->begin() + row * width, x->begin() + (row + 1) * width);
  return packed;
}

// A mask with a few -inf entries (never a whole row) and small values.
void FillMask(const Case& c, Blob* mask) {
  if (c.mask == MaskKind::kPlane) mask->Reshape({c.T, c.S});
  if (c.mask == MaskKind::kPerBatch) mask->Reshape({c.B, 1, c.T, c.S});
  if (c.mask == MaskKind::kWindows) mask->Reshape({2, c.H, c.T, c.S});
  FillUniform(mask, -1.f, 1.f, 99);
  std::vector<float> values = mask->ReadData();
  for (size_t i = 0; i < values.size(); ++i)
    if (i % 7 == 3 && (i % c.S) != 0) values[i] = -std::numeric_limits<float>::infinity();
  mask->WriteData(values);
}

// softmax(Q K^T / sqrt(Dk) + mask) V in double; a query that sees no key
// gives 0.
std::vector<double> Reference(const Case& c, const std::vector<float>& q,
                              const std::vector<float>& k, const std::vector<float>& v,
                              const std::vector<float>& mask) {
  std::vector<double> out(size_t(c.B) * c.H * c.T * c.dv, 0.0);
  const double scale = 1.0 / std::sqrt(double(c.dk));
  for (int b = 0; b < c.B; ++b)
    for (int h = 0; h < c.H; ++h)
      for (int t = 0; t < c.T; ++t) {
        std::vector<double> scores(c.S, -INFINITY);
        double top = -INFINITY;
        for (int s = 0; s < c.S; ++s) {
          if (c.causal && s > t + c.S - c.T) continue;
          double dot = 0;
          for (int i = 0; i < c.dk; ++i)
            dot += double(q[At(c, c.T, c.dk, b, h, t, i)]) * k[At(c, c.S, c.dk, b, h, s, i)];
          double m = 0;
          if (c.mask == MaskKind::kPlane) m = mask[size_t(t) * c.S + s];
          if (c.mask == MaskKind::kPerBatch) m = mask[(size_t(b) * c.T + t) * c.S + s];
          if (c.mask == MaskKind::kWindows)
            m = mask[((size_t(b % 2) * c.H + h) * c.T + t) * c.S + s];
          scores[s] = dot * scale + m;
          top = std::max(top, scores[s]);
        }
        if (top == -INFINITY) continue;
        double sum = 0;
        for (int s = 0; s < c.S; ++s) sum += std::exp(scores[s] - top);
        for (int s = 0; s < c.S; ++s) {
          const double p = std::exp(scores[s] - top) / sum;
          for (int i = 0; i < c.dv; ++i)
            out[At(c, c.T, c.dv, b, h, t, i)] += p * v[At(c, c.S, c.dv, b, h, s, i)];
        }
      }
  return out;
}

// The layer's bottoms: Q, K and V, or (packed) one blob of the three side by
// side; q, k, v hold the values either way.
struct Inputs {
  Blob q{TestContext()}, k{TestContext()}, v{TestContext()}, qkv{TestContext()},
      mask{TestContext()}, top{TestContext()};
  std::vector<Blob*> bottom;
  explicit Inputs(const Case& c) {
    q.Reshape(Shape(c, c.T, c.dk));
    k.Reshape(Shape(c, c.S, c.dk));
    v.Reshape(Shape(c, c.S, c.dv));
    FillGaussian(&q, 0.f, 1.f, 1);
    FillGaussian(&k, 0.f, 1.f, 2);
    FillGaussian(&v, 0.f, 1.f, 3);
    bottom = {&q, &k, &v};
    if (c.packed) {
      qkv.Reshape(Shape(c, c.T, 3 * c.dk));
      qkv.WriteData(Pack(q.ReadData(), k.ReadData(), v.ReadData(), c.H * c.dk));
      bottom = {&qkv};
    }
    if (c.mask != MaskKind::kNone) {
      FillMask(c, &mask);
      bottom.push_back(&mask);
    }
  }
};

}  // namespace

class AttentionTest : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionTest, ForwardMatchesReference) {
  const Case& c = GetParam();
  Inputs in(c);
  auto layer = MakeLayer(LayerText(c));
  layer->SetUp(in.bottom, {&in.top});
  ASSERT_EQ(in.top.shape(), Shape(c, c.T, c.dv));
  layer->Forward(in.bottom, {&in.top});
  const std::vector<double> expected =
      Reference(c, in.q.ReadData(), in.k.ReadData(), in.v.ReadData(),
                c.mask == MaskKind::kNone ? std::vector<float>() : in.mask.ReadData());
  const std::vector<float> out = in.top.ReadData();
  for (size_t i = 0; i < out.size(); ++i)
    ASSERT_NEAR(out[i], expected[i], 2e-5 * std::max(1.0, std::fabs(expected[i])))
        << Describe(c) << ", element " << i;
}

TEST_P(AttentionTest, GradientMatchesNumeric) {
  const Case& c = GetParam();
  Inputs in(c);
  auto layer = MakeLayer(LayerText(c));
  layer->SetUp(in.bottom, {&in.top});
  GradientCheckOptions options;
  options.max_checks_per_blob = 120;
  // A mask bottom takes its gradient too (a trained bias): summed over the
  // batch and heads for (T, S), over the heads for (B, 1, T, S), over the
  // images for (2, H, T, S).
  std::vector<int> checked = c.packed ? std::vector<int>{0} : std::vector<int>{0, 1, 2};
  if (c.mask != MaskKind::kNone) checked.push_back(int(checked.size()));
  CheckGradient(*layer, in.bottom, {&in.top}, checked, options);
}

INSTANTIATE_TEST_SUITE_P(
    OddShapes, AttentionTest,
    ::testing::Values(
        Case{2, 3, 7, 7, 5, 5, false, MaskKind::kNone, false},
        Case{1, 2, 13, 13, 16, 8, true, MaskKind::kNone, false},
        // Cross attention (S != T) with a (T, S) mask holding -inf entries.
        Case{2, 2, 5, 9, 3, 4, false, MaskKind::kPlane, false},
        // Causal with S > T: the queries are the last T positions.
        Case{2, 3, 3, 11, 8, 8, true, MaskKind::kPerBatch, false},
        Case{2, 2, 9, 9, 6, 6, true, MaskKind::kNone, true},
        // More rows than a work-group and more keys than a tile.
        Case{1, 1, 70, 70, 4, 4, true, MaskKind::kNone, false},
        Case{1, 2, 67, 45, 3, 5, false, MaskKind::kPlane, true},
        // Swin's windows: a (2, H, T, S) mask over a batch of 4.
        Case{4, 2, 6, 6, 5, 4, false, MaskKind::kWindows, false},
        // Causal with T > S: the first queries see no key and give 0.
        Case{1, 1, 5, 3, 4, 4, true, MaskKind::kNone, false},
        // nn.MultiheadAttention's order (T, B, H*D), separate and packed as
        // its input projection writes them; packed with a mask bottom.
        Case{2, 2, 9, 11, 6, 5, true, MaskKind::kNone, true, true},
        Case{3, 2, 6, 6, 5, 5, false, MaskKind::kNone, true, true, true},
        Case{2, 3, 7, 7, 4, 4, false, MaskKind::kPlane, true, false, true},
        Case{2, 2, 67, 67, 3, 3, true, MaskKind::kPerBatch, true, true, true}));

// A query that sees no key has output 0 and passes no gradient (no NaN).
TEST(Attention, QueriesWithoutKeysGiveZeroAndNoNaN) {
  const Case c{1, 1, 5, 3, 4, 4, true, MaskKind::kNone, false};
  Inputs in(c);
  auto layer = MakeLayer(LayerText(c));
  layer->SetUp(in.bottom, {&in.top});
  layer->Forward(in.bottom, {&in.top});
  const std::vector<float> out = in.top.ReadData();
  for (int t = 0; t < 2; ++t)  // t + S - T < 0
    for (int i = 0; i < c.dv; ++i) EXPECT_EQ(out[t * c.dv + i], 0.f) << "row " << t;
  in.top.SetDiff(1.f);
  layer->Backward({&in.top}, {true, true, true}, in.bottom);
  for (Blob* b : in.bottom)
    for (float g : b->ReadDiff()) ASSERT_TRUE(std::isfinite(g));
  for (int i = 0; i < 2 * c.dk; ++i) EXPECT_EQ(in.q.ReadDiff()[i], 0.f);
}

// Rows [first, first + n) of a (B, H, rows, d) or (B, rows, H*d) tensor.
void CopyRows(const Case& c, const std::vector<float>& all, int rows, int d, int first, int n,
              Blob* part) {
  part->Reshape(Shape(c, n, d));
  std::vector<float> values(part->count());
  for (int b = 0; b < c.B; ++b)
    for (int h = 0; h < c.H; ++h)
      for (int t = 0; t < n; ++t)
        for (int i = 0; i < d; ++i)
          values[At(c, n, d, b, h, t, i)] = all[At(c, rows, d, b, h, first + t, i)];
  part->WriteData(values);
}

// Incremental decoding: fed the positions in chunks (a prompt, then single
// tokens), the layer's key/value cache gives each chunk's rows what causal
// attention over the whole sequence gives them, in every layout.
TEST(Attention, KeyValueCacheGivesTheRowsOfTheWholeSequence) {
  for (const Case& c : {Case{2, 3, 9, 9, 5, 4, true, MaskKind::kNone, false},
                        Case{2, 3, 9, 9, 5, 4, true, MaskKind::kNone, true},
                        Case{2, 3, 9, 9, 4, 4, true, MaskKind::kNone, true, true, true}}) {
    SCOPED_TRACE(Describe(c));
    Inputs whole(c);
    auto full = MakeLayer(LayerText(c));
    full->SetUp(whole.bottom, {&whole.top});
    full->Forward(whole.bottom, {&whole.top});
    const std::vector<float> expected = whole.top.ReadData(), q = whole.q.ReadData(),
                             k = whole.k.ReadData(), v = whole.v.ReadData();

    auto cached = MakeLayer(LayerText(c));
    Blob q_part(TestContext()), k_part(TestContext()), v_part(TestContext()),
        qkv_part(TestContext()), out(TestContext());
    // The chunk's bottoms: Q, K, V, or the three packed.
    const auto parts = [&]() -> std::vector<Blob*> {
      if (!c.packed) return {&q_part, &k_part, &v_part};
      qkv_part.Reshape(Shape(c, q_part.shape(c.sequence_first ? 0 : 1), 3 * c.dk));
      qkv_part.WriteData(
          Pack(q_part.ReadData(), k_part.ReadData(), v_part.ReadData(), c.H * c.dk));
      return {&qkv_part};
    };
    DecodeState state;
    state.incremental = true;
    state.capacity = 11;
    for (const auto& [first, n] : std::vector<std::pair<int, int>>{{0, 4}, {4, 1}, {5, 3}, {8, 1}}) {
      CopyRows(c, q, c.T, c.dk, first, n, &q_part);
      CopyRows(c, k, c.S, c.dk, first, n, &k_part);
      CopyRows(c, v, c.S, c.dv, first, n, &v_part);
      const std::vector<Blob*> bottom = parts();
      state.position = first;
      cached->SetDecodeState(state);
      if (first == 0) cached->SetUp(bottom, {&out});
      cached->Reshape(bottom, {&out});
      ASSERT_EQ(out.shape(), Shape(c, n, c.dv));
      cached->Forward(bottom, {&out});
      const std::vector<float> got = out.ReadData();
      for (int b = 0; b < c.B; ++b)
        for (int h = 0; h < c.H; ++h)
          for (int t = 0; t < n; ++t)
            for (int i = 0; i < c.dv; ++i)
              ASSERT_NEAR(got[At(c, n, c.dv, b, h, t, i)],
                          expected[At(c, c.T, c.dv, b, h, first + t, i)], 1e-5)
                  << "position " << first + t << ", b " << b << ", h " << h << ", " << i;
    }
    // Past the capacity, skipping positions, or K and V of another length
    // than Q: errors naming the layer's reason.
    const auto reshape_error = [&](int position, int q_rows, int kv_rows) {
      q_part.Reshape(Shape(c, q_rows, c.dk));
      k_part.Reshape(Shape(c, kv_rows, c.dk));
      v_part.Reshape(Shape(c, kv_rows, c.dv));
      const std::vector<Blob*> bottom = parts();
      state.position = position;
      cached->SetDecodeState(state);
      return ErrorOf([&] { cached->Reshape(bottom, {&out}); });
    };
    EXPECT_NE(reshape_error(9, 3, 3).find("pass the key/value cache's capacity 11"),
              std::string::npos);
    EXPECT_NE(reshape_error(10, 1, 1).find("the cache holds 9 positions only"), std::string::npos);
    if (!c.packed) {  // packed, K and V are as long as Q
      EXPECT_NE(reshape_error(9, 1, 2).find("as many as the queries"), std::string::npos);
    }
    const std::vector<Blob*> bottom = parts();
    EXPECT_NE(ErrorOf([&] { cached->Backward({&out}, std::vector<bool>(bottom.size(), true),
                                             bottom); })
                  .find("incrementally"),
              std::string::npos);
  }
}

TEST(Attention, ShapesThatDoNotFitAreNamed) {
  Blob q(TestContext(), {2, 3, 4, 5}), k(TestContext(), {2, 3, 6, 4}),
      v(TestContext(), {2, 3, 6, 5}), top(TestContext());
  auto layer = MakeLayer("name: 'att' type: 'Attention'");
  const std::string what = ErrorOf([&] { layer->SetUp({&q, &k, &v}, {&top}); });
  EXPECT_NE(what.find("'att'"), std::string::npos) << what;
  EXPECT_NE(what.find("do not fit"), std::string::npos) << what;

  Blob k2(TestContext(), {2, 3, 6, 5}), mask(TestContext(), {4, 7});
  auto masked = MakeLayer("name: 'att' type: 'Attention'");
  const std::string mask_error =
      ErrorOf([&] { masked->SetUp({&q, &k2, &v, &mask}, {&top}); });
  EXPECT_NE(mask_error.find("the mask 4 7"), std::string::npos) << mask_error;
  // Mask items that do not divide the batch (2) into windows.
  Blob windows(TestContext(), {3, 1, 4, 6});
  auto windowed = MakeLayer("name: 'att' type: 'Attention'");
  const std::string windows_error =
      ErrorOf([&] { windowed->SetUp({&q, &k2, &v, &windows}, {&top}); });
  EXPECT_NE(windows_error.find("W dividing B 2"), std::string::npos) << windows_error;

  // Packed: a last axis that is not 3 * H * D, and bottoms that are not one
  // blob (and a mask).
  Blob qkv(TestContext(), {2, 5, 3 * 2 * 4 + 1});
  auto packed = MakeLayer(
      "name: 'att' type: 'Attention' attention_param { num_heads: 2 packed_qkv: true }");
  const std::string packed_error = ErrorOf([&] { packed->SetUp({&qkv}, {&top}); });
  EXPECT_NE(packed_error.find("must be (B, T, 3*H*D) with num_heads H 2"), std::string::npos)
      << packed_error;
  auto three = MakeLayer(
      "name: 'att' type: 'Attention' attention_param { num_heads: 2 packed_qkv: true }");
  const std::string count_error = ErrorOf([&] { three->SetUp({&q, &k, &v}, {&top}); });
  EXPECT_NE(count_error.find("1 or 2 bottoms, got 3"), std::string::npos) << count_error;
  auto headless = MakeLayer(
      "name: 'att' type: 'Attention' attention_param { layout: SEQUENCE_FIRST }");
  const std::string headless_error = ErrorOf([&] { headless->SetUp({&q, &k, &v}, {&top}); });
  EXPECT_NE(headless_error.find("need num_heads"), std::string::npos) << headless_error;
}

}  // namespace test
}  // namespace dlcaffe
