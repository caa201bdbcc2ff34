#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "util/gradient_checker.hpp"
#include "util/in_place_check.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

// Forces the row kernels' shape (a row per work-group or per work-item).
struct RowShapeScope {
  explicit RowShapeScope(const char* rows) { SetTestOption("kernel_shape", rows); }
  ~RowShapeScope() { ResetTestOption("kernel_shape"); }
};

struct Case {
  std::vector<int> shape;
  int axis;
  bool affine;
  bool bias;
};

std::string LayerNormText(const Case& c, float eps = 1e-5f) {
  return "type: 'LayerNorm' layer_norm_param { axis: " + std::to_string(c.axis) +
         " eps: " + std::to_string(eps) + " elementwise_affine: " +
         (c.affine ? "true" : "false") + " bias: " + (c.bias ? "true" : "false") + " }";
}

std::string Describe(const Case& c) {
  std::string s = "shape";
  for (int d : c.shape) s += " " + std::to_string(d);
  return s + ", " + LayerNormText(c);
}

// gtest names a failing case by this.
void PrintTo(const Case& c, std::ostream* os) { *os << Describe(c); }

// Rows of `dim` values: (x - mean) / sqrt(var + eps) * gamma + beta in
// double precision, var biased.
std::vector<double> ReferenceLayerNorm(const std::vector<float>& x, int dim, double eps,
                                       const std::vector<float>& gamma,
                                       const std::vector<float>& beta) {
  std::vector<double> y(x.size());
  for (size_t base = 0; base < x.size(); base += dim) {
    double mean = 0, var = 0;
    for (int j = 0; j < dim; ++j) mean += x[base + j];
    mean /= dim;
    for (int j = 0; j < dim; ++j) var += (x[base + j] - mean) * (x[base + j] - mean);
    var /= dim;
    for (int j = 0; j < dim; ++j) {
      const double g = gamma.empty() ? 1.0 : gamma[j], b = beta.empty() ? 0.0 : beta[j];
      y[base + j] = (x[base + j] - mean) / std::sqrt(var + eps) * g + b;
    }
  }
  return y;
}

int RowLength(const Case& c) {
  const int axis = c.axis < 0 ? c.axis + static_cast<int>(c.shape.size()) : c.axis;
  int dim = 1;
  for (size_t i = axis; i < c.shape.size(); ++i) dim *= c.shape[i];
  return dim;
}

// Random gamma and beta, so that a layer that ignored them fails.
void FillParameters(Layer* layer) {
  for (size_t i = 0; i < layer->blobs().size(); ++i)
    FillGaussian(layer->blobs()[i].get(), i == 0 ? 1.f : 0.f, 0.5f, 40 + i);
}

}  // namespace

class LayerNormTest : public ::testing::TestWithParam<Case> {};

TEST_P(LayerNormTest, ForwardMatchesReference) {
  const Case& c = GetParam();
  for (const char* rows : {"gpu", "cpu"}) {
    RowShapeScope scope(rows);
    Blob bottom(TestContext(), c.shape), top(TestContext());
    // Rows off zero and of unequal scales.
    FillGaussian(&bottom, 0.7f, 2.f, 7);
    auto layer = MakeLayer(LayerNormText(c));
    layer->SetUp({&bottom}, {&top});
    ASSERT_EQ(top.shape(), bottom.shape());
    ASSERT_EQ(layer->blobs().size(), c.affine ? (c.bias ? 2u : 1u) : 0u);
    FillParameters(layer.get());
    layer->Forward({&bottom}, {&top});
    std::vector<float> gamma, beta;
    if (c.affine) gamma = layer->blobs()[0]->ReadData();
    if (c.affine && c.bias) beta = layer->blobs()[1]->ReadData();
    const std::vector<double> expected =
        ReferenceLayerNorm(bottom.ReadData(), RowLength(c), 1e-5, gamma, beta);
    const std::vector<float> y = top.ReadData();
    // Float sums over rows of at most a few hundred values: 1e-5 relative.
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_NEAR(y[i], expected[i], 1e-5 * std::max(1.0, std::fabs(expected[i])))
          << rows << " shape, " << Describe(c) << ", element " << i;
  }
}

TEST_P(LayerNormTest, GradientMatchesNumeric) {
  const Case& c = GetParam();
  for (const char* rows : {"gpu", "cpu"}) {
    RowShapeScope scope(rows);
    SCOPED_TRACE(std::string(rows) + " shape, " + Describe(c));
    Blob bottom(TestContext(), c.shape), top(TestContext());
    FillGaussian(&bottom, 0.3f, 1.f, 11);
    auto layer = MakeLayer(LayerNormText(c));
    layer->SetUp({&bottom}, {&top});
    FillParameters(layer.get());
    CheckGradient(*layer, {&bottom}, {&top});
  }
}

INSTANTIATE_TEST_SUITE_P(
    OddShapes, LayerNormTest,
    ::testing::Values(Case{{3, 13}, -1, true, true}, Case{{2, 3, 13}, 1, true, true},
                      Case{{2, 3, 13}, -1, true, false},
                      // ONNX InstanceNormalization's normalization: axis 2, no affine.
                      Case{{2, 3, 5, 7}, 2, false, true}, Case{{13}, 0, true, true},
                      Case{{127, 3}, -1, true, true},
                      // Rows of one value: y = beta, every gradient of x is 0.
                      Case{{3, 1}, -1, true, true}));

