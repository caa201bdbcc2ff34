#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "dlcaffe/error.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

// y[c_0, ..., c_{r-1}] = x at coordinates e with e[order[i]] = c_i.
std::vector<float> ReferencePermute(const std::vector<float>& x, const std::vector<int>& shape,
                                    const std::vector<int>& order, std::vector<int>* y_shape) {
  const int rank = static_cast<int>(shape.size());
  y_shape->resize(rank);
  for (int i = 0; i < rank; ++i) (*y_shape)[i] = shape[order[i]];
  std::vector<float> y(x.size());
  std::vector<int> c(rank, 0);  // coordinates in y
  for (size_t j = 0; j < y.size(); ++j) {
    std::vector<int> e(rank);
    for (int i = 0; i < rank; ++i) e[order[i]] = c[i];
    size_t at = 0;
    for (int d = 0; d < rank; ++d) at = at * shape[d] + e[d];
    y[j] = x[at];
    for (int d = rank - 1; d >= 0; --d) {
      if (++c[d] < (*y_shape)[d]) break;
      c[d] = 0;
    }
  }
  return y;
}

std::string Proto(const std::vector<int>& order) {
  std::string s = "type: 'Permute' permute_param {";
  for (int a : order) s += " order: " + std::to_string(a);
  return s + " }";
}

const std::vector<std::vector<int>> kShapes = {
    {13}, {3, 5}, {2, 3, 5}, {2, 1, 3, 5}, {3, 2, 1, 5, 2}, {2, 3, 1, 2, 3, 2}, {2, 1, 3, 1, 2, 3, 1, 2},
    {2, 3, 2, 2, 3, 2, 2, 2}};

// Every permutation for ranks up to 4, a few random ones above.
std::vector<std::vector<int>> Orders(int rank, unsigned seed) {
  std::vector<int> order(rank);
  std::iota(order.begin(), order.end(), 0);
  std::vector<std::vector<int>> orders;
  if (rank <= 4) {
    do orders.push_back(order);
    while (std::next_permutation(order.begin(), order.end()));
    return orders;
  }
  std::mt19937 rng(seed);
  orders.push_back(order);  // identity
  for (int k = 0; k < 6; ++k) {
    std::shuffle(order.begin(), order.end(), rng);
    orders.push_back(order);
  }
  return orders;
}

}  // namespace

TEST(Permute, ForwardAndBackwardMatchReference) {
  for (const auto& shape : kShapes) {
    const int rank = static_cast<int>(shape.size());
    for (const auto& order : Orders(rank, rank)) {
      SCOPED_TRACE(::testing::PrintToString(shape) + " " + Proto(order));
      Blob x(TestContext(), shape), y(TestContext());
      FillUniform(&x, -1.f, 1.f, 3);
      auto layer = MakeLayer(Proto(order));
      layer->SetUp({&x}, {&y});
      std::vector<int> y_shape;
      const std::vector<float> expected = ReferencePermute(x.ReadData(), shape, order, &y_shape);
      ASSERT_EQ(y.shape(), y_shape);
      layer->Forward({&x}, {&y});
      ASSERT_EQ(y.ReadData(), expected);
      // Backward is the inverse permutation of the top's diff.
      std::vector<float> dy(y.count());
      for (size_t i = 0; i < dy.size(); ++i) dy[i] = float(i) + 1.f;
      y.WriteDiff(dy);
      x.SetDiff(-7.f);
      layer->Backward({&y}, {true}, {&x});
      std::vector<int> inverse(rank);
      for (int i = 0; i < rank; ++i) inverse[order[i]] = i;
      std::vector<int> back_shape;
      ASSERT_EQ(x.ReadDiff(), ReferencePermute(dy, y_shape, inverse, &back_shape));
    }
  }
}

