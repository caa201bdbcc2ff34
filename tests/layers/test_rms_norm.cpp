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

// Forces the row kernels' shape: "cpu" a row per work-item, "gpu" a row per
// work-group.
struct ShapeScope {
  explicit ShapeScope(const char* shape) { SetTestOption("kernel_shape", shape); }
  ~ShapeScope() { ResetTestOption("kernel_shape"); }
};
const char* const kShapes[] = {"gpu", "cpu"};

struct Case {
  std::vector<int> shape;
  int axis;
  bool affine;
};

std::string RMSNormText(const Case& c, float eps = 1e-6f) {
  return "type: 'RMSNorm' rms_norm_param { axis: " + std::to_string(c.axis) +
         " eps: " + std::to_string(eps) + " elementwise_affine: " +
         (c.affine ? "true" : "false") + " }";
}

std::string Describe(const Case& c) {
  std::string s = "shape";
  for (int d : c.shape) s += " " + std::to_string(d);
  return s + ", " + RMSNormText(c);
}

void PrintTo(const Case& c, std::ostream* os) { *os << Describe(c); }

// Rows of `dim` values: x / sqrt(mean(x^2) + eps) * scale in double.
std::vector<double> ReferenceRMSNorm(const std::vector<float>& x, int dim, double eps,
                                     const std::vector<float>& scale) {
  std::vector<double> y(x.size());
  for (size_t base = 0; base < x.size(); base += dim) {
    double squares = 0;
    for (int j = 0; j < dim; ++j) squares += double(x[base + j]) * x[base + j];
    const double rstd = 1.0 / std::sqrt(squares / dim + eps);
    for (int j = 0; j < dim; ++j)
      y[base + j] = x[base + j] * rstd * (scale.empty() ? 1.0 : scale[j]);
  }
  return y;
}

int RowLength(const Case& c) {
  const int axis = c.axis < 0 ? c.axis + static_cast<int>(c.shape.size()) : c.axis;
  int dim = 1;
  for (size_t i = axis; i < c.shape.size(); ++i) dim *= c.shape[i];
  return dim;
}

// A random scale, so that a layer that ignored it fails.
void FillScale(Layer* layer) {
  if (!layer->blobs().empty()) FillGaussian(layer->blobs()[0].get(), 1.f, 0.5f, 40);
}

}  // namespace

class RMSNormTest : public ::testing::TestWithParam<Case> {};

TEST_P(RMSNormTest, ForwardMatchesReference) {
  const Case& c = GetParam();
  for (const char* shape : kShapes) {
    ShapeScope scope(shape);
    Blob bottom(TestContext(), c.shape), top(TestContext());
    // Off zero, so that a mean subtracted (LayerNorm) would show.
    FillGaussian(&bottom, 0.7f, 2.f, 7);
    auto layer = MakeLayer(RMSNormText(c));
    layer->SetUp({&bottom}, {&top});
    ASSERT_EQ(top.shape(), bottom.shape());
    ASSERT_EQ(layer->blobs().size(), c.affine ? 1u : 0u);
    FillScale(layer.get());
    layer->Forward({&bottom}, {&top});
    std::vector<float> scale;
    if (c.affine) scale = layer->blobs()[0]->ReadData();
    const std::vector<double> expected =
        ReferenceRMSNorm(bottom.ReadData(), RowLength(c), 1e-6, scale);
    const std::vector<float> y = top.ReadData();
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_NEAR(y[i], expected[i], 1e-5 * std::max(1.0, std::fabs(expected[i])))
          << shape << " shape, " << Describe(c) << ", element " << i;
  }
}

TEST_P(RMSNormTest, GradientMatchesNumeric) {
  const Case& c = GetParam();
  GradientCheckOptions options;
  // A row of one value is sign(x) * scale: a kink at 0.
  if (RowLength(c) == 1) options.kink_range = 0.05f;
  for (const char* shape : kShapes) {
    ShapeScope scope(shape);
    SCOPED_TRACE(std::string(shape) + " shape, " + Describe(c));
    Blob bottom(TestContext(), c.shape), top(TestContext());
    FillGaussian(&bottom, 0.3f, 1.f, 11);
    auto layer = MakeLayer(RMSNormText(c));
    layer->SetUp({&bottom}, {&top});
    FillScale(layer.get());
    CheckGradient(*layer, {&bottom}, {&top}, {}, options);
  }
}

INSTANTIATE_TEST_SUITE_P(
    OddShapes, RMSNormTest,
    ::testing::Values(Case{{3, 13}, -1, true}, Case{{2, 3, 13}, 1, true},
                      Case{{2, 3, 13}, -1, false}, Case{{2, 3, 5, 7}, 2, true},
                      Case{{13}, 0, true}, Case{{127, 3}, -1, true},
                      // Rows longer than a work-group of 64.
                      Case{{3, 131}, -1, true}, Case{{3, 1}, -1, true}));

