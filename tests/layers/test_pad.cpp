#include <gtest/gtest.h>

#include <random>

#include "dlcaffe/error.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

std::string Proto(const std::string& mode, const std::vector<int>& begin,
                  const std::vector<int>& end, float value = 0.f) {
  std::string s = "type: 'Pad' pad_param { mode: " + mode;
  for (int b : begin) s += " pad_begin: " + std::to_string(b);
  for (int e : end) s += " pad_end: " + std::to_string(e);
  return s + " value: " + std::to_string(value) + " }";
}

// The bottom index each top index of one axis copies (-1: the constant).
// Crops first; then REFLECT walks outwards from each end of what is left,
// bouncing off its ends (repeated reflection, as np.pad); EDGE repeats the
// end elements.
std::vector<int> AxisSource(int n, int begin, int end, const std::string& mode) {
  const int lo = std::max(0, -begin), hi = n - std::max(0, -end);
  const int m = hi - lo;
  auto walk = [&](int start, int dir, int k) {  // k positions outwards from `start`
    std::vector<int> out;
    int pos = start;
    for (int j = 0; j < k; ++j) {
      if (m > 1) {
        if (pos + dir < 0 || pos + dir > m - 1) dir = -dir;
        pos += dir;
      }
      out.push_back(pos);
    }
    return out;
  };
  std::vector<int> source;
  const int before = std::max(0, begin), after = std::max(0, end);
  if (mode == "CONSTANT") {
    source.assign(before, -1);
  } else if (mode == "EDGE") {
    source.assign(before, lo);
  } else {
    std::vector<int> left = walk(0, -1, before);
    for (auto it = left.rbegin(); it != left.rend(); ++it) source.push_back(lo + *it);
  }
  for (int i = lo; i < hi; ++i) source.push_back(i);
  if (mode == "CONSTANT") {
    source.insert(source.end(), after, -1);
  } else if (mode == "EDGE") {
    source.insert(source.end(), after, hi - 1);
  } else {
    for (int p : walk(m - 1, +1, after)) source.push_back(lo + p);
  }
  return source;
}

struct Reference {
  std::vector<int> shape;
  std::vector<float> y;
  std::vector<float> dx;  // for the top diff dy
};

Reference ReferencePad(const std::vector<float>& x, const std::vector<float>* dy,
                       const std::vector<int>& shape, const std::vector<int>& begin,
                       const std::vector<int>& end, const std::string& mode, float value) {
  const int rank = static_cast<int>(shape.size());
  std::vector<std::vector<int>> source(rank);
  Reference r;
  size_t count = 1;
  for (int d = 0; d < rank; ++d) {
    source[d] = AxisSource(shape[d], begin[d], end[d], mode);
    r.shape.push_back(static_cast<int>(source[d].size()));
    count *= source[d].size();
  }
  r.dx.assign(x.size(), 0.f);
  std::vector<int> c(rank, 0);
  for (size_t j = 0; j < count; ++j) {
    long at = 0;
    bool inside = true;
    for (int d = 0; d < rank; ++d) {
      const int s = source[d][c[d]];
      inside = inside && s >= 0;
      at = at * shape[d] + s;
    }
    r.y.push_back(inside ? x[at] : value);
    if (inside && dy) r.dx[at] += (*dy)[j];
    for (int d = rank - 1; d >= 0; --d) {
      if (++c[d] < r.shape[d]) break;
      c[d] = 0;
    }
  }
  return r;
}

