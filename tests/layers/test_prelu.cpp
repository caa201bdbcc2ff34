#include <gtest/gtest.h>

#include "util/gradient_checker.hpp"
#include "util/in_place_check.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

// Random slopes (some negative, some above 1) so that a wrong channel index
// shows in the output.
static std::string PReLUText(bool channel_shared) {
  return std::string("type: 'PReLU' prelu_param { channel_shared: ") +
         (channel_shared ? "true" : "false") +
         " filler { type: 'uniform' min: -0.5 max: 1.5 } }";
}

// Channel c of element i is (i / dim) % channels, dim = count from axis 2.
static std::vector<float> ReferencePReLU(const std::vector<float>& x,
                                         const std::vector<int>& shape,
                                         const std::vector<float>& slopes) {
  int dim = 1;
  for (size_t a = 2; a < shape.size(); ++a) dim *= shape[a];
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float slope = slopes.size() == 1 ? slopes[0] : slopes[(i / dim) % shape[1]];
    y[i] = x[i] > 0 ? x[i] : slope * x[i];
  }
  return y;
}

class PReLUTest : public ::testing::TestWithParam<std::vector<int>> {};

TEST_P(PReLUTest, ForwardMatchesReference) {
  for (bool shared : {false, true}) {
    Blob bottom(TestContext(), GetParam()), top(TestContext());
    FillGaussian(&bottom, 0.f, 1.f, 7);
    auto layer = MakeLayer(PReLUText(shared));
    layer->SetUp({&bottom}, {&top});
    ASSERT_EQ(top.shape(), bottom.shape());
    ASSERT_EQ(layer->blobs().size(), 1u);
    const std::vector<float> slopes = layer->blobs()[0]->ReadData();
    ASSERT_EQ(slopes.size(), shared ? 1u : size_t(GetParam()[1]));
    layer->Forward({&bottom}, {&top});
    const std::vector<float> expected = ReferencePReLU(bottom.ReadData(), GetParam(), slopes);
    const std::vector<float> y = top.ReadData();
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_FLOAT_EQ(y[i], expected[i]) << "shared " << shared << ", element " << i;
  }
}

// Checks the bottom and the slope blob.
TEST_P(PReLUTest, GradientMatchesNumeric) {
  for (bool shared : {false, true}) {
    SCOPED_TRACE(shared ? "channel_shared" : "per channel");
    Blob bottom(TestContext(), GetParam()), top(TestContext());
    FillGaussian(&bottom, 0.f, 1.f, 11);
    auto layer = MakeLayer(PReLUText(shared));
    layer->SetUp({&bottom}, {&top});
    GradientCheckOptions options;
    options.kink_range = 0.02f;  // kink at 0 (step 0.01)
    CheckGradient(*layer, {&bottom}, {&top}, {}, options);
  }
}

// Caffe's layout: one slope per channel, shape {C}, or a scalar (shape {})
// when shared; the default filler is constant 0.25.
TEST(PReLU, DefaultSlopesAndBlobShapes) {
  Blob bottom(TestContext(), {2, 3, 5}), top(TestContext());
  auto per_channel = MakeLayer("type: 'PReLU'");
  per_channel->SetUp({&bottom}, {&top});
  EXPECT_EQ(per_channel->blobs()[0]->shape(), std::vector<int>{3});
  EXPECT_EQ(per_channel->blobs()[0]->ReadData(), std::vector<float>(3, 0.25f));
  auto shared = MakeLayer("type: 'PReLU' prelu_param { channel_shared: true }");
  shared->SetUp({&bottom}, {&top});
  EXPECT_EQ(shared->blobs()[0]->shape(), std::vector<int>{});
  EXPECT_EQ(shared->blobs()[0]->ReadData(), std::vector<float>(1, 0.25f));
}

// In place, Forward keeps a copy of x (Caffe's bottom_memory_): the bottom
// and slope gradients match the out-of-place ones exactly.
TEST(PReLU, InPlaceMatchesOutOfPlace) {
  for (bool shared : {false, true})
    ExpectInPlaceMatchesOutOfPlace(PReLUText(shared), {2, 3, 13, 1},
                                   [](Blob* x) { FillGaussian(x, 0.f, 1.f, 5); });
}

// The slope gradient accumulates (+=), the bottom gradient is written (=),
// and propagate_down false leaves the bottom diff alone.
TEST(PReLU, SlopeGradientAccumulates) {
  Blob x(TestContext(), {2, 3, 13}), y(TestContext());  // 26 elements per channel
  FillGaussian(&x, 0.f, 1.f, 13);
  auto layer = MakeLayer(PReLUText(false));
  layer->SetUp({&x}, {&y});
  layer->Forward({&x}, {&y});
  y.SetDiff(1.f);
  layer->blobs()[0]->SetDiff(0.f);
  x.SetDiff(7.f);
  layer->Backward({&y}, {true}, {&x});
  const std::vector<float> once = layer->blobs()[0]->ReadDiff();
  const std::vector<float> xs = x.ReadData(), dx = x.ReadDiff();
  const std::vector<float> slopes = layer->blobs()[0]->ReadData();
  std::vector<double> expected(3, 0.0);  // sum of x over x <= 0, with dy = 1
  for (size_t i = 0; i < xs.size(); ++i) {
    const int c = static_cast<int>(i / 13 % 3);
    if (xs[i] <= 0) expected[c] += xs[i];
    EXPECT_EQ(dx[i], xs[i] > 0 ? 1.f : slopes[c]) << "element " << i;
  }
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(once[c], expected[c], 1e-5) << "channel " << c;

  x.SetDiff(7.f);
  layer->Backward({&y}, {false}, {&x});
  const std::vector<float> twice = layer->blobs()[0]->ReadDiff();
  for (int c = 0; c < 3; ++c) EXPECT_EQ(twice[c], 2 * once[c]) << "channel " << c;
  EXPECT_EQ(x.ReadDiff(), std::vector<float>(x.count(), 7.f));
}

TEST(PReLU, RejectsBadShapes) {
  Blob flat(TestContext(), {5}), top(TestContext());
  EXPECT_THROW(MakeLayer("type: 'PReLU'")->SetUp({&flat}, {&top}), Error);
  Blob bottom(TestContext(), {2, 3, 4});
  auto layer = MakeLayer("type: 'PReLU'");
  layer->SetUp({&bottom}, {&top});
  Blob other(TestContext(), {2, 4, 4});  // 4 channels for 3 slopes
  EXPECT_THROW(layer->Reshape({&other}, {&top}), Error);
}

INSTANTIATE_TEST_SUITE_P(OddShapes, PReLUTest,
                         ::testing::Values(std::vector<int>{1, 1}, std::vector<int>{3, 13},
                                           std::vector<int>{2, 3, 13, 1},
                                           std::vector<int>{127, 3},
                                           std::vector<int>{2, 5, 3, 7}));

}  // namespace test
}  // namespace dlcaffe