// The scale's gradient against double sums over rows, in both shapes, with
// few rows (one chunk, added straight to the diff) and many (chunked sums
// and their finishing pass), accumulated on top of what the diff held.
TEST(RMSNorm, ScaleGradientMatchesReference) {
  for (const char* shape : kShapes) {
    ShapeScope scope(shape);
    for (int rows : {5, 1001}) {
      const int dim = 37;
      Blob bottom(TestContext(), {rows, dim}), top(TestContext());
      FillGaussian(&bottom, 0.5f, 1.5f, 3);
      auto layer = MakeLayer("type: 'RMSNorm'");
      layer->SetUp({&bottom}, {&top});
      FillScale(layer.get());
      layer->Forward({&bottom}, {&top});
      Blob dy_values(TestContext(), {rows, dim});
      FillGaussian(&dy_values, 0.f, 1.f, 4);
      const std::vector<float> dy = dy_values.ReadData();
      top.WriteDiff(dy);
      layer->blobs()[0]->SetDiff(0.5f);
      layer->Backward({&top}, {false}, {&bottom});
      const std::vector<double> xhat = ReferenceRMSNorm(bottom.ReadData(), dim, 1e-6, {});
      std::vector<double> dscale(dim, 0.5);
      for (int r = 0; r < rows; ++r)
        for (int j = 0; j < dim; ++j) dscale[j] += dy[r * dim + j] * xhat[r * dim + j];
      const std::vector<float> got = layer->blobs()[0]->ReadDiff();
      for (int j = 0; j < dim; ++j)
        EXPECT_NEAR(got[j], dscale[j], 1e-6 * rows)
            << shape << " shape, " << rows << " rows, column " << j;
    }
  }
}

// torch.nn.RMSNorm: eps inside the root with the mean square. Rows (1, -1)
// and (3, 4) have mean squares 1 and 12.5; with eps 0.5 the first gives
// +-1 / sqrt(1.5). No mean is subtracted: (3, 4) stays positive.
TEST(RMSNorm, EpsIsAddedToTheMeanSquare) {
  for (const char* shape : kShapes) {
    ShapeScope scope(shape);
    Blob bottom(TestContext(), {2, 2}), top(TestContext());
    bottom.WriteData(std::vector<float>{1.f, -1.f, 3.f, 4.f});
    auto layer = MakeLayer("type: 'RMSNorm' rms_norm_param { eps: 0.5 }");
    layer->SetUp({&bottom}, {&top});
    layer->Forward({&bottom}, {&top});
    const double v = 1.0 / std::sqrt(1.5), w = 1.0 / std::sqrt(13.0);
    const std::vector<float> y = top.ReadData();
    const std::vector<double> expected{v, -v, 3 * w, 4 * w};
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[i], expected[i], 1e-6) << shape << ", " << i;
  }
}

TEST(RMSNorm, DefaultsAreOnesOfTheNormalizedShape) {
  Blob bottom(TestContext(), {2, 3, 4}), top(TestContext());
  auto layer = MakeLayer("type: 'RMSNorm' rms_norm_param { axis: 1 }");
  layer->SetUp({&bottom}, {&top});
  ASSERT_EQ(layer->blobs().size(), 1u);
  EXPECT_EQ(layer->blobs()[0]->shape(), (std::vector<int>{3, 4}));
  EXPECT_EQ(layer->blobs()[0]->ReadData(), std::vector<float>(12, 1.f));
  auto plain = MakeLayer("type: 'RMSNorm' rms_norm_param { elementwise_affine: false }");
  plain->SetUp({&bottom}, {&top});
  EXPECT_TRUE(plain->blobs().empty());
}

TEST(RMSNorm, InPlaceMatchesOutOfPlace) {
  for (const char* shape : kShapes) {
    ShapeScope scope(shape);
    ExpectInPlaceMatchesOutOfPlace("type: 'RMSNorm'", {3, 13},
                                   [](Blob* x) { FillGaussian(x, 0.f, 2.f, 5); });
  }
}

TEST(RMSNorm, BadParametersAndShapesAreErrors) {
  Blob x(TestContext(), {2, 5}), y(TestContext());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"eps: -1", "eps must be finite and >= 0"},
      {"axis: 2", "axis 2 is out of range for the input 2 5 (10)"},
      {"axis: -3", "axis -3 is out of range"},
  };
  for (const auto& c : cases) {
    try {
      MakeLayer("type: 'RMSNorm' rms_norm_param { " + c.first + " }")->SetUp({&x}, {&y});
      ADD_FAILURE() << c.first << " accepted";
    } catch (const Error& e) {
      const std::string error = e.what();
      EXPECT_NE(error.find("layer 'test_layer' (RMSNorm)"), std::string::npos) << error;
      EXPECT_NE(error.find(c.second), std::string::npos) << c.first << ": " << error;
    }
  }
  // The scale was made for rows of 5; rows of 6 do not fit it.
  auto layer = MakeLayer("type: 'RMSNorm'");
  layer->SetUp({&x}, {&y});
  Blob wider(TestContext(), {2, 6});
  try {
    layer->Reshape({&wider}, {&y});
    ADD_FAILURE() << "rows of 6 accepted by a scale of 5";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("scale has shape 5 (5)"), std::string::npos)
        << e.what();
  }
}

}  // namespace test
}  // namespace dlcaffe
