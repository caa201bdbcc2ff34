#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <random>

#include "dlcaffe/error.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"
#include "util/test_depth.hpp"

namespace dlcaffe {
namespace test {

namespace {

const char* const kOps[] = {"ADD", "SUB", "MUL", "DIV", "POW", "MAX", "MIN"};

std::string Proto(const std::string& op, const std::string& extra = "") {
  return "type: 'BinaryOp' binary_op_param { operation: " + op + " " + extra + " }";
}

double Forward(const std::string& op, double a, double b) {
  if (op == "ADD") return a + b;
  if (op == "SUB") return a - b;
  if (op == "MUL") return a * b;
  if (op == "DIV") return a / b;
  if (op == "POW") return std::pow(a, b);
  if (op == "MAX") return std::max(a, b);
  return std::min(a, b);
}

// d y / d a and d y / d b (MAX/MIN: half each on a tie).
double GradA(const std::string& op, double a, double b) {
  if (op == "ADD" || op == "SUB") return 1;
  if (op == "MUL") return b;
  if (op == "DIV") return 1 / b;
  if (op == "POW") return b == 0 ? 0 : b * std::pow(a, b - 1);
  if (a == b) return 0.5;
  return (op == "MAX" ? a > b : a < b) ? 1 : 0;
}
double GradB(const std::string& op, double a, double b) {
  if (op == "ADD") return 1;
  if (op == "SUB") return -1;
  if (op == "MUL") return a;
  if (op == "DIV") return -a / (b * b);
  if (op == "POW") return a == 0 && b >= 0 ? 0 : std::pow(a, b) * std::log(a);
  if (a == b) return 0.5;
  return (op == "MAX" ? b > a : b < a) ? 1 : 0;
}

struct Reference {
  std::vector<int> shape;
  std::vector<double> y, da, db, da_magnitude, db_magnitude;
};

// numpy broadcasting by plain loops: each top element reads a and b at its
// coordinates, 0 along their axes of size 1.
Reference ReferenceBinary(const std::string& op, const std::vector<float>& a,
                          const std::vector<int>& a_shape, const std::vector<float>& b,
                          const std::vector<int>& b_shape, const std::vector<float>& dy) {
  const int rank = static_cast<int>(std::max(a_shape.size(), b_shape.size()));
  auto aligned = [rank](const std::vector<int>& s) {
    std::vector<int> x(rank - s.size(), 1);
    x.insert(x.end(), s.begin(), s.end());
    return x;
  };
  const std::vector<int> as = aligned(a_shape), bs = aligned(b_shape);
  Reference r;
  size_t count = 1;
  for (int d = 0; d < rank; ++d) {
    r.shape.push_back(std::max(as[d], bs[d]));
    count *= r.shape.back();
  }
  r.da.assign(a.size(), 0.0);
  r.db.assign(b.size(), 0.0);
  r.da_magnitude.assign(a.size(), 0.0);
  r.db_magnitude.assign(b.size(), 0.0);
  std::vector<int> c(rank, 0);
  for (size_t i = 0; i < count; ++i) {
    size_t ia = 0, ib = 0;
    for (int d = 0; d < rank; ++d) {
      ia = ia * as[d] + (as[d] == 1 ? 0 : c[d]);
      ib = ib * bs[d] + (bs[d] == 1 ? 0 : c[d]);
    }
    const double va = a[ia], vb = b[ib];
    r.y.push_back(Forward(op, va, vb));
    if (!dy.empty()) {
      const double ga = dy[i] * GradA(op, va, vb), gb = dy[i] * GradB(op, va, vb);
      r.da[ia] += ga;
      r.db[ib] += gb;
      r.da_magnitude[ia] += std::fabs(ga);
      r.db_magnitude[ib] += std::fabs(gb);
    }
    for (int d = rank - 1; d >= 0; --d) {
      if (++c[d] < r.shape[d]) break;
      c[d] = 0;
    }
  }
  return r;
}

// Values in each operation's domain: POW's base positive (for ln), DIV's
// divisor and POW's exponent away from 0.
void FillOperand(Blob* blob, const std::string& op, bool is_b, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(0.5f, 1.5f);
  std::vector<float> v(blob->count());
  for (float& x : v) {
    const float sign = rng() % 2 ? 1.f : -1.f;
    x = (op == "POW" && !is_b) ? uniform(rng) : sign * uniform(rng);
  }
  blob->WriteData(v);
}

void ExpectNearAll(const std::vector<float>& got, const std::vector<double>& expected,
                   const std::vector<double>& magnitude, double tolerance, const char* what) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const double scale = 1 + (magnitude.empty() ? std::fabs(expected[i]) : magnitude[i]);
    ASSERT_NEAR(got[i], expected[i], tolerance * scale) << what << " " << i;
  }
}

// Forward, and backward for both bottoms, against the reference.
void ExpectBinaryMatches(const std::string& op, const std::vector<int>& a_shape,
                         const std::vector<int>& b_shape, unsigned seed) {
  SCOPED_TRACE(op + " " + ::testing::PrintToString(a_shape) + " with " +
               ::testing::PrintToString(b_shape));
  Blob a(TestContext(), a_shape), b(TestContext(), b_shape), y(TestContext());
  FillOperand(&a, op, false, seed);
  FillOperand(&b, op, true, seed + 1000);
  auto layer = MakeLayer(Proto(op));
  layer->SetUp({&a, &b}, {&y});
  std::vector<float> dy(y.count());
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.125f * float(i % 13) - 0.75f;
  const Reference r = ReferenceBinary(op, a.ReadData(), a_shape, b.ReadData(), b_shape, dy);
  ASSERT_EQ(y.shape(), r.shape);
  layer->Forward({&a, &b}, {&y});
  ExpectNearAll(y.ReadData(), r.y, {}, 2e-6, "top");
  y.WriteDiff(dy);
  a.SetDiff(100.f);
  b.SetDiff(100.f);
  layer->Backward({&y}, {true, true}, {&a, &b});
  ExpectNearAll(a.ReadDiff(), r.da, r.da_magnitude, 2e-6, "bottom 0 diff");
  ExpectNearAll(b.ReadDiff(), r.db, r.db_magnitude, 2e-6, "bottom 1 diff");
}

struct ShapePair {
  std::vector<int> a, b;
};

// The importer's common cases (same shape, per channel in both spellings,
// squeeze-excitation gates, scalars, a trailing bias) in both directions,
// and general broadcasts of ranks 1 to 5.
const std::vector<ShapePair> kShapePairs = {
    {{3, 13}, {3, 13}},
    {{2, 3, 5, 7}, {1, 3, 1, 1}},
    {{1, 3, 1, 1}, {2, 3, 5, 7}},
    {{2, 3, 5, 7}, {3, 1, 1}},
    {{2, 3, 5, 7}, {2, 3, 1, 1}},
    {{2, 3, 1, 1}, {2, 3, 5, 7}},
    {{2, 3, 5, 7}, {}},
    {{}, {2, 3, 5, 7}},
    {{4, 5, 13}, {13}},
    {{13}, {1}},
    {{1}, {13}},
    {{2, 1, 5}, {3, 1}},            // both broadcast
    {{2, 3, 1, 7}, {1, 3, 5, 1}},
    {{2, 3, 5, 7}, {2, 1, 5, 1}},   // broadcast inside the run
    {{3, 1, 7}, {2, 3, 5, 7}},
    {{3, 1, 4, 1, 2}, {1, 2, 1, 3, 1}},
    {{1, 1}, {1}},
};
const int kFirstGeneralPair = 11;  // where the general broadcasts start

// Which operands of `p` broadcast: 1 for b, 2 for a, 3 for both, 0 neither.
int Broadcasts(const ShapePair& p) {
  const size_t rank = std::max(p.a.size(), p.b.size());
  size_t a_count = 1, b_count = 1, count = 1;
  for (size_t d = 0; d < rank; ++d) {
    const int a = d < rank - p.a.size() ? 1 : p.a[d - (rank - p.a.size())];
    const int b = d < rank - p.b.size() ? 1 : p.b[d - (rank - p.b.size())];
    a_count *= a;
    b_count *= b;
    count *= std::max(a, b);
  }
  return (b_count < count ? 1 : 0) + (a_count < count ? 2 : 0);
}

// Where `op` stands in kOps.
int OpIndex(const std::string& op) {
  for (int i = 0; i < int(std::size(kOps)); ++i)
    if (op == kOps[i]) return i;
  return 0;
}

// Every test runs in both shapes of the generated kernels. Each operation's
// kernels for each broadcast path are programs of their own, per shape:
// CI runs a sample of each sweep of operations and shape pairs
// (InThisShape), DLCAFFE_NIGHTLY=1 all of it in both shapes.
class BinaryOpTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { SetTestOption("kernel_shape", GetParam()); }
  void TearDown() override { ResetTestOption("kernel_shape"); }
  int Shape() const { return std::string(GetParam()) == "gpu" ? 1 : 0; }
  // Whether operation `op` (its index in kOps) runs on `p` in this kernel
  // shape. In CI each operation takes each kind of pair (the same shape, b
  // broadcast, a broadcast, both) in one kernel shape, by the parity of
  // op + Broadcasts(p): so each operation meets both kernel shapes, and each
  // kind of pair both shapes under several operations. (The common cases of
  // a kind share an operation's kernels in a shape: one program build each.)
  bool InThisShape(int op, const ShapePair& p) const {
    return InSample(op + Broadcasts(p), 2, Shape());
  }
};

}  // namespace

