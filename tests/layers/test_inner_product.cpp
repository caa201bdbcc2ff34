#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

std::string IpProto(int num_output, const std::string& extra = "") {
  return "type: 'InnerProduct' inner_product_param { num_output: " +
         std::to_string(num_output) +
         " weight_filler { type: 'gaussian' std: 0.5 }"
         " bias_filler { type: 'uniform' min: -1 max: 1 } " + extra + " }";
}

// y[m][n] = sum_k x[m][k] * W(n, k) + b[n]; W(n, k) is w[n * K + k], or
// w[k * N + n] when the weights are stored transposed (K x N).
std::vector<float> ReferenceInnerProduct(const std::vector<float>& x,
                                         const std::vector<float>& w,
                                         const std::vector<float>* b, int M, int K,
                                         int N, bool transpose) {
  std::vector<float> y(M * N);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double acc = b ? (*b)[n] : 0.0;
      for (int k = 0; k < K; ++k)
        acc += double(x[m * K + k]) * (transpose ? w[k * N + n] : w[n * K + k]);
      y[m * N + n] = float(acc);
    }
  return y;
}

struct IpCase {
  std::vector<int> shape;
  std::string extra;
  int M, K;
  std::vector<int> top_shape;
};

// N = 13 outputs throughout.
const IpCase kCases[] = {
    {{3, 2, 7, 5}, "", 3, 70, {3, 13}},
    {{3, 2, 7, 5}, "transpose: true", 3, 70, {3, 13}},
    {{3, 2, 7, 5}, "bias_term: false", 3, 70, {3, 13}},
    {{3, 2, 7, 5}, "axis: 2", 6, 35, {3, 2, 13}},
    {{3, 2, 7, 5}, "axis: -1 transpose: true", 42, 5, {3, 2, 7, 13}},
    {{127, 9}, "", 127, 9, {127, 13}},
    {{1, 1}, "", 1, 1, {1, 13}},
};

}  // namespace

TEST(InnerProduct, SetUpShapesAndParameters) {
  for (const IpCase& c : kCases) {
    SCOPED_TRACE(c.extra);
    Blob bottom(TestContext(), c.shape), top(TestContext());
    auto layer = MakeLayer(IpProto(13, c.extra));
    layer->SetUp({&bottom}, {&top});
    EXPECT_EQ(top.shape(), c.top_shape);
    const bool transpose = c.extra.find("transpose") != std::string::npos;
    const bool bias = c.extra.find("bias_term: false") == std::string::npos;
    ASSERT_EQ(layer->blobs().size(), bias ? 2u : 1u);
    EXPECT_EQ(layer->blobs()[0]->shape(),
              transpose ? std::vector<int>({c.K, 13}) : std::vector<int>({13, c.K}));
    if (bias) {
      EXPECT_EQ(layer->blobs()[1]->shape(), std::vector<int>{13});
    }
  }
}

TEST(InnerProduct, ForwardMatchesReference) {
  for (const IpCase& c : kCases) {
    SCOPED_TRACE(c.extra);
    Blob bottom(TestContext(), c.shape), top(TestContext());
    FillGaussian(&bottom, 0.f, 1.f, 3);
    auto layer = MakeLayer(IpProto(13, c.extra));
    layer->SetUp({&bottom}, {&top});
    layer->Forward({&bottom}, {&top});
    const bool transpose = c.extra.find("transpose") != std::string::npos;
    std::vector<float> b;
    if (layer->blobs().size() > 1) b = layer->blobs()[1]->ReadData();
    std::vector<float> expected =
        ReferenceInnerProduct(bottom.ReadData(), layer->blobs()[0]->ReadData(),
                              b.empty() ? nullptr : &b, c.M, c.K, 13, transpose);
    std::vector<float> y = top.ReadData();
    ASSERT_EQ(y.size(), expected.size());
    for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], expected[i], 1e-4f) << i;
  }
}

// Caffe's TestForwardTranspose: the same weights stored transposed give the
// same output.
TEST(InnerProduct, TransposedWeightsGiveTheSameOutput) {
  Blob bottom(TestContext(), {3, 2, 7, 5}), top(TestContext()), top_t(TestContext());
  FillGaussian(&bottom, 0.f, 1.f, 5);
  auto layer = MakeLayer(IpProto(13));
  auto layer_t = MakeLayer(IpProto(13, "transpose: true"));
  layer->SetUp({&bottom}, {&top});
  layer_t->SetUp({&bottom}, {&top_t});
  std::vector<float> w = layer->blobs()[0]->ReadData(), wt(w.size());
  for (int n = 0; n < 13; ++n)
    for (int k = 0; k < 70; ++k) wt[k * 13 + n] = w[n * 70 + k];
  layer_t->blobs()[0]->WriteData(wt);
  layer_t->blobs()[1]->WriteData(layer->blobs()[1]->ReadData());
  layer->Forward({&bottom}, {&top});
  layer_t->Forward({&bottom}, {&top_t});
  std::vector<float> y = top.ReadData(), yt = top_t.ReadData();
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], yt[i], 1e-5f) << i;
}

