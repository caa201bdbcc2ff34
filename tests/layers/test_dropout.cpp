#include <gtest/gtest.h>

#include <cmath>

#include "util/gradient_checker.hpp"
#include "util/in_place_check.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

static std::string DropoutText(float ratio, const char* phase = "TRAIN") {
  return std::string("type: 'Dropout' phase: ") + phase +
         " dropout_param { dropout_ratio: " + std::to_string(ratio) + " }";
}

// Inputs that are never 0, so y == 0 marks exactly the dropped elements.
static void FillNonZero(Blob* blob, unsigned seed) { FillUniform(blob, 0.5f, 1.5f, seed); }

// At TRAIN a fraction dropout_ratio is zeroed and the rest scaled by
// 1 / (1 - ratio). The zero count is Binomial(n, ratio): it must lie within
// 5 standard deviations (a false alarm once in ~1.7 million runs).
TEST(Dropout, TrainDropsTheRatioAndScalesTheRest) {
  for (float ratio : {0.5f, 0.2f, 0.9f}) {
    Blob bottom(TestContext(), {127, 3, 13, 13}), top(TestContext());
    FillNonZero(&bottom, 3);
    auto layer = MakeLayer(DropoutText(ratio));
    layer->SetUp({&bottom}, {&top});
    ASSERT_EQ(top.shape(), bottom.shape());
    layer->Forward({&bottom}, {&top});
    const std::vector<float> x = bottom.ReadData(), y = top.ReadData();
    const float scale = 1.f / (1.f - ratio);
    int zeros = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      if (y[i] == 0.f) {
        ++zeros;
      } else {
        ASSERT_FLOAT_EQ(y[i], x[i] * scale) << "ratio " << ratio << ", element " << i;
      }
    }
    const double n = static_cast<double>(x.size());
    const double sigma = std::sqrt(ratio * (1.0 - ratio) / n);
    EXPECT_NEAR(zeros / n, ratio, 5 * sigma) << "ratio " << ratio;
  }
}

// The mask comes from the context's generator: the same seed gives the same
// mask, and every pass draws a fresh one.
TEST(Dropout, FixedSeedIsReproducible) {
  Blob bottom(TestContext(), {3, 13, 13}), top(TestContext());
  FillNonZero(&bottom, 4);
  auto layer = MakeLayer(DropoutText(0.5f));
  layer->SetUp({&bottom}, {&top});
  TestContext().Seed(123);
  layer->Forward({&bottom}, {&top});
  const std::vector<float> first = top.ReadData();
  layer->Forward({&bottom}, {&top});
  const std::vector<float> second = top.ReadData();
  TestContext().Seed(123);
  layer->Forward({&bottom}, {&top});
  EXPECT_EQ(top.ReadData(), first);
  EXPECT_NE(second, first);
}

class DropoutTest : public ::testing::TestWithParam<std::vector<int>> {};

// Backward routes dy through the very mask Forward drew, with the same scale.
TEST_P(DropoutTest, BackwardUsesTheForwardMask) {
  for (float ratio : {0.5f, 0.3f}) {
    Blob bottom(TestContext(), GetParam()), top(TestContext());
    FillNonZero(&bottom, 5);
    auto layer = MakeLayer(DropoutText(ratio));
    layer->SetUp({&bottom}, {&top});
    layer->Forward({&bottom}, {&top});
    const std::vector<float> y = top.ReadData();
    std::vector<float> dy(y.size());
    for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
    top.WriteDiff(dy);
    layer->Backward({&top}, {true}, {&bottom});
    const std::vector<float> dx = bottom.ReadDiff();
    const float scale = 1.f / (1.f - ratio);
    for (size_t i = 0; i < dx.size(); ++i)
      ASSERT_EQ(dx[i], y[i] != 0.f ? dy[i] * scale : 0.f) << "ratio " << ratio << ", " << i;
  }
}

// As Caffe's gradient checker, reseed before every Forward so that each pass
// draws the same mask; then dropout is a fixed linear map to check.
class ReseededLayer : public Layer {
 public:
  explicit ReseededLayer(std::unique_ptr<Layer> inner)
      : Layer(inner->layer_param(), inner->context()), inner_(std::move(inner)) {}
  const char* type() const override { return inner_->type(); }
  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    inner_->Reshape(bottom, top);
  }
  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    inner_->context().Seed(77);
    inner_->Forward(bottom, top);
  }
  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    inner_->Backward(top, propagate_down, bottom);
  }

 private:
  std::unique_ptr<Layer> inner_;
};

TEST_P(DropoutTest, GradientMatchesNumeric) {
  for (const char* phase : {"TRAIN", "TEST"}) {
    SCOPED_TRACE(phase);
    Blob bottom(TestContext(), GetParam()), top(TestContext());
    FillGaussian(&bottom, 0.f, 1.f, 11);
    auto inner = MakeLayer(DropoutText(0.4f, phase));
    inner->SetUp({&bottom}, {&top});
    ReseededLayer layer(std::move(inner));
    CheckGradient(layer, {&bottom}, {&top});
  }
}

// At TEST, dropout with scale_train (Caffe's default) is the identity.
TEST_P(DropoutTest, TestPhaseIsIdentity) {
  for (bool in_place : {false, true}) {
    Blob bottom(TestContext(), GetParam()), separate_top(TestContext());
    Blob* top = in_place ? &bottom : &separate_top;
    FillGaussian(&bottom, 0.f, 1.f, 6);
    const std::vector<float> x = bottom.ReadData();
    auto layer = MakeLayer(DropoutText(0.5f, "TEST"));
    layer->SetUp({&bottom}, {top});
    layer->Forward({&bottom}, {top});
    EXPECT_EQ(top->ReadData(), x) << (in_place ? "in place" : "out of place");
    std::vector<float> dy(x.size());
    for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
    top->WriteDiff(dy);
    layer->Backward({top}, {true}, {&bottom});
    EXPECT_EQ(bottom.ReadDiff(), dy) << (in_place ? "in place" : "out of place");
  }
}

TEST(Dropout, InPlaceMatchesOutOfPlace) {
  // The same seed before each Forward gives both the same mask.
  ExpectInPlaceMatchesOutOfPlace(
      DropoutText(0.5f), {3, 13}, [](Blob* x) { FillNonZero(x, 8); },
      [] { TestContext().Seed(9); });
}

TEST(Dropout, RejectsBadRatio) {
  for (float ratio : {1.f, -0.1f, 1.5f}) {
    Blob x(TestContext(), {3}), y(TestContext());
    EXPECT_THROW(MakeLayer(DropoutText(ratio))->SetUp({&x}, {&y}), Error) << ratio;
  }
}

INSTANTIATE_TEST_SUITE_P(OddShapes, DropoutTest,
                         ::testing::Values(std::vector<int>{1}, std::vector<int>{3, 13},
                                           std::vector<int>{2, 3, 13, 1},
                                           std::vector<int>{127, 3}));

}  // namespace test
}  // namespace dlcaffe
