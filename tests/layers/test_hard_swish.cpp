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

const char kHardSwishText[] = "type: 'HardSwish'";

double Reference(double x) { return x * std::max(0.0, std::min(1.0, x / 6.0 + 0.5)); }

}  // namespace

class HardSwishTest : public ::testing::TestWithParam<std::vector<int>> {};

TEST_P(HardSwishTest, ForwardMatchesReference) {
  for (const char* shape : {"cpu", "gpu"}) {
    KernelShapeScope scope(shape);
    Blob bottom(TestContext(), GetParam()), top(TestContext());
    FillGaussian(&bottom, 0.f, 4.f, 7);
    auto layer = MakeLayer(kHardSwishText);
    layer->SetUp({&bottom}, {&top});
    ASSERT_EQ(top.shape(), bottom.shape());
    layer->Forward({&bottom}, {&top});
    std::vector<float> x = bottom.ReadData(), y = top.ReadData();
    // A few float roundings: 1e-6 relative to max(1, |y|).
    for (size_t i = 0; i < x.size(); ++i) {
      const double expected = Reference(x[i]);
      ASSERT_NEAR(y[i], expected, 1e-6 * std::max(1.0, std::fabs(expected)))
          << shape << " shape, element " << i << ", x " << x[i];
    }
  }
}

// The gradient jumps at x = -3 and 3; inputs are moved at least 0.02 (twice
// the checker's step) away from both.
TEST_P(HardSwishTest, GradientMatchesNumeric) {
  Blob bottom(TestContext(), GetParam()), top(TestContext());
  FillGaussian(&bottom, 0.f, 4.f, 11);
  std::vector<float> x = bottom.ReadData();
  for (float& v : x)
    for (float kink : {-3.f, 3.f})
      if (std::fabs(v - kink) < 0.02f) v = kink + (v < kink ? -0.02f : 0.02f);
  bottom.WriteData(x);
  auto layer = MakeLayer(kHardSwishText);
  layer->SetUp({&bottom}, {&top});
  CheckGradient(*layer, {&bottom}, {&top});
}

INSTANTIATE_TEST_SUITE_P(OddShapes, HardSwishTest,
                         ::testing::Values(std::vector<int>{1}, std::vector<int>{3, 13},
                                           std::vector<int>{2, 3, 13, 1},
                                           std::vector<int>{127, 3}));

// PyTorch's hardswish_backward: 0 for x < -3, dy * (x / 3 + 1/2) for
// -3 <= x <= 3 (so -1/2 at -3 and 3/2 at 3), dy above. In place too (the
// layer keeps x: y is 0 both at x = 0 and for x <= -3).
TEST(HardSwish, GradientAtTheKinksIsPyTorchs) {
  const std::vector<float> x{-4.f, -3.f, 0.f, 1.5f, 3.f, 4.f};
  const std::vector<float> expected_y{0.f, 0.f, 0.f, 1.125f, 3.f, 4.f};
  const std::vector<float> expected_dx{0.f, -0.5f, 0.5f, 1.f, 1.5f, 1.f};
  for (bool in_place : {false, true}) {
    Blob bottom(TestContext(), {6}), separate_top(TestContext());
    Blob* top = in_place ? &bottom : &separate_top;
    bottom.WriteData(x);
    auto layer = MakeLayer(kHardSwishText);
    layer->SetUp({&bottom}, {top});
    layer->Forward({&bottom}, {top});
    const std::vector<float> y = top->ReadData();
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], expected_y[i], 1e-6) << x[i];
    top->SetDiff(1.f);
    layer->Backward({top}, {true}, {&bottom});
    const std::vector<float> dx = bottom.ReadDiff();
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_NEAR(dx[i], expected_dx[i], 1e-6)
          << "x " << x[i] << (in_place ? ", in place" : ", out of place");
  }
}

TEST(HardSwish, InPlaceMatchesOutOfPlace) {
  ExpectInPlaceMatchesOutOfPlace(kHardSwishText, {3, 13},
                                 [](Blob* x) { FillGaussian(x, 0.f, 4.f, 5); });
}

TEST(HardSwish, WrongBlobCountIsAnError) {
  Blob a(TestContext(), {3}), top(TestContext());
  try {
    MakeLayer(kHardSwishText)->SetUp({&a}, {&top, &a});
    ADD_FAILURE() << "two tops accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'test_layer' (HardSwish)"), std::string::npos)
        << e.what();
  }
}

}  // namespace test
}  // namespace dlcaffe
