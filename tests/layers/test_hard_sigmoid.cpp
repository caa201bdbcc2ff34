#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "util/gradient_checker.hpp"
#include "util/in_place_check.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

// Forces the pointwise generator's kernel shape for one scope.
struct KernelShapeScope {
  explicit KernelShapeScope(const char* shape) { SetTestOption("kernel_shape", shape); }
  ~KernelShapeScope() { ResetTestOption("kernel_shape"); }
};

struct Params {
  float alpha, beta;
};
// ONNX's default, PyTorch's Hardsigmoid, and a decreasing one.
const Params kParams[] = {{0.2f, 0.5f}, {1.f / 6.f, 0.5f}, {-0.3f, 0.1f}};

// Every digit a float needs (std::to_string keeps 6 decimals: 1/6 would
// become 0.166667).
std::string Exact(float v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", v);
  return text;
}

std::string HardSigmoidText(Params p) {
  return "type: 'HardSigmoid' hard_sigmoid_param { alpha: " + Exact(p.alpha) +
         " beta: " + Exact(p.beta) + " }";
}

double Reference(double x, Params p) {
  return std::max(0.0, std::min(1.0, double(p.alpha) * x + double(p.beta)));
}

}  // namespace

class HardSigmoidTest : public ::testing::TestWithParam<std::vector<int>> {};

TEST_P(HardSigmoidTest, ForwardMatchesReference) {
  for (const char* shape : {"cpu", "gpu"}) {
    KernelShapeScope scope(shape);
    for (Params p : kParams) {
      Blob bottom(TestContext(), GetParam()), top(TestContext());
      FillGaussian(&bottom, 0.f, 3.f, 7);
      auto layer = MakeLayer(HardSigmoidText(p));
      layer->SetUp({&bottom}, {&top});
      ASSERT_EQ(top.shape(), bottom.shape());
      layer->Forward({&bottom}, {&top});
      std::vector<float> x = bottom.ReadData(), y = top.ReadData();
      // One float multiply-add (maybe fused): half an ulp or two of 1.
      for (size_t i = 0; i < x.size(); ++i)
        ASSERT_NEAR(y[i], Reference(x[i], p), 2e-7)
            << shape << " shape, " << HardSigmoidText(p) << ", element " << i << ", x " << x[i];
    }
  }
}

// The gradient jumps where alpha x + beta crosses 0 and 1; inputs are moved
// at least 0.02 / |alpha| (twice the checker's step in x) away from both.
TEST_P(HardSigmoidTest, GradientMatchesNumeric) {
  for (Params p : kParams) {
    SCOPED_TRACE(HardSigmoidText(p));
    Blob bottom(TestContext(), GetParam()), top(TestContext());
    FillGaussian(&bottom, 0.f, 3.f, 11);
    std::vector<float> x = bottom.ReadData();
    for (float& v : x)
      for (float level : {0.f, 1.f}) {
        const float kink = (level - p.beta) / p.alpha;
        if (std::fabs(v - kink) < 0.02f) v = kink + (v < kink ? -0.02f : 0.02f);
      }
    bottom.WriteData(x);
    auto layer = MakeLayer(HardSigmoidText(p));
    layer->SetUp({&bottom}, {&top});
    CheckGradient(*layer, {&bottom}, {&top});
  }
}

INSTANTIATE_TEST_SUITE_P(OddShapes, HardSigmoidTest,
                         ::testing::Values(std::vector<int>{1}, std::vector<int>{3, 13},
                                           std::vector<int>{2, 3, 13, 1},
                                           std::vector<int>{127, 3}));

// PyTorch's hardsigmoid_backward passes alpha * dy for -3 < x < 3 only: at
// the kinks (x = -3 and 3 for alpha 1/6, beta 1/2) the gradient is 0. In
// place as well (the layer reads y, not x).
TEST(HardSigmoid, GradientAtTheKinksIsPyTorchs) {
  const Params p{1.f / 6.f, 0.5f};
  const std::vector<float> x{-4.f, -3.f, -1.f, 0.f, 3.f, 4.f};
  const std::vector<float> expected_y{0.f, 0.f, 1.f / 3.f, 0.5f, 1.f, 1.f};
  const std::vector<float> expected_dx{0.f, 0.f, 1.f / 6.f, 1.f / 6.f, 0.f, 0.f};
  for (bool in_place : {false, true}) {
    Blob bottom(TestContext(), {6}), separate_top(TestContext());
    Blob* top = in_place ? &bottom : &separate_top;
    bottom.WriteData(x);
    auto layer = MakeLayer(HardSigmoidText(p));
    layer->SetUp({&bottom}, {top});
    layer->Forward({&bottom}, {top});
    const std::vector<float> y = top->ReadData();
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], expected_y[i], 1e-7) << x[i];
    top->SetDiff(1.f);
    layer->Backward({top}, {true}, {&bottom});
    const std::vector<float> dx = bottom.ReadDiff();
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_NEAR(dx[i], expected_dx[i], 1e-7)
          << "x " << x[i] << (in_place ? ", in place" : ", out of place");
  }
}

TEST(HardSigmoid, InPlaceMatchesOutOfPlace) {
  ExpectInPlaceMatchesOutOfPlace(HardSigmoidText({0.2f, 0.5f}), {3, 13},
                                 [](Blob* x) { FillGaussian(x, 0.f, 3.f, 5); });
}

TEST(HardSigmoid, BadParametersAreErrors) {
  Blob x(TestContext(), {3}), y(TestContext());
  for (const char* param : {"alpha: inf", "beta: nan"}) {
    try {
      MakeLayer(std::string("type: 'HardSigmoid' hard_sigmoid_param { ") + param + " }")
          ->SetUp({&x}, {&y});
      ADD_FAILURE() << param << " accepted";
    } catch (const Error& e) {
      const std::string error = e.what();
      EXPECT_NE(error.find("layer 'test_layer' (HardSigmoid)"), std::string::npos) << error;
      EXPECT_NE(error.find("must be finite"), std::string::npos) << error;
    }
  }
}

}  // namespace test
}  // namespace dlcaffe