TEST(InnerProduct, GradientMatchesNumeric) {
  for (const IpCase& c : kCases) {
    SCOPED_TRACE(c.extra);
    std::vector<int> shape = c.shape;
    if (shape[0] == 127) shape = {31, 9};  // rows are checked by the forward test
    Blob bottom(TestContext(), shape), top(TestContext());
    FillGaussian(&bottom, 0.f, 1.f, 7);
    auto layer = MakeLayer(IpProto(13, c.extra));
    layer->SetUp({&bottom}, {&top});
    GradientCheckOptions options;
    options.max_checks_per_blob = 150;
    CheckGradient(*layer, {&bottom}, {&top}, {}, options);
  }
}

TEST(InnerProduct, ParameterDiffsAccumulate) {
  for (const std::string extra : {"", "transpose: true"}) {
    SCOPED_TRACE(extra);
    Blob bottom(TestContext(), {4, 6}), top(TestContext());
    FillGaussian(&bottom, 0.f, 1.f, 9);
    auto layer = MakeLayer(IpProto(3, extra));
    layer->SetUp({&bottom}, {&top});
    layer->Forward({&bottom}, {&top});
    FillGaussian(&top, 0.f, 1.f, 10);
    top.WriteDiff(top.ReadData());
    for (auto& p : layer->blobs()) p->SetDiff(0.f);
    layer->Backward({&top}, {true}, {&bottom});
    std::vector<float> dw1 = layer->blobs()[0]->ReadDiff();
    std::vector<float> db1 = layer->blobs()[1]->ReadDiff();
    std::vector<float> dx1 = bottom.ReadDiff();
    layer->Backward({&top}, {true}, {&bottom});
    std::vector<float> dw2 = layer->blobs()[0]->ReadDiff();
    std::vector<float> db2 = layer->blobs()[1]->ReadDiff();
    std::vector<float> dx2 = bottom.ReadDiff();
    for (size_t i = 0; i < dw1.size(); ++i) EXPECT_NEAR(dw2[i], 2 * dw1[i], 1e-5f) << i;
    for (size_t i = 0; i < db1.size(); ++i) EXPECT_NEAR(db2[i], 2 * db1[i], 1e-5f) << i;
    // The bottom diff is overwritten, not accumulated.
    for (size_t i = 0; i < dx1.size(); ++i) EXPECT_EQ(dx2[i], dx1[i]) << i;
  }
}

// The bias gradient (per-channel sums over the rows, core/channel_sums.hpp)
// sums every row of many, in both kernel shapes, and adds to what the
// gradient held.
TEST(InnerProduct, BiasGradientSumsEveryRow) {
  const int M = 1601, K = 3, N = 13;
  for (const char* shape : {"cpu", "gpu"}) {
    SCOPED_TRACE(shape);
    SetTestOption("kernel_shape", shape);
    Blob bottom(TestContext(), {M, K}), top(TestContext());
    FillGaussian(&bottom, 0.f, 1.f, 12);
    auto layer = MakeLayer(IpProto(N));
    layer->SetUp({&bottom}, {&top});
    layer->Forward({&bottom}, {&top});
    FillGaussian(&top, 0.f, 1.f, 13);
    const std::vector<float> top_diff = top.ReadData();
    top.WriteDiff(top_diff);
    layer->blobs()[1]->SetDiff(0.5f);
    layer->Backward({&top}, {false}, {&bottom});
    ResetTestOption("kernel_shape");
    const std::vector<float> got = layer->blobs()[1]->ReadDiff();
    for (int n = 0; n < N; ++n) {
      double sum = 0.5, magnitude = 0.5;
      for (int m = 0; m < M; ++m) {
        sum += top_diff[m * N + n];
        magnitude += std::fabs(top_diff[m * N + n]);
      }
      // A float sum of M + 1 terms in any order and grouping.
      EXPECT_NEAR(got[n], sum, (M + 1) * std::numeric_limits<float>::epsilon() * magnitude)
          << "column " << n;
    }
  }
}

TEST(InnerProduct, NoBottomGradientUnlessAsked) {
  Blob bottom(TestContext(), {4, 6}), top(TestContext());
  FillGaussian(&bottom, 0.f, 1.f, 11);
  auto layer = MakeLayer(IpProto(3));
  layer->SetUp({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  top.SetDiff(1.f);
  bottom.SetDiff(7.f);
  layer->Backward({&top}, {false}, {&bottom});
  for (float v : bottom.ReadDiff()) EXPECT_EQ(v, 7.f);
}

TEST(InnerProduct, BadSetUpIsAUserError) {
  Blob bottom(TestContext(), {4, 6}), top(TestContext());
  auto missing = MakeLayer("type: 'InnerProduct' inner_product_param { }");
  EXPECT_THROW(missing->SetUp({&bottom}, {&top}), Error);
  auto bad_axis = MakeLayer(IpProto(3, "axis: 2"));
  EXPECT_THROW(bad_axis->SetUp({&bottom}, {&top}), Error);
  auto layer = MakeLayer(IpProto(3));
  layer->SetUp({&bottom}, {&top});
  Blob other(TestContext(), {4, 7});
  EXPECT_THROW(layer->Reshape({&other}, {&top}), Error);
}

}  // namespace test
}  // namespace dlcaffe
