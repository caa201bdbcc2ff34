#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "../../src/core/matrix_engine.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/storage_layer_run.hpp"
#include "util/storage_values.hpp"
#include "util/test_context.hpp"
#include "util/test_depth.hpp"

namespace dlcaffe {
namespace test {

namespace {

// numpy.matmul in double precision on row-major host arrays, with 1-D
// promotion, optional transposes of the last two axes and broadcast batch
// axes; returns the top's shape through `out_shape`.
std::vector<double> ReferenceMatMul(const std::vector<float>& a, std::vector<int> as,
                                    const std::vector<float>& b, std::vector<int> bs, bool ta,
                                    bool tb, std::vector<int>* out_shape) {
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  const int ar = as[as.size() - 2], ac = as.back(), br = bs[bs.size() - 2], bc = bs.back();
  const int M = ta ? ac : ar, K = ta ? ar : ac, N = tb ? br : bc;
  const std::vector<int> ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  const size_t nb = std::max(ab.size(), bb.size());
  std::vector<int> batch(nb);
  auto dim = [nb](const std::vector<int>& v, size_t d) {
    const long i = long(d) - long(nb - v.size());
    return i < 0 ? 1 : v[i];
  };
  for (size_t d = 0; d < nb; ++d) batch[d] = std::max(dim(ab, d), dim(bb, d));
  int count = 1;
  for (int s : batch) count *= s;
  std::vector<double> c(size_t(count) * M * N);
  for (int flat = 0; flat < count; ++flat) {
    // The batch index, then each operand's matrix index (broadcast axes at 0).
    std::vector<int> idx(nb);
    for (int d = int(nb) - 1, r = flat; d >= 0; --d) {
      idx[d] = r % batch[d];
      r /= batch[d];
    }
    size_t ai = 0, bi = 0;
    for (size_t d = 0; d < nb; ++d) {
      ai = ai * dim(ab, d) + (dim(ab, d) == 1 ? 0 : idx[d]);
      bi = bi * dim(bb, d) + (dim(bb, d) == 1 ? 0 : idx[d]);
    }
    const float* A = a.data() + ai * ar * ac;
    const float* B = b.data() + bi * br * bc;
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        double sum = 0;
        for (int k = 0; k < K; ++k)
          sum += double(ta ? A[k * ac + m] : A[m * ac + k]) * (tb ? B[n * bc + k] : B[k * bc + n]);
        c[(size_t(flat) * M + m) * N + n] = sum;
      }
  }
  *out_shape = batch;
  if (!a_vec) out_shape->push_back(M);
  if (!b_vec) out_shape->push_back(N);
  return c;
}

struct Case {
  std::vector<int> a, b;
  bool ta = false, tb = false;
};

std::string Params(const Case& c) {
  return std::string("matmul_param { transpose_a: ") + (c.ta ? "true" : "false") +
         " transpose_b: " + (c.tb ? "true" : "false") + " }";
}

std::string Describe(const Case& c) {
  std::string s = "a";
  for (int d : c.a) s += " " + std::to_string(d);
  s += ", b";
  for (int d : c.b) s += " " + std::to_string(d);
  return s + ", " + Params(c);
}

// gtest names a failing case by this.
void PrintTo(const Case& c, std::ostream* os) { *os << Describe(c); }

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      Case{{3, 13}, {13, 5}},
      // x @ W: the batch folds into the rows of one product.
      Case{{2, 3, 4, 5}, {5, 7}}, Case{{2, 3, 4, 5}, {7, 5}, false, true},
      // Both batched alike: one batched product.
      Case{{3, 4, 5}, {3, 5, 2}},
      // a broadcast over b's batch (stride 0 for a).
      Case{{4, 5}, {3, 5, 6}},
      // Mixed broadcasting: a leading axis looped over, the rest batched.
      Case{{3, 1, 4, 5}, {2, 5, 6}}, Case{{1, 2, 1, 3}, {4, 1, 3, 2}},
      // 1-D operands (numpy promotion; the added axis is removed).
      Case{{5}, {3, 5, 7}}, Case{{2, 3, 5}, {5}}, Case{{13}, {13}}, Case{{1, 13}, {13, 1}},
      // Transposes of the last two axes.
      Case{{2, 5, 3}, {2, 7, 5}, true, true}, Case{{5, 3}, {2, 5, 4}, true, false},
      Case{{2, 2, 3, 5}, {1, 5}, false, true}, Case{{2, 5, 3}, {5, 4}, true, false}};
  return cases;
}