// In CI each operation meets every common case in one kernel shape
// (InThisShape), and every third general broadcast: those have kernels of
// their own, by rank and reduced axes.
TEST_P(BinaryOpTest, ForwardAndBackwardMatchReference) {
  unsigned seed = 1;
  for (int o = 0; o < int(std::size(kOps)); ++o)
    for (int p = 0; p < int(kShapePairs.size()); ++p, ++seed)
      if (InThisShape(o, kShapePairs[p]) && (p < kFirstGeneralPair || InSample(o + p, 3)))
        ExpectBinaryMatches(kOps[o], kShapePairs[p].a, kShapePairs[p].b, seed);
}

// Large enough for the per-channel gradient sums to split channels into
// parts (both kernel shapes) and for the CPU shape's vector loops. (In CI
// each operation on each pair in one kernel shape, InThisShape: each pair
// meets both shapes.)
TEST_P(BinaryOpTest, LargeInputs) {
  const std::vector<ShapePair> pairs = {{{4, 16, 33, 35}, {1, 16, 1, 1}},
                                        {{}, {4, 16, 33, 35}},
                                        {{4, 16, 33, 35}, {4, 16, 1, 1}},
                                        {{4, 16, 33, 35}, {4, 1, 33, 1}}};
  unsigned seed = 300;
  for (const char* op : {"ADD", "MUL", "DIV", "MAX"})
    for (const ShapePair& p : pairs) {
      if (InThisShape(OpIndex(op), p)) ExpectBinaryMatches(op, p.a, p.b, seed);
      ++seed;
    }
}

