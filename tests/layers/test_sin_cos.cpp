#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "util/gradient_checker.hpp"
#include "util/in_place_check.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

class SinCosTest : public ::testing::TestWithParam<std::vector<int>> {};

// Angles up to a few hundred radians, as a rotary table's at late positions:
// OpenCL's sin and cos are within 4 ulp over the whole range, so the
// result is within 4 ulp of 1 (the largest |y|) of double's.
TEST_P(SinCosTest, ForwardMatchesReference) {
  for (const std::string type : {"Sin", "Cos"}) {
    Blob bottom(TestContext(), GetParam()), top(TestContext());
    FillGaussian(&bottom, 0.f, 100.f, 7);
    auto layer = MakeLayer("type: '" + type + "'");
    layer->SetUp({&bottom}, {&top});
    ASSERT_EQ(top.shape(), bottom.shape());
    layer->Forward({&bottom}, {&top});
    const std::vector<float> x = bottom.ReadData(), y = top.ReadData();
    for (size_t i = 0; i < x.size(); ++i) {
      const double expected = type == "Sin" ? std::sin(double(x[i])) : std::cos(double(x[i]));
      ASSERT_NEAR(y[i], expected, 4.8e-7) << type << ", element " << i << ", x " << x[i];
    }
  }
}

TEST_P(SinCosTest, GradientMatchesNumeric) {
  for (const std::string type : {"Sin", "Cos"}) {
    SCOPED_TRACE(type);
    Blob bottom(TestContext(), GetParam()), top(TestContext());
    FillGaussian(&bottom, 0.f, 2.f, 11);
    auto layer = MakeLayer("type: '" + type + "'");
    layer->SetUp({&bottom}, {&top});
    CheckGradient(*layer, {&bottom}, {&top});
  }
}

// The gradient needs x: in place, the layer keeps a copy of it.
TEST(SinCos, InPlaceMatchesOutOfPlace) {
  for (const std::string type : {"Sin", "Cos"})
    ExpectInPlaceMatchesOutOfPlace("type: '" + type + "'", {3, 13},
                                   [](Blob* x) { FillGaussian(x, 0.f, 2.f, 5); });
}

INSTANTIATE_TEST_SUITE_P(OddShapes, SinCosTest,
                         ::testing::Values(std::vector<int>{1}, std::vector<int>{3, 13},
                                           std::vector<int>{2, 3, 13, 1},
                                           std::vector<int>{127, 3}));

}  // namespace test
}  // namespace dlcaffe