// Where `c` stands in Cases().
int IndexOf(const Case& c) {
  for (size_t i = 0; i < Cases().size(); ++i)
    if (Describe(Cases()[i]) == Describe(c)) return static_cast<int>(i);
  return 0;
}

void ExpectMatches(const Blob& top, const std::vector<int>& shape,
                   const std::vector<double>& expected, const std::string& what) {
  ASSERT_EQ(top.shape(), shape) << what;
  const std::vector<float> y = top.ReadData();
  ASSERT_EQ(y.size(), expected.size()) << what;
  // Float products of at most 13 terms of size ~1: 1e-5 relative.
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(y[i], expected[i], 1e-5 * std::max(1.0, std::fabs(expected[i])))
        << what << ", element " << i;
}

}  // namespace

class MatMulTest : public ::testing::TestWithParam<Case> {};

TEST_P(MatMulTest, ForwardMatchesReference) {
  const Case& c = GetParam();
  Blob a(TestContext(), c.a), b(TestContext(), c.b), top(TestContext());
  FillGaussian(&a, 0.f, 1.f, 3);
  FillGaussian(&b, 0.f, 1.f, 4);
  auto layer = MakeLayer("type: 'MatMul' " + Params(c));
  layer->SetUp({&a, &b}, {&top});
  layer->Forward({&a, &b}, {&top});
  std::vector<int> shape;
  const std::vector<double> expected =
      ReferenceMatMul(a.ReadData(), c.a, b.ReadData(), c.b, c.ta, c.tb, &shape);
  ExpectMatches(top, shape, expected, Describe(c));
}

TEST_P(MatMulTest, GradientMatchesNumeric) {
  const Case& c = GetParam();
  SCOPED_TRACE(Describe(c));
  Blob a(TestContext(), c.a), b(TestContext(), c.b), top(TestContext());
  FillGaussian(&a, 0.f, 1.f, 5);
  FillGaussian(&b, 0.f, 1.f, 6);
  auto layer = MakeLayer("type: 'MatMul' " + Params(c));
  layer->SetUp({&a, &b}, {&top});
  CheckGradient(*layer, {&a, &b}, {&top});
}

// Stale values in the bottoms' diffs must not leak into their gradients
// (overwritten, not added to), including where a broadcast operand's
// gradient is a sum over several products.
TEST_P(MatMulTest, BottomGradientsOverwriteTheDiffs) {
  const Case& c = GetParam();
  Blob a(TestContext(), c.a), b(TestContext(), c.b), top(TestContext());
  FillGaussian(&a, 0.f, 1.f, 5);
  FillGaussian(&b, 0.f, 1.f, 6);
  auto layer = MakeLayer("type: 'MatMul' " + Params(c));
  layer->SetUp({&a, &b}, {&top});
  layer->Forward({&a, &b}, {&top});
  FillGaussian(&top, 0.f, 1.f, 7);
  top.WriteDiff(top.ReadData());
  a.SetDiff(0.f);
  b.SetDiff(0.f);
  layer->Backward({&top}, {true, true}, {&a, &b});
  const std::vector<float> da = a.ReadDiff(), db = b.ReadDiff();
  a.SetDiff(100.f);
  b.SetDiff(-100.f);
  layer->Backward({&top}, {true, true}, {&a, &b});
  EXPECT_EQ(a.ReadDiff(), da) << Describe(c);
  EXPECT_EQ(b.ReadDiff(), db) << Describe(c);
}