TEST_P(BinaryOpTest, GradientMatchesNumeric) {
  const std::vector<ShapePair> pairs = {{{2, 3, 5}, {2, 3, 5}},
                                        {{2, 3, 5}, {3, 1}},
                                        {{}, {3, 5}},
                                        {{2, 1, 5}, {3, 1}}};
  unsigned seed = 500;
  for (int o = 0; o < int(std::size(kOps)); ++o) {
    const char* op = kOps[o];
    for (int i = 0; i < int(pairs.size()); ++i, seed += 2) {
      // In CI each operation on two pairs, of kinds of opposite parity (so
      // in both kernel shapes), and each pair under operations of both
      // parities (both shapes).
      if (!InThisShape(o, pairs[i]) || !InSample(o / 2 + i / 2, 2)) continue;
      const ShapePair& p = pairs[i];
      SCOPED_TRACE(std::string(op) + " " + ::testing::PrintToString(p.a) + " with " +
                   ::testing::PrintToString(p.b));
      Blob a(TestContext(), p.a), b(TestContext(), p.b), y(TestContext());
      FillOperand(&a, op, false, seed);
      FillOperand(&b, op, true, seed + 1);
      auto layer = MakeLayer(Proto(op));
      layer->SetUp({&a, &b}, {&y});
      GradientCheckOptions options;
      if (std::string(op) == "MAX" || std::string(op) == "MIN") {
        // Values within 0.01 of a tie could change sides under the step.
        options.step = 1e-3f;
      }
      CheckGradient(*layer, {&a, &b}, {&y}, {}, options);
    }
  }
}

