#include <gtest/gtest.h>

#include "dlcaffe/error.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

// Host reference: concatenation of row-major blobs along `axis`.
static std::vector<float> ReferenceConcat(const std::vector<Blob*>& bottom, int axis) {
  const int outer = bottom[0]->count(0, axis);
  std::vector<float> out;
  for (int o = 0; o < outer; ++o) {
    for (Blob* b : bottom) {
      const std::vector<float> x = b->ReadData();
      const int block = b->count(axis);
      out.insert(out.end(), x.begin() + o * block, x.begin() + (o + 1) * block);
    }
  }
  return out;
}

struct ConcatCase {
  std::string param;  // concat_param contents
  int axis;           // the canonical axis it means
  std::vector<std::vector<int>> shapes;
};

static std::vector<ConcatCase> Cases() {
  return {
      {"axis: 0", 0, {{2, 3, 5}, {1, 3, 5}, {3, 3, 5}}},
      {"", 1, {{2, 3, 5}, {2, 1, 5}, {2, 7, 5}}},  // the default axis 1
      {"axis: -1", 2, {{2, 3, 5}, {2, 3, 1}, {2, 3, 2}}},
      {"axis: -3", 0, {{1, 3, 13}, {2, 3, 13}}},
      {"concat_dim: 1", 1, {{3, 2, 1, 7}, {3, 5, 1, 7}}},  // legacy
  };
}

static std::vector<Blob> MakeBottoms(const ConcatCase& c, unsigned seed) {
  std::vector<Blob> blobs;
  for (const auto& shape : c.shapes) blobs.emplace_back(TestContext(), shape);
  for (Blob& b : blobs) FillGaussian(&b, 0.f, 1.f, seed++);
  return blobs;
}

static std::vector<Blob*> Pointers(std::vector<Blob>& blobs) {
  std::vector<Blob*> p;
  for (Blob& b : blobs) p.push_back(&b);
  return p;
}

TEST(Concat, ForwardMatchesReference) {
  for (const ConcatCase& c : Cases()) {
    SCOPED_TRACE("concat_param { " + c.param + " }");
    std::vector<Blob> storage = MakeBottoms(c, 1);
    std::vector<Blob*> bottom = Pointers(storage);
    Blob top(TestContext());
    auto layer = MakeLayer("type: 'Concat' concat_param { " + c.param + " }");
    layer->SetUp(bottom, {&top});
    std::vector<int> expected = c.shapes[0];
    for (size_t i = 1; i < c.shapes.size(); ++i) expected[c.axis] += c.shapes[i][c.axis];
    ASSERT_EQ(top.shape(), expected);
    layer->Forward(bottom, {&top});
    EXPECT_EQ(top.ReadData(), ReferenceConcat(bottom, c.axis));
  }
}

TEST(Concat, GradientMatchesNumeric) {
  for (const ConcatCase& c : Cases()) {
    SCOPED_TRACE("concat_param { " + c.param + " }");
    std::vector<Blob> storage = MakeBottoms(c, 11);
    std::vector<Blob*> bottom = Pointers(storage);
    Blob top(TestContext());
    auto layer = MakeLayer("type: 'Concat' concat_param { " + c.param + " }");
    layer->SetUp(bottom, {&top});
    CheckGradient(*layer, bottom, {&top});
  }
}

TEST(Concat, BackwardSkipsBottomsWithoutPropagateDown) {
  Blob a(TestContext(), {2, 3}), b(TestContext(), {2, 4}), top(TestContext());
  auto layer = MakeLayer("type: 'Concat'");
  layer->SetUp({&a, &b}, {&top});
  layer->Forward({&a, &b}, {&top});
  std::vector<float> dy(top.count());
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = float(i);
  top.WriteDiff(dy);
  a.SetDiff(-1.f);
  layer->Backward({&top}, {false, true}, {&a, &b});
  EXPECT_EQ(a.ReadDiff(), std::vector<float>(6, -1.f));
  EXPECT_EQ(b.ReadDiff(), (std::vector<float>{3, 4, 5, 6, 10, 11, 12, 13}));
}

TEST(Concat, OneBottomIsShared) {
  Blob bottom(TestContext(), {3, 13}), top(TestContext());
  auto layer = MakeLayer("type: 'Concat'");
  layer->SetUp({&bottom}, {&top});
  EXPECT_EQ(top.shape(), bottom.shape());
  EXPECT_EQ(top.data(), bottom.data());
  EXPECT_EQ(top.diff(), bottom.diff());
}

TEST(Concat, ShapesThatDoNotFitAreErrors) {
  Blob a(TestContext(), {2, 3, 5}), b(TestContext(), {2, 4, 6}), top(TestContext());
  try {
    MakeLayer("type: 'Concat'")->SetUp({&a, &b}, {&top});
    ADD_FAILURE() << "mismatched shapes accepted";
  } catch (const Error& e) {
    const std::string error = e.what();
    EXPECT_NE(error.find("layer 'test_layer' (Concat)"), std::string::npos) << error;
    EXPECT_NE(error.find("bottom 1 of shape 2 4 6 (48)"), std::string::npos) << error;
    EXPECT_NE(error.find("bottom 0 of shape 2 3 5 (30)"), std::string::npos) << error;
    EXPECT_NE(error.find("concatenation axis 1"), std::string::npos) << error;
  }
  Blob c(TestContext(), {2, 3});
  EXPECT_THROW(MakeLayer("type: 'Concat'")->SetUp({&a, &c}, {&top}), Error);  // axes differ
  EXPECT_THROW(MakeLayer("type: 'Concat' concat_param { axis: 3 }")->SetUp({&a, &a}, {&top}),
               Error);
  EXPECT_THROW(MakeLayer("type: 'Concat' concat_param { concat_dim: 3 }")->SetUp({&a, &a}, {&top}),
               Error);
  EXPECT_THROW(
      MakeLayer("type: 'Concat' concat_param { axis: 1 concat_dim: 1 }")->SetUp({&a, &a}, {&top}),
      Error);
}

}  // namespace test
}  // namespace dlcaffe