// An empty order reverses the axes (ONNX Transpose's default).
TEST(Permute, EmptyOrderReversesAxes) {
  for (const auto& shape : kShapes) {
    SCOPED_TRACE(::testing::PrintToString(shape));
    Blob x(TestContext(), shape), y(TestContext());
    FillUniform(&x, -1.f, 1.f, 5);
    auto layer = MakeLayer("type: 'Permute'");
    layer->SetUp({&x}, {&y});
    std::vector<int> reversed(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) reversed[i] = int(shape.size() - 1 - i);
    std::vector<int> y_shape;
    const std::vector<float> expected = ReferencePermute(x.ReadData(), shape, reversed, &y_shape);
    ASSERT_EQ(y.shape(), y_shape);
    layer->Forward({&x}, {&y});
    EXPECT_EQ(y.ReadData(), expected);
  }
}

// A new bottom shape of the same rank is followed on Reshape.
TEST(Permute, ReshapeFollowsTheBottom) {
  Blob x(TestContext(), {2, 3, 4}), y(TestContext());
  auto layer = MakeLayer(Proto({2, 0, 1}));
  layer->SetUp({&x}, {&y});
  EXPECT_EQ(y.shape(), (std::vector<int>{4, 2, 3}));
  x.Reshape({5, 1, 7});
  FillUniform(&x, -1.f, 1.f, 7);
  layer->Reshape({&x}, {&y});
  EXPECT_EQ(y.shape(), (std::vector<int>{7, 5, 1}));
  layer->Forward({&x}, {&y});
  std::vector<int> y_shape;
  EXPECT_EQ(y.ReadData(), ReferencePermute(x.ReadData(), {5, 1, 7}, {2, 0, 1}, &y_shape));
}

TEST(Permute, GradientMatchesNumeric) {
  for (const auto& c : std::vector<std::pair<std::vector<int>, std::vector<int>>>{
           {{3, 5}, {1, 0}}, {{2, 3, 1, 5}, {3, 1, 0, 2}}, {{2, 3, 2, 1, 3}, {4, 2, 0, 3, 1}}}) {
    SCOPED_TRACE(Proto(c.second));
    Blob x(TestContext(), c.first), y(TestContext());
    FillUniform(&x, -1.f, 1.f, 11);
    auto layer = MakeLayer(Proto(c.second));
    layer->SetUp({&x}, {&y});
    CheckGradient(*layer, {&x}, {&y});
  }
}

TEST(Permute, BadParametersAreErrors) {
  Blob x(TestContext(), {2, 3, 4}), y(TestContext());
  struct Case {
    std::vector<int> order;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{0, 1}, "order has 2 axes, the bottom 2 3 4 (24) has 3"},
      {{0, 1, 1}, "order must be a permutation of 0 .. 2, got 0 1 1"},
      {{0, 3, 1}, "order must be a permutation of 0 .. 2, got 0 3 1"},
  };
  for (const Case& c : cases) {
    try {
      MakeLayer(Proto(c.order))->SetUp({&x}, {&y});
      ADD_FAILURE() << Proto(c.order) << " accepted";
    } catch (const Error& e) {
      const std::string error = e.what();
      EXPECT_NE(error.find("layer 'test_layer' (Permute)"), std::string::npos) << error;
      EXPECT_NE(error.find(c.message), std::string::npos) << error;
    }
  }
  try {
    MakeLayer(Proto({1, 0, 2}))->SetUp({&x}, {&x});
    ADD_FAILURE() << "in place accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot work in place"), std::string::npos) << e.what();
  }
  // Nine axes that no merging reduces: more than the kernel takes.
  Blob nine(TestContext(), std::vector<int>(9, 2));
  try {
    MakeLayer("type: 'Permute'")->SetUp({&nine}, {&y});
    ADD_FAILURE() << "nine reversed axes accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs 9 axes"), std::string::npos) << e.what();
  }
  // Nine axes of which the permutation keeps neighbours together are fine.
  auto merged = MakeLayer(Proto({8, 0, 1, 2, 3, 4, 5, 6, 7}));
  merged->SetUp({&nine}, {&y});
  FillUniform(&nine, -1.f, 1.f, 13);
  merged->Forward({&nine}, {&y});
  std::vector<int> y_shape;
  EXPECT_EQ(y.ReadData(), ReferencePermute(nine.ReadData(), nine.shape(),
                                           {8, 0, 1, 2, 3, 4, 5, 6, 7}, &y_shape));
}

}  // namespace test
}  // namespace dlcaffe
