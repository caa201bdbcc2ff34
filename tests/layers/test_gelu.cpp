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

// Forces the pointwise generator's kernel shape for one scope.
struct KernelShapeScope {
  explicit KernelShapeScope(const char* shape) { SetTestOption("kernel_shape", shape); }
  ~KernelShapeScope() { ResetTestOption("kernel_shape"); }
};

double ReferenceGelu(double x, bool tanh_form) {
  if (tanh_form) {
    const double k = std::sqrt(2.0 / M_PI);
    return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
  }
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

std::string GeluText(bool tanh_form) {
  return std::string("type: 'GELU'") + (tanh_form ? " gelu_param { approximate: TANH }" : "");
}

}  // namespace

class GeluTest : public ::testing::TestWithParam<std::vector<int>> {};

TEST_P(GeluTest, ForwardMatchesReference) {
  for (const char* shape : {"cpu", "gpu"}) {
    KernelShapeScope scope(shape);
    for (bool tanh_form : {false, true}) {
      Blob bottom(TestContext(), GetParam()), top(TestContext());
      FillGaussian(&bottom, 0.f, 3.f, 7);
      auto layer = MakeLayer(GeluText(tanh_form));
      layer->SetUp({&bottom}, {&top});
      ASSERT_EQ(top.shape(), bottom.shape());
      layer->Forward({&bottom}, {&top});
      std::vector<float> x = bottom.ReadData(), y = top.ReadData();
      // erf and tanh are accurate to a few ulp of 1; 1 + erf(.) carries
      // that absolute error, which 0.5 * x scales: 1e-6 * max(1, |x|).
      for (size_t i = 0; i < x.size(); ++i) {
        const double expected = ReferenceGelu(x[i], tanh_form);
        ASSERT_NEAR(y[i], expected, 1e-6 * std::max(1.0, std::fabs(double(x[i]))))
            << shape << " shape, " << GeluText(tanh_form) << ", element " << i << ", x "
            << x[i];
      }
    }
  }
}

TEST_P(GeluTest, GradientMatchesNumeric) {
  for (bool tanh_form : {false, true}) {
    SCOPED_TRACE(GeluText(tanh_form));
    Blob bottom(TestContext(), GetParam()), top(TestContext());
    FillGaussian(&bottom, 0.f, 2.f, 11);
    auto layer = MakeLayer(GeluText(tanh_form));
    layer->SetUp({&bottom}, {&top});
    CheckGradient(*layer, {&bottom}, {&top});
  }
}

INSTANTIATE_TEST_SUITE_P(OddShapes, GeluTest,
                         ::testing::Values(std::vector<int>{1}, std::vector<int>{3, 13},
                                           std::vector<int>{2, 3, 13, 1},
                                           std::vector<int>{127, 3}));

// Values of both formulas in double precision (Python's math.erf and
// math.tanh; torch.nn.functional.gelu gives the same): the two forms differ
// by 1.5e-4 at x = 1, far more than the tolerance, so a layer that ignored
// `approximate` fails here.
TEST(Gelu, KnownValues) {
  const std::vector<float> x{-3.f, -1.f, 0.f, 0.5f, 1.f, 2.f};
  const std::vector<double> exact{-0.0040496941, -0.1586552539, 0.0,
                                  0.3457312306,  0.8413447461,  1.9544997361};
  const std::vector<double> tanh_form{-0.0036373921, -0.1588080094, 0.0,
                                      0.3457140098,  0.8411919906,  1.9545976941};
  for (bool use_tanh : {false, true}) {
    Blob bottom(TestContext(), {6}), top(TestContext());
    bottom.WriteData(x);
    auto layer = MakeLayer(GeluText(use_tanh));
    layer->SetUp({&bottom}, {&top});
    layer->Forward({&bottom}, {&top});
    const std::vector<float> y = top.ReadData();
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_NEAR(y[i], (use_tanh ? tanh_form : exact)[i], 2e-6)
          << GeluText(use_tanh) << ", x " << x[i];
  }
}

TEST(Gelu, InPlaceMatchesOutOfPlace) {
  for (bool tanh_form : {false, true})
    ExpectInPlaceMatchesOutOfPlace(GeluText(tanh_form), {3, 13},
                                   [](Blob* x) { FillGaussian(x, 0.f, 2.f, 5); });
}

TEST(Gelu, WrongBlobCountIsAnError) {
  Blob a(TestContext(), {3}), b(TestContext(), {3}), top(TestContext());
  try {
    MakeLayer(GeluText(false))->SetUp({&a, &b}, {&top});
    ADD_FAILURE() << "two bottoms accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'test_layer' (GELU)"), std::string::npos)
        << e.what();
  }
}

}  // namespace test
}  // namespace dlcaffe