// One bottom: the other operand is blobs[0], on the right unless
// operand_first; its gradient accumulates.
TEST_P(BinaryOpTest, LearnedOperand) {
  struct Case {
    std::string op, extra;
    std::vector<int> x_shape, operand_shape;
    bool first;
  };
  const std::vector<Case> cases = {
      {"MUL", "operand_shape { dim: 3 dim: 1 dim: 1 }", {2, 3, 5, 7}, {3, 1, 1}, false},
      {"SUB", "operand_shape { dim: 1 dim: 3 dim: 1 dim: 1 } operand_first: true",
       {2, 3, 5, 7}, {1, 3, 1, 1}, true},
      {"DIV", "operand_first: true", {3, 13}, {}, true},
      {"POW", "operand_shape { dim: 13 }", {3, 13}, {13}, false},
      {"ADD", "operand_shape { dim: 2 dim: 1 dim: 7 }", {3, 1}, {2, 1, 7}, false},
  };
  unsigned seed = 700;
  for (size_t i = 0; i < cases.size(); ++i, ++seed) {
    if (!InSample(static_cast<int>(i), 2, Shape())) continue;  // in CI, each in one shape
    const Case& c = cases[i];
    const std::string proto = Proto(c.op, c.extra + " operand_filler { type: 'uniform' min: 0.5 max: 1.5 }");
    SCOPED_TRACE(proto);
    Blob x(TestContext(), c.x_shape), y(TestContext());
    FillOperand(&x, c.op, c.first, seed);
    auto layer = MakeLayer(proto);
    layer->SetUp({&x}, {&y});
    ASSERT_EQ(layer->blobs().size(), 1u);
    Blob& w = *layer->blobs()[0];
    EXPECT_EQ(w.shape(), c.operand_shape);
    const Blob& a = c.first ? w : x;
    const Blob& b = c.first ? x : w;
    std::vector<float> dy(y.count());
    for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.25f * float(i % 7) - 0.5f;
    const Reference r = ReferenceBinary(c.op, a.ReadData(), a.shape(), b.ReadData(), b.shape(), dy);
    ASSERT_EQ(y.shape(), r.shape);
    layer->Forward({&x}, {&y});
    ExpectNearAll(y.ReadData(), r.y, {}, 2e-6, "top");
    y.WriteDiff(dy);
    w.SetDiff(0.f);
    layer->Backward({&y}, {true}, {&x});
    ExpectNearAll(x.ReadDiff(), c.first ? r.db : r.da, c.first ? r.db_magnitude : r.da_magnitude,
                  2e-6, "bottom diff");
    const std::vector<double>& dw = c.first ? r.da : r.db;
    const std::vector<double>& mw = c.first ? r.da_magnitude : r.db_magnitude;
    ExpectNearAll(w.ReadDiff(), dw, mw, 2e-6, "operand diff");
    layer->Backward({&y}, {false}, {&x});  // accumulates
    std::vector<double> twice(dw), twice_magnitude(mw);
    for (size_t i = 0; i < twice.size(); ++i) {
      twice[i] *= 2;
      twice_magnitude[i] *= 2;
    }
    ExpectNearAll(w.ReadDiff(), twice, twice_magnitude, 2e-6, "accumulated operand diff");
    CheckGradient(*layer, {&x}, {&y});
  }
}

// Without a filler the learned operand is 0; without operand_shape, a scalar.
TEST_P(BinaryOpTest, LearnedOperandDefaults) {
  Blob x(TestContext(), {3, 5}), y(TestContext());
  FillUniform(&x, -1.f, 1.f, 9);
  auto layer = MakeLayer(Proto("ADD"));
  layer->SetUp({&x}, {&y});
  ASSERT_EQ(layer->blobs().size(), 1u);
  EXPECT_TRUE(layer->blobs()[0]->shape().empty());
  EXPECT_EQ(layer->blobs()[0]->ReadData(), std::vector<float>{0.f});
  layer->Forward({&x}, {&y});
  EXPECT_EQ(y.ReadData(), x.ReadData());
}

// MAX and MIN hand half of dy to each operand where they are equal
// (torch.maximum/minimum), also summed over a broadcast.
TEST_P(BinaryOpTest, TiesShareTheGradient) {
  Blob a(TestContext(), {2, 2}), b(TestContext(), {1}), y(TestContext());
  a.WriteData({1, 1, 0, 3});
  b.WriteData({1});
  auto max = MakeLayer(Proto("MAX"));
  max->SetUp({&a, &b}, {&y});
  max->Forward({&a, &b}, {&y});
  EXPECT_EQ(y.ReadData(), (std::vector<float>{1, 1, 1, 3}));
  y.WriteDiff({2, 4, 8, 16});
  max->Backward({&y}, {true, true}, {&a, &b});
  EXPECT_EQ(a.ReadDiff(), (std::vector<float>{1, 2, 0, 16}));
  EXPECT_EQ(b.ReadDiff(), std::vector<float>{1 + 2 + 8});
  auto min = MakeLayer(Proto("MIN"));
  min->SetUp({&a, &b}, {&y});
  min->Forward({&a, &b}, {&y});
  EXPECT_EQ(y.ReadData(), (std::vector<float>{1, 1, 0, 1}));
  min->Backward({&y}, {true, true}, {&a, &b});
  EXPECT_EQ(a.ReadDiff(), (std::vector<float>{1, 2, 8, 0}));
  EXPECT_EQ(b.ReadDiff(), std::vector<float>{1 + 2 + 16});
}

