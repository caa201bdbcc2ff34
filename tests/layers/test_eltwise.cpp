#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "dlcaffe/error.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

struct Bottoms {
  Bottoms(int n, const std::vector<int>& shape, unsigned seed) {
    for (int i = 0; i < n; ++i) storage.emplace_back(TestContext(), shape);
    for (Blob& b : storage) {
      FillUniform(&b, -1.f, 1.f, seed++);
      pointers.push_back(&b);
    }
  }
  std::vector<std::vector<float>> Read() const {
    std::vector<std::vector<float>> values;
    for (const Blob& b : storage) values.push_back(b.ReadData());
    return values;
  }
  std::vector<Blob> storage;
  std::vector<Blob*> pointers;
};

static const std::vector<std::vector<int>> kShapes = {{1}, {3, 13}, {2, 3, 1, 7}};

TEST(Eltwise, ProdForwardMatchesReference) {
  for (const auto& shape : kShapes) {
    Bottoms in(3, shape, 1);
    Blob top(TestContext());
    auto layer = MakeLayer("type: 'Eltwise' eltwise_param { operation: PROD }");
    layer->SetUp(in.pointers, {&top});
    ASSERT_EQ(top.shape(), shape);
    layer->Forward(in.pointers, {&top});
    const auto x = in.Read();
    const std::vector<float> y = top.ReadData();
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_FLOAT_EQ(y[i], x[0][i] * x[1][i] * x[2][i]) << i;
  }
}

TEST(Eltwise, SumWithCoefficientsMatchesReference) {
  for (const std::string coeff : {"", "coeff: 1 coeff: -0.5 coeff: 2 coeff: 0.25"}) {
    SCOPED_TRACE(coeff);
    const std::vector<float> c = coeff.empty() ? std::vector<float>{1, 1, 1, 1}
                                               : std::vector<float>{1, -0.5f, 2, 0.25f};
    Bottoms in(4, {2, 3, 1, 7}, 5);
    Blob top(TestContext());
    auto layer = MakeLayer("type: 'Eltwise' eltwise_param { operation: SUM " + coeff + " }");
    layer->SetUp(in.pointers, {&top});
    layer->Forward(in.pointers, {&top});
    const auto x = in.Read();
    const std::vector<float> y = top.ReadData();
    for (size_t i = 0; i < y.size(); ++i) {
      double ref = 0;
      for (int k = 0; k < 4; ++k) ref += double(c[k]) * x[k][i];
      ASSERT_NEAR(y[i], ref, 1e-6) << i;
    }
    // Backward scales the top diff by each coefficient.
    std::vector<float> dy(top.count());
    for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.5f * float(i % 7) - 1.f;
    top.WriteDiff(dy);
    layer->Backward({&top}, {true, true, true, true}, in.pointers);
    for (int k = 0; k < 4; ++k) {
      const std::vector<float> dx = in.storage[k].ReadDiff();
      for (size_t i = 0; i < dx.size(); ++i) ASSERT_FLOAT_EQ(dx[i], c[k] * dy[i]) << k << " " << i;
    }
  }
}

TEST(Eltwise, MaxForwardAndBackwardMatchReference) {
  for (const auto& shape : kShapes) {
    Bottoms in(3, shape, 9);
    Blob top(TestContext());
    auto layer = MakeLayer("type: 'Eltwise' eltwise_param { operation: MAX }");
    layer->SetUp(in.pointers, {&top});
    layer->Forward(in.pointers, {&top});
    const auto x = in.Read();
    const std::vector<float> y = top.ReadData();
    std::vector<float> dy(y.size());
    for (size_t i = 0; i < dy.size(); ++i) dy[i] = float(i % 5) + 1.f;
    top.WriteDiff(dy);
    layer->Backward({&top}, {true, true, true}, in.pointers);
    std::vector<std::vector<float>> dx;
    for (const Blob& b : in.storage) dx.push_back(b.ReadDiff());
    for (size_t i = 0; i < y.size(); ++i) {
      // Caffe's order: bottom 1 wins a tie with bottom 0, later ones must be greater.
      int best = x[0][i] > x[1][i] ? 0 : 1;
      if (x[2][i] > x[best][i]) best = 2;
      ASSERT_EQ(y[i], x[best][i]) << i;
      for (int k = 0; k < 3; ++k) ASSERT_EQ(dx[k][i], k == best ? dy[i] : 0.f) << k << " " << i;
    }
  }
}