// One forward and backward pass of the layer in `type` (operands, top and
// their gradients) with float32 math, on the values given.
struct MatMulPass {
  std::vector<float> top, da, db;
};
MatMulPass RunInStorage(const Case& c, StorageType type, const std::vector<float>& a_values,
                        const std::vector<float>& b_values, const std::vector<float>& dy) {
  Context& ctx = TestContext();
  Blob a(ctx), b(ctx), top(ctx);
  for (Blob* blob : {&a, &b, &top}) blob->set_storage_type(type);
  a.Reshape(c.a);
  b.Reshape(c.b);
  auto layer = MakeLayer("type: 'MatMul' forward_math: FLOAT backward_math: FLOAT " + Params(c));
  layer->SetUp({&a, &b}, {&top});
  a.WriteData(a_values);
  b.WriteData(b_values);
  layer->Forward({&a, &b}, {&top});
  MatMulPass pass;
  pass.top = top.ReadData();
  if (dy.empty()) return pass;
  top.WriteDiff(dy);
  a.SetDiff(7.f);  // stale values, overwritten
  b.SetDiff(-7.f);
  layer->Backward({&top}, {true, true}, {&a, &b});
  pass.da = a.ReadDiff();
  pass.db = b.ReadDiff();
  return pass;
}

// Operands, top and gradients stored in 16 bits, on values the type holds:
// the GEMM widens them exactly, sums in float and rounds once, and a
// gradient summed over broadcast axes is summed in float before its one
// rounding, so every result is the float32 layer's, rounded, bit for bit
// (on both kernel shapes). Each shape and type is a set of GEMM programs
// per layout: CI runs each case in both types in one shape, the cases
// alternating between the shapes; DLCAFFE_NIGHTLY=1 runs every case in
// both (util/test_depth.hpp).
TEST_P(MatMulTest, SixteenBitLayerRoundsTheFloatLayer) {
  const Case& c = GetParam();
  const int index = IndexOf(c);
  int s = 0;
  for (const char* shape : {"cpu", "gpu"}) {
    if (!InSample(index, 2, s++)) continue;
    SetTestOption("kernel_shape", shape);
    for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
      SCOPED_TRACE(Describe(c) + ", " + StorageTypeName(type) + ", " + shape + " shape");
      Blob source(TestContext(), {4096});
      FillUniform(&source, -1, 1, 31);
      const std::vector<float> values = RoundedTo(source.ReadData(), type);
      const auto take = [&](const std::vector<int>& dims, size_t from) {
        size_t n = 1;
        for (int d : dims) n *= d;
        return std::vector<float>(values.begin() + from, values.begin() + from + n);
      };
      const std::vector<float> a_values = take(c.a, 0), b_values = take(c.b, 1000);
      const size_t top_count =
          RunInStorage(c, StorageType::kFloat32, a_values, b_values, {}).top.size();
      const std::vector<float> dy(values.begin() + 2000, values.begin() + 2000 + top_count);
      const MatMulPass full = RunInStorage(c, StorageType::kFloat32, a_values, b_values, dy);
      const MatMulPass half = RunInStorage(c, type, a_values, b_values, dy);
      EXPECT_EQ(half.top, RoundedTo(full.top, type));
      EXPECT_EQ(half.da, RoundedTo(full.da, type));
      EXPECT_EQ(half.db, RoundedTo(full.db, type));
    }
  }
  ResetTestOption("kernel_shape");
}

INSTANTIATE_TEST_SUITE_P(Shapes, MatMulTest, ::testing::ValuesIn(Cases()));

// A 16-bit bottom and top with the learned operand, which stays float, as
// either factor: top and bottom gradient are the float32 layer's rounded,
// the operand's gradient (float sums of exactly widened values) its own,
// bit for bit. (CI: each order in one type, the next test the other type;
// DLCAFFE_NIGHTLY=1 both.)
TEST(MatMul, LearnedOperandWithSixteenBitActivations) {
  int f = 0;
  for (const char* first : {"false", "true"}) {
    int t = 0;
    for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
      if (!InSample(f + t++, 2, 0)) continue;
      SCOPED_TRACE(std::string("operand_first ") + first + ", " + StorageTypeName(type));
      // x [2, 3, 5] times W [5, 4], or W [4, 3] times x [2, 3, 5].
      const bool w_first = std::string(first) == "true";
      const std::string param =
          std::string("type: 'MatMul' matmul_param { operand_first: ") + first +
          (w_first ? " operand_shape { dim: 4 dim: 3 } }" : " operand_shape { dim: 5 dim: 4 } }");
      Blob source(TestContext(), {256});
      FillUniform(&source, -1, 1, 37);
      const std::vector<float> values = RoundedTo(source.ReadData(), type);
      const std::vector<float> x(values.begin(), values.begin() + 30),
          dy(values.begin() + 30, values.begin() + 30 + (w_first ? 40 : 24)),
          w(values.begin() + 100, values.begin() + (w_first ? 112 : 120));
      const StorageRunInputs run{{2, 3, 5}, x, dy, w};
      const StorageRun half = RunLayerInStorage(param, type, run);
      const StorageRun full = RunLayerInStorage(param, StorageType::kFloat32, run);
      EXPECT_EQ(half.top, RoundedTo(full.top, type));
      EXPECT_EQ(half.bottom_diff, RoundedTo(full.bottom_diff, type));
      ASSERT_EQ(half.param_diffs.size(), 1u);
      EXPECT_EQ(half.param_diffs[0], full.param_diffs[0]);
    }
    ++f;
  }
}