void ExpectPadMatches(const std::vector<int>& shape, const std::vector<int>& begin,
                      const std::vector<int>& end, const std::string& mode, unsigned seed) {
  const float value = 0.75f;
  const std::string proto = Proto(mode, begin, end, value);
  SCOPED_TRACE(::testing::PrintToString(shape) + " " + proto);
  Blob x(TestContext(), shape), y(TestContext());
  FillUniform(&x, -1.f, 1.f, seed);
  auto layer = MakeLayer(proto);
  layer->SetUp({&x}, {&y});
  const Reference shape_only = ReferencePad(x.ReadData(), nullptr, shape, begin, end, mode, value);
  ASSERT_EQ(y.shape(), shape_only.shape);
  std::vector<float> dy(y.count());
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = float(i % 11) - 4.5f;
  const Reference r = ReferencePad(x.ReadData(), &dy, shape, begin, end, mode, value);
  layer->Forward({&x}, {&y});
  ASSERT_EQ(y.ReadData(), r.y);
  y.WriteDiff(dy);
  x.SetDiff(100.f);
  layer->Backward({&y}, {true}, {&x});
  // Sums of a few small integers in any order: exact.
  ASSERT_EQ(x.ReadDiff(), r.dx);
}

}  // namespace

// One axis of 5 elements (values 0 .. 4), worked out by hand.
TEST(Pad, OneAxisByHand) {
  struct Case {
    std::string mode;
    int begin, end;
    std::vector<float> expected;
  };
  const std::vector<Case> cases = {
      {"CONSTANT", 2, 1, {9, 9, 0, 1, 2, 3, 4, 9}},
      {"REFLECT", 2, 3, {2, 1, 0, 1, 2, 3, 4, 3, 2, 1}},
      {"EDGE", 2, 3, {0, 0, 0, 1, 2, 3, 4, 4, 4, 4}},
      {"REFLECT", 6, 0, {2, 3, 4, 3, 2, 1, 0, 1, 2, 3, 4}},  // wider than the axis
      {"REFLECT", 0, 9, {0, 1, 2, 3, 4, 3, 2, 1, 0, 1, 2, 3, 4, 3}},
      {"CONSTANT", -1, -2, {1, 2}},
      {"REFLECT", -1, 2, {1, 2, 3, 4, 3, 2}},  // reflects the cropped axis
      {"EDGE", 2, -3, {0, 0, 0, 1}},
      {"REFLECT", -4, 2, {4, 4, 4}},  // one element left: repeated
      {"CONSTANT", -3, -2, {}},
      {"CONSTANT", 0, 0, {0, 1, 2, 3, 4}},
  };
  Blob x(TestContext(), {5}), y(TestContext());
  x.WriteData({0, 1, 2, 3, 4});
  for (const Case& c : cases) {
    const std::string proto = Proto(c.mode, {c.begin}, {c.end}, 9.f);
    SCOPED_TRACE(proto);
    auto layer = MakeLayer(proto);
    layer->SetUp({&x}, {&y});
    ASSERT_EQ(y.shape(), std::vector<int>{int(c.expected.size())});
    layer->Forward({&x}, {&y});
    EXPECT_EQ(y.ReadData(), c.expected);
    // The reference agrees with the table.
    EXPECT_EQ(ReferencePad({0, 1, 2, 3, 4}, nullptr, {5}, {c.begin}, {c.end}, c.mode, 9.f).y,
              c.expected);
  }
}

TEST(Pad, ForwardAndBackwardMatchReference) {
  struct Case {
    std::vector<int> shape, begin, end;
  };
  const std::vector<Case> cases = {
      {{13}, {3}, {4}},
      {{3, 13}, {0, 2}, {1, 0}},
      {{2, 3, 7, 5}, {0, 0, 1, 2}, {0, 0, 2, 1}},  // spatial padding
      {{2, 3, 7, 5}, {0, 1, -2, 3}, {1, -1, 4, -1}},
      {{3, 1, 4, 2, 3}, {1, 2, 0, 1, 0}, {0, 0, 0, 3, 2}},
      {{2, 2, 1, 3, 2, 3}, {0, 0, 0, 2, 0, 1}, {0, 1, 0, 0, 0, 1}},
  };
  unsigned seed = 1;
  for (const std::string mode : {"CONSTANT", "REFLECT", "EDGE"})
    for (const Case& c : cases) ExpectPadMatches(c.shape, c.begin, c.end, mode, seed++);
}

