#include <gtest/gtest.h>

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

const char kErfText[] = "type: 'Erf'";

}  // namespace

class ErfTest : public ::testing::TestWithParam<std::vector<int>> {};

TEST_P(ErfTest, ForwardMatchesReference) {
  for (const char* shape : {"cpu", "gpu"}) {
    KernelShapeScope scope(shape);
    Blob bottom(TestContext(), GetParam()), top(TestContext());
    FillGaussian(&bottom, 0.f, 1.5f, 7);
    auto layer = MakeLayer(kErfText);
    layer->SetUp({&bottom}, {&top});
    ASSERT_EQ(top.shape(), bottom.shape());
    layer->Forward({&bottom}, {&top});
    std::vector<float> x = bottom.ReadData(), y = top.ReadData();
    // OpenCL's erf is within 16 ulp; |erf| <= 1, so 16 ulp of 1 bounds it.
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_NEAR(y[i], std::erf(double(x[i])), 16 * 1.2e-7)
          << shape << " shape, element " << i << ", x " << x[i];
  }
}

TEST_P(ErfTest, GradientMatchesNumeric) {
  Blob bottom(TestContext(), GetParam()), top(TestContext());
  FillGaussian(&bottom, 0.f, 1.f, 11);
  auto layer = MakeLayer(kErfText);
  layer->SetUp({&bottom}, {&top});
  CheckGradient(*layer, {&bottom}, {&top});
}

INSTANTIATE_TEST_SUITE_P(OddShapes, ErfTest,
                         ::testing::Values(std::vector<int>{1}, std::vector<int>{3, 13},
                                           std::vector<int>{2, 3, 13, 1},
                                           std::vector<int>{127, 3}));

TEST(Erf, KnownValuesAndGradient) {
  // erf and 2 / sqrt(pi) * exp(-x^2) in double precision.
  const std::vector<float> x{-2.f, -0.5f, 0.f, 1.f, 4.f};
  const std::vector<double> y{-0.9953222650, -0.5204998778, 0.0, 0.8427007929, 0.9999999846};
  const std::vector<double> dx{0.0206669854, 0.8787825789, 1.1283791671, 0.4151074974,
                               1.2698234e-7};
  Blob bottom(TestContext(), {5}), top(TestContext());
  bottom.WriteData(x);
  auto layer = MakeLayer(kErfText);
  layer->SetUp({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  top.SetDiff(1.f);
  layer->Backward({&top}, {true}, {&bottom});
  const std::vector<float> got_y = top.ReadData(), got_dx = bottom.ReadDiff();
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(got_y[i], y[i], 2e-6) << "x " << x[i];
    EXPECT_NEAR(got_dx[i], dx[i], 2e-6) << "x " << x[i];
  }
}

TEST(Erf, InPlaceMatchesOutOfPlace) {
  ExpectInPlaceMatchesOutOfPlace(kErfText, {3, 13},
                                 [](Blob* x) { FillGaussian(x, 0.f, 1.f, 5); });
}

TEST(Erf, WrongBlobCountIsAnError) {
  Blob a(TestContext(), {3}), b(TestContext(), {3}), top(TestContext());
  try {
    MakeLayer(kErfText)->SetUp({&a, &b}, {&top});
    ADD_FAILURE() << "two bottoms accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'test_layer' (Erf)"), std::string::npos)
        << e.what();
  }
}

}  // namespace test
}  // namespace dlcaffe