// The learned operand stays float; in the activations' 16-bit math a
// product rounds it to their type where the tensor cores would round it as
// they load them (an NVIDIA GPU: MmaRoundsTo), so that the cp.async
// pipeline can stream it, as InnerProduct does; elsewhere the portable
// kernels multiply it as it is. The top and the activation's gradient must
// be the float32 layer's over the operand as the device multiplies it
// (ExpectMultipliedAs), in both orders, batch folded into rows or not.
// (CI: each order in the type the test above does not run it in;
// DLCAFFE_NIGHTLY=1 both.)
TEST(MatMul, LearnedOperandActsAsTheDeviceRoundsIt) {
  int f = 0;
  for (const char* first : {"false", "true"}) {
    int t = 0;
    for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
      if (!InSample(f + t++, 2, 1)) continue;
      SCOPED_TRACE(std::string("operand_first ") + first + ", " + StorageTypeName(type));
      // x [3, 9, 16] times W [16, 24], or W [24, 9] times x [3, 9, 16].
      const bool w_first = std::string(first) == "true";
      const int x_count = 3 * 9 * 16, w_count = w_first ? 24 * 9 : 16 * 24,
                top_count = w_first ? 3 * 24 * 16 : 3 * 9 * 24;
      const std::string name = type == StorageType::kFloat16 ? "FLOAT16" : "BFLOAT16";
      const std::string param =
          std::string("type: 'MatMul' matmul_param { operand_first: ") + first +
          (w_first ? " operand_shape { dim: 24 dim: 9 } }" : " operand_shape { dim: 16 dim: 24 } }");
      const std::string math = " forward_math: " + name + " backward_math: " + name;
      Blob source(TestContext(), {x_count + top_count + w_count});
      FillUniform(&source, -1, 1, 41);
      const std::vector<float> all = source.ReadData();
      const std::vector<float> x = RoundedTo({all.begin(), all.begin() + x_count}, type),
                               dy = RoundedTo({all.begin() + x_count,
                                               all.begin() + x_count + top_count}, type),
                               w(all.begin() + x_count + top_count, all.end());
      const std::vector<float> rounded_w = RoundedTo(w, type);
      const MatrixMath matrix_math =
          type == StorageType::kFloat16 ? MatrixMath::kFloat16 : MatrixMath::kBFloat16;
      const bool rounds = MmaRoundsTo(TestContext(), TestContext().default_choices(), matrix_math, type);
      const StorageRun half = RunLayerInStorage(param + math, type, {{3, 9, 16}, x, dy, w});
      const StorageRun as_multiplied = RunLayerInStorage(
          param, StorageType::kFloat32, {{3, 9, 16}, x, dy, rounds ? rounded_w : w});
      const StorageRun other = RunLayerInStorage(param, StorageType::kFloat32,
                                                 {{3, 9, 16}, x, dy, rounds ? w : rounded_w});
      ExpectMultipliedAs("top", half.top, as_multiplied.top, other.top, type);
      ExpectMultipliedAs("bottom diff", half.bottom_diff, as_multiplied.bottom_diff,
                         other.bottom_diff, type);
    }
    ++f;
  }
}