// POW at the edges of its domain, as torch.pow: no NaN from 0 * ln(0) or
// 0 * 0^-1.
TEST_P(BinaryOpTest, PowSpecialValues) {
  Blob a(TestContext(), {4}), b(TestContext(), {4}), y(TestContext());
  a.WriteData({0, 0, -2, 3});
  b.WriteData({2, 0, 3, 0});
  auto layer = MakeLayer(Proto("POW"));
  layer->SetUp({&a, &b}, {&y});
  layer->Forward({&a, &b}, {&y});
  EXPECT_EQ(y.ReadData(), (std::vector<float>{0, 1, -8, 1}));
  y.WriteDiff({1, 1, 1, 1});
  layer->Backward({&y}, {true, true}, {&a, &b});
  const std::vector<float> da = a.ReadDiff(), db = b.ReadDiff();
  EXPECT_EQ(da[0], 0.f);  // 2 * 0^1
  EXPECT_EQ(da[1], 0.f);  // exponent 0
  EXPECT_NEAR(da[2], 12.f, 1e-5);  // 3 * (-2)^2
  EXPECT_EQ(da[3], 0.f);
  EXPECT_EQ(db[0], 0.f);  // base 0, exponent >= 0
  EXPECT_EQ(db[1], 0.f);
  EXPECT_TRUE(std::isnan(db[2]));  // ln(-2), as torch
  EXPECT_NEAR(db[3], std::log(3.f), 1e-6);
}