// Random shapes of ranks 1 to 5 and amounts from -2 to 6 (wider than the
// axis: repeated reflection, several top elements per bottom element).
TEST(Pad, RandomPadsMatchReference) {
  std::mt19937 rng(29);
  for (int trial = 0; trial < 45; ++trial) {
    const int rank = 1 + trial % 5;
    const std::string mode = trial % 3 == 0 ? "CONSTANT" : trial % 3 == 1 ? "REFLECT" : "EDGE";
    std::vector<int> shape, begin, end;
    for (int d = 0; d < rank; ++d) {
      const int n = 1 + int(rng() % 5);
      int b = int(rng() % 9) - 2, e = int(rng() % 9) - 2;
      if (std::max(0, -b) + std::max(0, -e) >= n) b = e = 0;  // keep one element
      shape.push_back(n);
      begin.push_back(b);
      end.push_back(e);
    }
    ExpectPadMatches(shape, begin, end, mode, 50 + trial);
  }
}

TEST(Pad, GradientMatchesNumeric) {
  for (const std::string mode : {"CONSTANT", "REFLECT", "EDGE"}) {
    Blob x(TestContext(), {2, 3, 4, 5}), y(TestContext());
    FillUniform(&x, -1.f, 1.f, 7);
    auto layer = MakeLayer(Proto(mode, {0, 1, 2, -1}, {1, -1, 5, 3}, 0.5f));
    layer->SetUp({&x}, {&y});
    SCOPED_TRACE(mode);
    CheckGradient(*layer, {&x}, {&y});
  }
}

TEST(Pad, BadParametersAreErrors) {
  Blob x(TestContext(), {2, 3, 4}), y(TestContext());
  struct Case {
    std::string proto;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"pad_param { pad_begin: 0 pad_begin: 0 pad_begin: 0 pad_end: 0 }",
       "as many pad_end as pad_begin: 3 pad_begin, 1 pad_end"},
      {"pad_param { pad_begin: 0 pad_end: 0 }",
       "one pad_begin and one pad_end per bottom axis: 1 for the bottom 2 3 4 (24)"},
      {"pad_param { pad_begin: 0 pad_begin: -2 pad_begin: 0 pad_end: 0 pad_end: -2 pad_end: 0 }",
       "axis 1 of the bottom 2 3 4 (24) has 3 elements; pad_begin -2 and pad_end -2 crop more"},
      {"pad_param { mode: REFLECT pad_begin: 0 pad_begin: -3 pad_begin: 0 pad_end: 0 "
       "pad_end: 1 pad_end: 0 }",
       "REFLECT padding of axis 1 of the bottom 2 3 4 (24): pad_begin -3 and pad_end 1 leave "
       "no element"},
  };
  for (const Case& c : cases) {
    try {
      MakeLayer("type: 'Pad' " + c.proto)->SetUp({&x}, {&y});
      ADD_FAILURE() << c.proto << " accepted";
    } catch (const Error& e) {
      const std::string error = e.what();
      EXPECT_NE(error.find("layer 'test_layer' (Pad)"), std::string::npos) << error;
      EXPECT_NE(error.find(c.message), std::string::npos) << c.proto << ": " << error;
    }
  }
  // CONSTANT can pad an axis cropped to nothing.
  auto constant = MakeLayer(Proto("CONSTANT", {0, -3, 0}, {0, 2, 0}, 4.f));
  constant->SetUp({&x}, {&y});
  EXPECT_EQ(y.shape(), (std::vector<int>{2, 2, 4}));
  constant->Forward({&x}, {&y});
  for (float v : y.ReadData()) EXPECT_EQ(v, 4.f);
  EXPECT_THROW(MakeLayer(Proto("EDGE", {0, 0, 0}, {0, 0, 0}))->SetUp({&x}, {&x}), Error);
}

}  // namespace test
}  // namespace dlcaffe