// One bottom and the learned operand blobs[0] (b, or a with operand_first):
// forward against the reference, gradients of the bottom and the parameter.
TEST(MatMul, LearnedOperand) {
  struct LearnedCase {
    std::vector<int> bottom, operand;
    bool operand_first;
  };
  for (const LearnedCase& c : {LearnedCase{{2, 3, 4}, {4, 6}, false},
                               LearnedCase{{4, 2, 5}, {3, 2}, true},
                               LearnedCase{{3, 4}, {2, 4, 5}, false}}) {
    std::string text = "type: 'MatMul' matmul_param { operand_shape {";
    for (int d : c.operand) text += " dim: " + std::to_string(d);
    text += std::string(" } operand_first: ") + (c.operand_first ? "true" : "false") +
            " operand_filler { type: 'gaussian' std: 1 } }";
    SCOPED_TRACE(text);
    Blob x(TestContext(), c.bottom), top(TestContext());
    FillGaussian(&x, 0.f, 1.f, 8);
    auto layer = MakeLayer(text);
    layer->SetUp({&x}, {&top});
    ASSERT_EQ(layer->blobs().size(), 1u);
    ASSERT_EQ(layer->blobs()[0]->shape(), c.operand);
    layer->Forward({&x}, {&top});
    const Blob& w = *layer->blobs()[0];
    std::vector<int> shape;
    const std::vector<double> expected =
        c.operand_first
            ? ReferenceMatMul(w.ReadData(), c.operand, x.ReadData(), c.bottom, false, false, &shape)
            : ReferenceMatMul(x.ReadData(), c.bottom, w.ReadData(), c.operand, false, false, &shape);
    ExpectMatches(top, shape, expected, text);
    CheckGradient(*layer, {&x}, {&top});
  }
}

// A parameter's gradient adds to its diff (the solver clears it).
TEST(MatMul, ParameterGradientAccumulates) {
  Blob x(TestContext(), {2, 3, 4}), top(TestContext());
  FillGaussian(&x, 0.f, 1.f, 9);
  auto layer = MakeLayer(
      "type: 'MatMul' matmul_param { operand_shape { dim: 4 dim: 5 } "
      "operand_filler { type: 'gaussian' } }");
  layer->SetUp({&x}, {&top});
  layer->Forward({&x}, {&top});
  top.SetDiff(1.f);
  layer->blobs()[0]->SetDiff(0.f);
  layer->Backward({&top}, {true}, {&x});
  const std::vector<float> once = layer->blobs()[0]->ReadDiff();
  layer->Backward({&top}, {true}, {&x});
  const std::vector<float> twice = layer->blobs()[0]->ReadDiff();
  // dW[k][n] = sum over the 6 rows of x[., k]: not all zero.
  EXPECT_GT(std::fabs(once[0]), 1e-3);
  for (size_t i = 0; i < once.size(); ++i) EXPECT_NEAR(twice[i], 2 * once[i], 1e-5) << i;
}

TEST(MatMul, BadShapesAndParametersAreErrors) {
  struct ErrorCase {
    std::vector<int> a, b;  // b empty: one bottom
    std::string param, message;
  };
  const std::vector<ErrorCase> cases = {
      {{3, 4}, {5, 2}, "", "the inner dimensions differ (4 and 5)"},
      {{2, 3, 4}, {3, 4, 2}, "", "the batch axes do not broadcast (2 against 3)"},
      {{4}, {4, 2}, "transpose_a: true", "a 1-D operand cannot be transposed"},
      {{3, 4}, {}, "", "operand_shape must give the shape of b"},
      {{3, 4}, {4, 2}, "operand_shape { dim: 4 }", "operand_shape and operand_first are for one"},
      {{3, 4}, {}, "operand_shape { dim: 4 dim: 0 }", "operand_shape dimension 1 is 0"},
  };
  for (const ErrorCase& c : cases) {
    Blob a(TestContext(), c.a), b(TestContext(), c.b), top(TestContext());
    std::vector<Blob*> bottom{&a};
    if (!c.b.empty()) bottom.push_back(&b);
    try {
      MakeLayer("type: 'MatMul' matmul_param { " + c.param + " }")->SetUp(bottom, {&top});
      ADD_FAILURE() << c.message << ": accepted";
    } catch (const Error& e) {
      const std::string error = e.what();
      EXPECT_NE(error.find("layer 'test_layer' (MatMul)"), std::string::npos) << error;
      EXPECT_NE(error.find(c.message), std::string::npos) << error;
    }
  }
}

}  // namespace test
}  // namespace dlcaffe