// ADD and SUB may write their top over a bottom of the top's shape. (In
// CI each operation on each bottom in one kernel shape: InThisShape.)
TEST_P(BinaryOpTest, InPlaceAddAndSub) {
  for (const char* op : {"ADD", "SUB"}) {
    for (int which : {0, 1}) {
      // The full operand as a (b broadcasts) or as b (a broadcasts).
      if (!InThisShape(OpIndex(op), which == 0 ? ShapePair{{2, 3, 5}, {3, 1}}
                                               : ShapePair{{3, 1}, {2, 3, 5}}))
        continue;
      SCOPED_TRACE(std::string(op) + " in place on bottom " + std::to_string(which));
      Blob a(TestContext(), {2, 3, 5}), b(TestContext(), {3, 1}), y(TestContext());
      FillUniform(&a, -1.f, 1.f, 11);
      FillUniform(&b, -1.f, 1.f, 12);
      Blob* full = &a;
      std::vector<Blob*> bottoms = {&a, &b};
      if (which == 1) std::swap(bottoms[0], bottoms[1]);  // the full one as b
      auto reference_layer = MakeLayer(Proto(op));
      reference_layer->SetUp(bottoms, {&y});
      reference_layer->Forward(bottoms, {&y});
      std::vector<float> dy(y.count());
      for (size_t i = 0; i < dy.size(); ++i) dy[i] = float(i % 5) - 2.f;
      y.WriteDiff(dy);
      reference_layer->Backward({&y}, {true, true}, bottoms);
      const std::vector<float> y_out = y.ReadData(), da_out = a.ReadDiff(), db_out = b.ReadDiff();
      auto layer = MakeLayer(Proto(op));
      layer->SetUp(bottoms, {full});
      layer->Forward(bottoms, {full});
      EXPECT_EQ(full->ReadData(), y_out);
      full->WriteDiff(dy);
      layer->Backward({full}, {true, true}, bottoms);
      EXPECT_EQ(a.ReadDiff(), da_out);
      EXPECT_EQ(b.ReadDiff(), db_out);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(KernelShapes, BinaryOpTest, ::testing::Values("cpu", "gpu"));

// The comparisons: 0/1 on every kernel path (same shapes, a per-channel
// operand, a general broadcast, a stored operand), equal values included;
// no gradient.
TEST(BinaryOp, ComparisonsGiveZeroOrOne) {
  const std::vector<std::pair<std::string, bool (*)(float, float)>> ops = {
      {"EQUAL", [](float a, float b) { return a == b; }},
      {"LESS", [](float a, float b) { return a < b; }},
      {"LESS_EQUAL", [](float a, float b) { return a <= b; }},
      {"GREATER", [](float a, float b) { return a > b; }},
      {"GREATER_EQUAL", [](float a, float b) { return a >= b; }}};
  // b's shape: the top's, per channel, a general broadcast.
  const std::vector<std::vector<int>> b_shapes = {{2, 3, 4}, {3, 1}, {2, 1, 4}};
  for (const auto& [op, compare] : ops)
    for (const auto& b_shape : b_shapes) {
      SCOPED_TRACE(op);
      Blob a(TestContext(), {2, 3, 4}), b(TestContext(), b_shape), y(TestContext());
      std::vector<float> av(a.count()), bv(b.count());
      for (size_t i = 0; i < av.size(); ++i) av[i] = float(int(i % 5) - 2);
      for (size_t i = 0; i < bv.size(); ++i) bv[i] = float(int(i % 3) - 1);
      a.WriteData(av);
      b.WriteData(bv);
      auto layer = MakeLayer(Proto(op));
      layer->SetUp({&a, &b}, {&y});
      layer->Forward({&a, &b}, {&y});
      const std::vector<float> got = y.ReadData();
      for (int i = 0; i < 24; ++i) {
        const int n = i / 12, c = i / 4 % 3, w = i % 4;
        int j = i;  // b's element under numpy broadcasting
        if (b_shape.size() == 2) j = c;
        if (b_shape[1] == 1 && b_shape.size() == 3) j = n * 4 + w;
        ASSERT_EQ(got[i], compare(av[i], bv[j]) ? 1.f : 0.f) << i;
      }
      y.SetDiff(1.f);
      layer->Backward({&y}, {true, true}, {&a, &b});
      EXPECT_EQ(a.ReadDiff(), std::vector<float>(a.count(), 0.f));
      EXPECT_EQ(b.ReadDiff(), std::vector<float>(b.count(), 0.f));
    }
  // A stored scalar (a detector's score threshold).
  Blob x(TestContext(), {5}), y(TestContext());
  x.WriteData({0.1f, 0.5f, 0.7f, 0.5f, -1.f});
  auto layer = MakeLayer(Proto("GREATER", "operand_shape { } operand_filler { type: 'constant' value: 0.5 }"));
  layer->SetUp({&x}, {&y});
  layer->Forward({&x}, {&y});
  EXPECT_EQ(y.ReadData(), (std::vector<float>{0, 0, 1, 0, 0}));
}

TEST(BinaryOp, BadParametersAreErrors) {
  Blob a(TestContext(), {2, 3, 4}), b(TestContext(), {3, 2}), c(TestContext(), {3, 1}),
      y(TestContext());
  struct Case {
    std::string proto;
    std::vector<Blob*> bottom;
    std::vector<Blob*> top;
    std::string message;
  };
  const std::vector<Case> cases = {
      {Proto("ADD"), {&a, &b}, {&y},
       "cannot broadcast bottom 0 [2,3,4] with bottom 1 [3,2]: axis 2 of the result would be 4 "
       "and 2"},
      {Proto("MUL", "operand_shape { dim: 5 }"), {&a}, {&y},
       "cannot broadcast bottom 0 [2,3,4] with the learned operand [5]"},
      {Proto("ADD", "operand_shape { dim: 3 }"), {&a, &c}, {&y},
       "operand_shape, operand_first and operand_filler are for one bottom"},
      {Proto("MUL", "operand_shape { dim: 0 }"), {&a}, {&y},
       "operand_shape dimension 0 is 0"},
      {Proto("MUL"), {&a, &c}, {&a}, "only ADD and SUB can work in place; MUL needs both"},
      {Proto("ADD"), {&c, &a}, {&c}, "in place, the bottom 3 1 (3) must have the result's shape"},
  };
  for (const Case& k : cases) {
    try {
      MakeLayer(k.proto)->SetUp(k.bottom, k.top);
      ADD_FAILURE() << k.proto << " accepted";
    } catch (const Error& e) {
      const std::string error = e.what();
      EXPECT_NE(error.find("layer 'test_layer' (BinaryOp)"), std::string::npos) << error;
      EXPECT_NE(error.find(k.message), std::string::npos) << k.proto << ": " << error;
    }
  }
  EXPECT_THROW(MakeLayer(Proto("ADD"))->SetUp({&a, &c, &c}, {&y}), Error);  // three bottoms
}

}  // namespace test
}  // namespace dlcaffe