// The parameters' gradients against double sums over rows, in both kernel
// shapes, with many rows (chunked sums and their finishing pass) and few
// (GPU shape: added straight to the diffs), rows of 37 (two full float16
// blocks and a partial one in the CPU shape), accumulated on top of what the
// diffs held.
TEST(LayerNorm, ParameterGradientsMatchReference) {
  for (const char* shape : {"cpu", "gpu"}) {
    SetTestOption("kernel_shape", shape);
    for (int rows : {5, 1001}) {
      const int dim = 37;
      Blob bottom(TestContext(), {rows, dim}), top(TestContext());
      FillGaussian(&bottom, 0.5f, 1.5f, 3);
      auto layer = MakeLayer("type: 'LayerNorm'");
      layer->SetUp({&bottom}, {&top});
      FillParameters(layer.get());
      layer->Forward({&bottom}, {&top});
      Blob dy_values(TestContext(), {rows, dim});
      FillGaussian(&dy_values, 0.f, 1.f, 4);
      const std::vector<float> dy = dy_values.ReadData();
      top.WriteDiff(dy);
      layer->blobs()[0]->SetDiff(0.5f);
      layer->blobs()[1]->SetDiff(-0.25f);
      layer->Backward({&top}, {false}, {&bottom});
      const std::vector<double> xhat =
          ReferenceLayerNorm(bottom.ReadData(), dim, 1e-5, {}, {});
      std::vector<double> dgamma(dim, 0.5), dbeta(dim, -0.25);
      for (int r = 0; r < rows; ++r)
        for (int j = 0; j < dim; ++j) {
          dgamma[j] += dy[r * dim + j] * xhat[r * dim + j];
          dbeta[j] += dy[r * dim + j];
        }
      const std::vector<float> got_gamma = layer->blobs()[0]->ReadDiff(),
                               got_beta = layer->blobs()[1]->ReadDiff();
      // Float sums of `rows` terms of size ~1: 1e-6 * rows absolute at worst.
      for (int j = 0; j < dim; ++j) {
        EXPECT_NEAR(got_gamma[j], dgamma[j], 1e-6 * rows)
            << shape << " shape, " << rows << " rows, column " << j;
        EXPECT_NEAR(got_beta[j], dbeta[j], 1e-6 * rows)
            << shape << " shape, " << rows << " rows, column " << j;
      }
    }
  }
  ResetTestOption("kernel_shape");
}

// eps goes under the square root with the variance: rows (1, -1) have
// variance 1, so y = +-1 / sqrt(1 + eps); with eps 0.5 that is +-0.8165,
// not the +-0.6667 of eps added to the standard deviation (Caffe's MVN).
TEST(LayerNorm, EpsIsAddedToTheVariance) {
  for (const char* rows : {"gpu", "cpu"}) {
    RowShapeScope scope(rows);
    Blob bottom(TestContext(), {2, 2}), top(TestContext());
    bottom.WriteData(std::vector<float>{1.f, -1.f, 3.f, 5.f});
    auto layer = MakeLayer("type: 'LayerNorm' layer_norm_param { eps: 0.5 }");
    layer->SetUp({&bottom}, {&top});
    layer->Forward({&bottom}, {&top});
    const double v = 1.0 / std::sqrt(1.5);
    const std::vector<float> y = top.ReadData();
    const std::vector<double> expected{v, -v, -v, v};
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[i], expected[i], 1e-6) << rows << " shape, " << i;
  }
}

TEST(LayerNorm, DefaultsAreOnesAndZeros) {
  Blob bottom(TestContext(), {2, 3, 4}), top(TestContext());
  auto layer = MakeLayer("type: 'LayerNorm' layer_norm_param { axis: 1 }");
  layer->SetUp({&bottom}, {&top});
  ASSERT_EQ(layer->blobs().size(), 2u);
  EXPECT_EQ(layer->blobs()[0]->shape(), (std::vector<int>{3, 4}));
  EXPECT_EQ(layer->blobs()[0]->ReadData(), std::vector<float>(12, 1.f));
  EXPECT_EQ(layer->blobs()[1]->ReadData(), std::vector<float>(12, 0.f));
}

TEST(LayerNorm, InPlaceMatchesOutOfPlace) {
  for (const char* rows : {"gpu", "cpu"}) {
    RowShapeScope scope(rows);
    ExpectInPlaceMatchesOutOfPlace("type: 'LayerNorm'", {3, 13},
                                   [](Blob* x) { FillGaussian(x, 0.f, 2.f, 5); });
  }
}

TEST(LayerNorm, BadParametersAndShapesAreErrors) {
  Blob x(TestContext(), {2, 5}), y(TestContext());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"eps: -1", "eps must be finite and >= 0"},
      {"axis: 2", "axis 2 is out of range for the input 2 5 (10)"},
      {"axis: -3", "axis -3 is out of range"},
  };
  for (const auto& c : cases) {
    try {
      MakeLayer("type: 'LayerNorm' layer_norm_param { " + c.first + " }")->SetUp({&x}, {&y});
      ADD_FAILURE() << c.first << " accepted";
    } catch (const Error& e) {
      const std::string error = e.what();
      EXPECT_NE(error.find("layer 'test_layer' (LayerNorm)"), std::string::npos) << error;
      EXPECT_NE(error.find(c.second), std::string::npos) << c.first << ": " << error;
    }
  }
  // gamma was made for rows of 5; an input with rows of 6 does not fit it.
  auto layer = MakeLayer("type: 'LayerNorm'");
  layer->SetUp({&x}, {&y});
  Blob wider(TestContext(), {2, 6});
  try {
    layer->Reshape({&wider}, {&y});
    ADD_FAILURE() << "rows of 6 accepted by gamma of 5";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gamma has shape 5 (5)"), std::string::npos)
        << e.what();
  }
}

}  // namespace test
}  // namespace dlcaffe
