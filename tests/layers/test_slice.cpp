#include <gtest/gtest.h>

#include "dlcaffe/error.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

// Host reference: the part [begin, end) of `axis` of a row-major blob.
static std::vector<float> ReferenceSlice(const Blob& in, int axis, int begin, int end) {
  const std::vector<float> x = in.ReadData();
  const int outer = in.count(0, axis), size = in.shape(axis), inner = in.count(axis + 1);
  std::vector<float> out;
  for (int o = 0; o < outer; ++o)
    out.insert(out.end(), x.begin() + (o * size + begin) * inner,
               x.begin() + (o * size + end) * inner);
  return out;
}

struct SliceCase {
  std::string param;  // slice_param contents
  int axis;           // the canonical axis it means
  int tops;
  std::vector<int> bounds;  // part i is [bounds[i], bounds[i+1])
};

static const std::vector<int> kShape = {6, 5, 3, 4};

static std::vector<SliceCase> Cases() {
  return {
      {"axis: 0 slice_point: 1 slice_point: 4", 0, 3, {0, 1, 4, 6}},
      {"slice_point: 2", 1, 2, {0, 2, 5}},  // default axis 1
      {"axis: -1 slice_point: 1 slice_point: 2 slice_point: 3", 3, 4, {0, 1, 2, 3, 4}},
      {"axis: -2", 2, 3, {0, 1, 2, 3}},     // equal split
      {"axis: 0", 0, 2, {0, 3, 6}},
      {"slice_dim: 1 slice_point: 4", 1, 2, {0, 4, 5}},  // legacy
  };
}

struct Tops {
  explicit Tops(int n) {
    for (int i = 0; i < n; ++i) storage.emplace_back(TestContext());
    for (Blob& b : storage) pointers.push_back(&b);
  }
  std::vector<Blob> storage;
  std::vector<Blob*> pointers;
};

TEST(Slice, ForwardMatchesReference) {
  for (const SliceCase& c : Cases()) {
    SCOPED_TRACE("slice_param { " + c.param + " }");
    Blob bottom(TestContext(), kShape);
    FillGaussian(&bottom, 0.f, 1.f, 4);
    Tops tops(c.tops);
    auto layer = MakeLayer("type: 'Slice' slice_param { " + c.param + " }");
    layer->SetUp({&bottom}, tops.pointers);
    layer->Forward({&bottom}, tops.pointers);
    for (int i = 0; i < c.tops; ++i) {
      std::vector<int> shape = kShape;
      shape[c.axis] = c.bounds[i + 1] - c.bounds[i];
      ASSERT_EQ(tops.pointers[i]->shape(), shape) << "top " << i;
      EXPECT_EQ(tops.pointers[i]->ReadData(),
                ReferenceSlice(bottom, c.axis, c.bounds[i], c.bounds[i + 1]))
          << "top " << i;
    }
  }
}

TEST(Slice, GradientMatchesNumeric) {
  for (const SliceCase& c : Cases()) {
    SCOPED_TRACE("slice_param { " + c.param + " }");
    // Small shapes that keep the sliced axis of kShape.
    Blob bottom(TestContext(),
                c.axis == 0 ? std::vector<int>{6, 1, 3, 1} : std::vector<int>{1, 5, 3, 4});
    FillGaussian(&bottom, 0.f, 1.f, 6);
    Tops tops(c.tops);
    auto layer = MakeLayer("type: 'Slice' slice_param { " + c.param + " }");
    layer->SetUp({&bottom}, tops.pointers);
    CheckGradient(*layer, {&bottom}, tops.pointers);
  }
}

TEST(Slice, OneTopIsShared) {
  Blob bottom(TestContext(), {3, 13}), top(TestContext());
  auto layer = MakeLayer("type: 'Slice'");
  layer->SetUp({&bottom}, {&top});
  EXPECT_EQ(top.shape(), bottom.shape());
  EXPECT_EQ(top.data(), bottom.data());
  EXPECT_EQ(top.diff(), bottom.diff());
}

TEST(Slice, BadSlicesAreErrors) {
  Blob bottom(TestContext(), kShape);
  struct Case {
    std::string param;
    int tops;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"", 3, "3 top blobs do not evenly divide axis 1 of size 5"},
      {"slice_point: 2", 3, "1 slice_point value(s) for 3 top blob(s)"},
      {"slice_point: 3 slice_point: 2", 3, "slice_point 2 must be greater than 3"},
      {"slice_point: 0", 2, "slice_point 0 must be greater than 0"},
      {"slice_point: 6", 2, "at most the size 5 of axis 1"},
      {"axis: 4", 2, "axis 4 is out of range"},
      {"slice_dim: 4", 2, "slice_dim 4 is out of range"},
      {"axis: 1 slice_dim: 1", 2, "either axis or slice_dim"},
  };
  for (const Case& c : cases) {
    Tops tops(c.tops);
    try {
      MakeLayer("type: 'Slice' slice_param { " + c.param + " }")->SetUp({&bottom}, tops.pointers);
      ADD_FAILURE() << c.param << " accepted";
    } catch (const Error& e) {
      const std::string error = e.what();
      EXPECT_NE(error.find("layer 'test_layer' (Slice)"), std::string::npos) << error;
      EXPECT_NE(error.find(c.message), std::string::npos) << c.param << ": " << error;
    }
  }
}

}  // namespace test
}  // namespace dlcaffe
