#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "dlcaffe/error.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

// Host reference, Caffe's algorithm: partial_sort of (value, index) pairs with
// std::greater, so equal values put the larger index first.
static std::vector<float> ReferenceArgMax(const Blob& in, bool has_axis, int axis, int top_k,
                                          bool out_max_val) {
  const std::vector<float> x = in.ReadData();
  const int dim = has_axis ? in.shape(axis) : in.count(1);
  const int stride = has_axis ? in.count(axis + 1) : 1;
  const int groups = in.count() / dim;
  std::vector<float> y(has_axis ? groups * top_k
                                : groups * top_k * (out_max_val ? 2 : 1));
  for (int i = 0; i < groups; ++i) {
    std::vector<std::pair<float, int>> v(dim);
    for (int j = 0; j < dim; ++j)
      v[j] = {x[(i / stride * dim + j) * stride + i % stride], j};
    std::partial_sort(v.begin(), v.begin() + top_k, v.end(),
                      std::greater<std::pair<float, int>>());
    for (int k = 0; k < top_k; ++k) {
      const int at = (i / stride * top_k + k) * stride + i % stride;
      if (has_axis) {
        y[at] = out_max_val ? v[k].first : float(v[k].second);
      } else if (out_max_val) {
        y[2 * i * top_k + k] = float(v[k].second);
        y[2 * i * top_k + top_k + k] = v[k].first;
      } else {
        y[at] = float(v[k].second);
      }
    }
  }
  return y;
}

struct ArgMaxCase {
  bool has_axis;
  int axis;
  int top_k;
  bool out_max_val;
  std::string Text() const {
    return "type: 'ArgMax' argmax_param { top_k: " + std::to_string(top_k) +
           (out_max_val ? " out_max_val: true" : "") +
           (has_axis ? " axis: " + std::to_string(axis) : "") + " }";
  }
};

static void CheckAgainstReference(Blob* bottom) {
  const int num_axes = bottom->num_axes();
  for (const ArgMaxCase& c : std::vector<ArgMaxCase>{{false, 0, 1, false},
                                                     {false, 0, 3, false},
                                                     {false, 0, 1, true},
                                                     {false, 0, 4, true},
                                                     {true, 1, 1, false},
                                                     {true, 1, 2, true},
                                                     {true, -1, 3, false},
                                                     {true, -1, 1, true},
                                                     {true, 0, 2, false}}) {
    SCOPED_TRACE(c.Text());
    Blob top(TestContext());
    auto layer = MakeLayer(c.Text());
    layer->SetUp({bottom}, {&top});
    const int axis = c.axis < 0 ? c.axis + num_axes : c.axis;
    std::vector<int> expected;
    if (c.has_axis) {
      expected = bottom->shape();
      expected[axis] = c.top_k;
    } else {
      expected.assign(std::max(num_axes, 3), 1);
      expected[0] = bottom->shape(0);
      expected[1] = c.out_max_val ? 2 : 1;
      expected[2] = c.top_k;
    }
    ASSERT_EQ(top.shape(), expected);
    layer->Forward({bottom}, {&top});
    EXPECT_EQ(top.ReadData(), ReferenceArgMax(*bottom, c.has_axis, axis, c.top_k, c.out_max_val));
  }
}

TEST(ArgMax, ForwardMatchesReference) {
  for (const std::vector<int>& shape : {std::vector<int>{3, 13, 5}, std::vector<int>{5, 7},
                                        std::vector<int>{4, 3, 1, 5}}) {
    Blob bottom(TestContext(), shape);
    FillGaussian(&bottom, 0.f, 1.f, 19);
    CheckAgainstReference(&bottom);
  }
}

TEST(ArgMax, TiesGoToTheLargerIndexAsInCaffe) {
  // Few distinct values: many ties.
  Blob bottom(TestContext(), {3, 13, 5});
  std::mt19937 rng(23);
  std::uniform_int_distribution<int> level(0, 3);
  std::vector<float> values(bottom.count());
  for (float& v : values) v = float(level(rng));
  bottom.WriteData(values);
  CheckAgainstReference(&bottom);
  // And one spelled out.
  Blob row(TestContext(), {1, 5}), top(TestContext());
  row.WriteData({2, 7, 1, 7, 2});
  auto layer = MakeLayer("type: 'ArgMax' argmax_param { top_k: 4 out_max_val: true }");
  layer->SetUp({&row}, {&top});
  layer->Forward({&row}, {&top});
  EXPECT_EQ(top.ReadData(), (std::vector<float>{3, 1, 4, 0, 7, 7, 2, 2}));
}

TEST(ArgMax, BadParametersAreErrors) {
  Blob bottom(TestContext(), {2, 3, 4}), top(TestContext());
  for (const auto& c : std::vector<std::pair<std::string, std::string>>{
           {"top_k: 0", "top_k must be at least 1"},
           {"top_k: 13", "top_k 13 exceeds the number of elements 12"},
           {"top_k: 4 axis: 1", "top_k 4 exceeds the size 3 of axis 1"},
           {"axis: 3", "axis 3 is out of range"},
       }) {
    try {
      MakeLayer("type: 'ArgMax' argmax_param { " + c.first + " }")->SetUp({&bottom}, {&top});
      ADD_FAILURE() << c.first << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("(ArgMax): " + c.second), std::string::npos)
          << e.what();
    }
  }
}

TEST(ArgMax, HasNoGradient) {
  Blob bottom(TestContext(), {2, 3}), top(TestContext());
  auto layer = MakeLayer("type: 'ArgMax'");
  layer->SetUp({&bottom}, {&top});
  EXPECT_FALSE(layer->AllowForceBackward(0));
  layer->Backward({&top}, {false}, {&bottom});  // nothing to do
  EXPECT_THROW(layer->Backward({&top}, {true}, {&bottom}), Error);
}

}  // namespace test
}  // namespace dlcaffe
