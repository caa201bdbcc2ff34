#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dlcaffe/net.hpp"
#include "util/gradient_checker.hpp"
#include "util/in_place_check.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

const char kMask[] = "type: 'CausalMask'";

std::string Describe(const std::vector<int>& shape) {
  std::string s = "shape";
  for (int d : shape) s += " " + std::to_string(d);
  return s;
}

// Whether element i of ... x tq x tk scores is kept.
bool Kept(size_t i, int tq, int tk) {
  const int k = static_cast<int>(i % tk), q = static_cast<int>(i / tk % tq);
  return k <= q + (tk - tq);
}

// Softmax over the last axis after the mask, as one layer: a top without
// -INFINITY, so that the gradient checker's sums stay finite.
class MaskThenSoftmax : public Layer {
 public:
  explicit MaskThenSoftmax(Context& ctx)
      : Layer(LayerParam("name: 'mask_softmax' type: 'MaskThenSoftmax'"), ctx),
        mask_(MakeLayer(kMask)),
        softmax_(MakeLayer("type: 'Softmax' softmax_param { axis: -1 }")),
        scores_(ctx) {}
  const char* type() const override { return "MaskThenSoftmax"; }
  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    mask_->SetUp(bottom, {&scores_});
    softmax_->SetUp({&scores_}, top);
  }
  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    mask_->Forward(bottom, {&scores_});
    softmax_->Forward({&scores_}, top);
  }
  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    softmax_->Backward(top, {true}, {&scores_});
    mask_->Backward({&scores_}, propagate_down, bottom);
  }

 private:
  std::unique_ptr<Layer> mask_, softmax_;
  Blob scores_;
};

}  // namespace

class CausalMaskTest : public ::testing::TestWithParam<std::vector<int>> {};

TEST_P(CausalMaskTest, ForwardAndBackwardMatchReference) {
  const std::vector<int>& shape = GetParam();
  const int tq = shape[shape.size() - 2], tk = shape.back();
  Blob bottom(TestContext(), shape), top(TestContext());
  FillGaussian(&bottom, 0.f, 3.f, 7);
  auto layer = MakeLayer(kMask);
  layer->SetUp({&bottom}, {&top});
  ASSERT_EQ(top.shape(), shape);
  EXPECT_TRUE(layer->blobs().empty());
  layer->Forward({&bottom}, {&top});
  const std::vector<float> x = bottom.ReadData(), y = top.ReadData();
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = Kept(i, tq, tk) ? x[i] : -std::numeric_limits<float>::infinity();
    ASSERT_EQ(y[i], want) << Describe(shape) << ", element " << i;
  }
  Blob dy_values(TestContext(), shape);
  FillGaussian(&dy_values, 0.f, 1.f, 8);
  const std::vector<float> dy = dy_values.ReadData();
  top.WriteDiff(dy);
  layer->Backward({&top}, {true}, {&bottom});
  const std::vector<float> dx = bottom.ReadDiff();
  for (size_t i = 0; i < dx.size(); ++i)
    ASSERT_EQ(dx[i], Kept(i, tq, tk) ? dy[i] : 0.f) << Describe(shape) << ", element " << i;
}

// The masked scores' numeric gradient is 0 (the softmax gives them weight 0
// whatever they hold), the kept ones' the softmax's.
TEST_P(CausalMaskTest, GradientThroughSoftmaxMatchesNumeric) {
  const std::vector<int>& shape = GetParam();
  SCOPED_TRACE(Describe(shape));
  Blob bottom(TestContext(), shape), top(TestContext());
  FillGaussian(&bottom, 0.f, 1.f, 11);
  MaskThenSoftmax layer(TestContext());
  layer.SetUp({&bottom}, {&top});
  CheckGradient(layer, {&bottom}, {&top});
}

INSTANTIATE_TEST_SUITE_P(OddShapes, CausalMaskTest,
                         ::testing::Values(std::vector<int>{2, 3, 5, 5},
                                           // Queries for the last 3 of 7 positions.
                                           std::vector<int>{2, 3, 7},
                                           std::vector<int>{4, 1, 9}, std::vector<int>{13, 13},
                                           std::vector<int>{2, 127, 127}));

// The mask in place (top: 'scores') before Softmax over the last axis, from
// prototxt: zeros above the diagonal, and each row the softmax of its kept
// prefix.
TEST(CausalMask, SoftmaxAfterItIsCausal) {
  const int b = 2, h = 3, t = 5;
  Net net(NetFromText(R"(
    layer { name: 'in' type: 'Input' top: 'scores'
            input_param { shape { dim: 2 dim: 3 dim: 5 dim: 5 } } }
    layer { name: 'mask' type: 'CausalMask' bottom: 'scores' top: 'scores' }
    layer { name: 'softmax' type: 'Softmax' bottom: 'scores' top: 'prob'
            softmax_param { axis: -1 } })",
                      caffe::TEST),
          TestContext());
  Blob values(TestContext(), {b, h, t, t});
  FillGaussian(&values, 0.f, 2.f, 3);
  const std::vector<float> x = values.ReadData();
  net.blob_by_name("scores")->WriteData(x);
  net.Forward();
  const std::vector<float> p = net.blob_by_name("prob")->ReadData();
  for (int row = 0; row < b * h * t; ++row) {
    const int q = row % t;
    const float* xr = &x[row * t];
    const float* pr = &p[row * t];
    double max = xr[0], sum = 0;
    for (int k = 1; k <= q; ++k) max = std::max<double>(max, xr[k]);
    for (int k = 0; k <= q; ++k) sum += std::exp(xr[k] - max);
    for (int k = 0; k < t; ++k) {
      if (k > q)
        EXPECT_EQ(pr[k], 0.f) << "row " << row << ", key " << k;
      else
        EXPECT_NEAR(pr[k], std::exp(xr[k] - max) / sum, 1e-6) << "row " << row << ", key " << k;
    }
  }
}

TEST(CausalMask, InPlaceMatchesOutOfPlace) {
  ExpectInPlaceMatchesOutOfPlace(kMask, {2, 3, 7},
                                 [](Blob* x) { FillGaussian(x, 0.f, 2.f, 5); });
}

TEST(CausalMask, BadShapesAreErrors) {
  const std::vector<std::pair<std::vector<int>, std::string>> cases = {
      {{7}, "needs scores of at least 2 axes (... x Tq x Tk), got 7 (7)"},
      {{2, 5, 3}, "more queries (5, axis -2) than keys (3, axis -1): the first 2 would see no key"},
  };
  for (const auto& c : cases) {
    Blob x(TestContext(), c.first), y(TestContext());
    try {
      MakeLayer(kMask)->SetUp({&x}, {&y});
      ADD_FAILURE() << Describe(c.first) << " accepted";
    } catch (const Error& e) {
      const std::string error = e.what();
      EXPECT_NE(error.find("layer 'test_layer' (CausalMask)"), std::string::npos) << error;
      EXPECT_NE(error.find(c.second), std::string::npos) << error;
    }
  }
}

}  // namespace test
}  // namespace dlcaffe