// Caffe's CPU code: bottom 0 beats bottom 1 only when strictly greater (a tie
// goes to bottom 1); bottoms 2 and up must beat the running maximum strictly
// (a tie keeps the earlier bottom). The gradient follows the winner.
TEST(Eltwise, MaxTieBreakingAsCaffe) {
  Blob a(TestContext(), {4}), b(TestContext(), {4}), c(TestContext(), {4}), top(TestContext());
  a.WriteData({1, 5, 2, 3});
  b.WriteData({1, 2, 5, 3});
  c.WriteData({0, 5, 5, 3});
  auto layer = MakeLayer("type: 'Eltwise' eltwise_param { operation: MAX }");
  layer->SetUp({&a, &b, &c}, {&top});
  layer->Forward({&a, &b, &c}, {&top});
  EXPECT_EQ(top.ReadData(), (std::vector<float>{1, 5, 5, 3}));
  top.WriteDiff({10, 20, 30, 40});
  layer->Backward({&top}, {true, true, true}, {&a, &b, &c});
  // element 0: a == b -> b; 1: a beats b, c ties a -> a; 2: b beats a, c ties
  // b -> b; 3: all equal -> b (then c does not beat it).
  EXPECT_EQ(a.ReadDiff(), (std::vector<float>{0, 20, 0, 0}));
  EXPECT_EQ(b.ReadDiff(), (std::vector<float>{10, 0, 30, 40}));
  EXPECT_EQ(c.ReadDiff(), (std::vector<float>{0, 0, 0, 0}));
}

TEST(Eltwise, ProdWithZeros) {
  Blob a(TestContext(), {4}), b(TestContext(), {4}), c(TestContext(), {4}), top(TestContext());
  a.WriteData({0, 2, 0, 3});
  b.WriteData({4, 0, 0, 5});
  c.WriteData({2, 3, 7, -1});
  const std::vector<float> dy = {1, 2, 3, 4};
  {
    // Stable (default): the product of the other bottoms, right at zeros.
    auto layer = MakeLayer("type: 'Eltwise' eltwise_param { operation: PROD }");
    layer->SetUp({&a, &b, &c}, {&top});
    layer->Forward({&a, &b, &c}, {&top});
    EXPECT_EQ(top.ReadData(), (std::vector<float>{0, 0, 0, -15}));
    top.WriteDiff(dy);
    layer->Backward({&top}, {true, true, true}, {&a, &b, &c});
    EXPECT_EQ(a.ReadDiff(), (std::vector<float>{8, 0, 0, -20}));
    EXPECT_EQ(b.ReadDiff(), (std::vector<float>{0, 12, 0, -12}));
    EXPECT_EQ(c.ReadDiff(), (std::vector<float>{0, 0, 0, 60}));
  }
  {
    // Without stable_prod_grad, Caffe divides the top by the bottom: right
    // where that bottom is nonzero, NaN (0 / 0) where it is zero.
    auto layer = MakeLayer(
        "type: 'Eltwise' eltwise_param { operation: PROD stable_prod_grad: false }");
    layer->SetUp({&a, &b, &c}, {&top});
    layer->Forward({&a, &b, &c}, {&top});
    top.WriteDiff(dy);
    layer->Backward({&top}, {true, true, true}, {&a, &b, &c});
    const std::vector<float> da = a.ReadDiff(), db = b.ReadDiff(), dc = c.ReadDiff();
    EXPECT_TRUE(std::isnan(da[0]));
    EXPECT_EQ(da[1], 0.f);
    EXPECT_TRUE(std::isnan(da[2]));
    EXPECT_EQ(da[3], -20.f);
    EXPECT_EQ(db[0], 0.f);
    EXPECT_TRUE(std::isnan(db[1]));
    EXPECT_TRUE(std::isnan(db[2]));
    EXPECT_EQ(db[3], -12.f);
    EXPECT_EQ(dc, (std::vector<float>{0, 0, 0, 60}));
  }
}

TEST(Eltwise, GradientMatchesNumeric) {
  for (const std::string param :
       {"operation: PROD", "operation: PROD stable_prod_grad: false", "operation: SUM",
        "operation: SUM coeff: 1.5 coeff: -0.5 coeff: 0.25"}) {
    SCOPED_TRACE(param);
    Bottoms in(3, {2, 3, 1, 7}, 21);
    // Away from 0, where the unstable PROD gradient divides.
    for (Blob& b : in.storage) FillUniform(&b, 0.2f, 1.5f, 31 + (&b - &in.storage[0]));
    Blob top(TestContext());
    auto layer = MakeLayer("type: 'Eltwise' eltwise_param { " + param + " }");
    layer->SetUp(in.pointers, {&top});
    CheckGradient(*layer, in.pointers, {&top});
  }
}

TEST(Eltwise, MaxGradientMatchesNumeric) {
  // Per element, the bottoms take distinct levels 0.2 apart (in a random
  // order) plus small noise, so a step of 0.01 never changes the winner.
  Bottoms in(3, {3, 13}, 41);
  std::mt19937 rng(43);
  std::uniform_real_distribution<float> noise(-0.05f, 0.05f);
  std::vector<std::vector<float>> values(3, std::vector<float>(39));
  for (int i = 0; i < 39; ++i) {
    std::vector<int> order = {0, 1, 2};
    std::shuffle(order.begin(), order.end(), rng);
    for (int k = 0; k < 3; ++k) values[k][i] = 0.2f * order[k] - 0.2f + noise(rng);
  }
  for (int k = 0; k < 3; ++k) in.storage[k].WriteData(values[k]);
  Blob top(TestContext());
  auto layer = MakeLayer("type: 'Eltwise' eltwise_param { operation: MAX }");
  layer->SetUp(in.pointers, {&top});
  CheckGradient(*layer, in.pointers, {&top});
}

TEST(Eltwise, BadParametersAreErrors) {
  Blob a(TestContext(), {2, 3}), b(TestContext(), {2, 3}), c(TestContext(), {3, 2}),
      top(TestContext());
  struct Case {
    std::string param;
    std::vector<Blob*> bottom;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"coeff: 1", {&a, &b}, "one coeff per bottom blob: 1 coeff(s) for 2 bottoms"},
      {"operation: PROD coeff: 1 coeff: 2", {&a, &b}, "coeff is only for the SUM operation"},
      {"operation: MAX", {&a, &c}, "bottom 0 is 2 3 (6), bottom 1 is 3 2 (6)"},
  };
  for (const Case& c : cases) {
    try {
      MakeLayer("type: 'Eltwise' eltwise_param { " + c.param + " }")->SetUp(c.bottom, {&top});
      ADD_FAILURE() << c.param << " accepted";
    } catch (const Error& e) {
      const std::string error = e.what();
      EXPECT_NE(error.find("layer 'test_layer' (Eltwise)"), std::string::npos) << error;
      EXPECT_NE(error.find(c.message), std::string::npos) << c.param << ": " << error;
    }
  }
  EXPECT_THROW(MakeLayer("type: 'Eltwise'")->SetUp({&a}, {&top}), Error);  // one bottom
}

}  // namespace test
}  // namespace dlcaffe
