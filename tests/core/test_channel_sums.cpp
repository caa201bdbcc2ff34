// ChannelSums (src/core/channel_sums.hpp) against double-precision sums on
// the host, in both kernel shapes: work-items over contiguous runs (CPU) and
// work-groups over segments (GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "../../src/core/channel_sums.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

struct Shape {
  int outer, channels, inner;
};

struct Sums {
  std::vector<double> first, second, magnitude;  // magnitude: sum of |terms|, for tolerances
};

// Moments: sums of d and d^2, d = a - a[c * inner]; products: sums of a and a * b.
Sums Reference(ChannelSumKind kind, Shape s, const std::vector<float>& a,
               const std::vector<float>& b) {
  Sums r{std::vector<double>(s.channels), std::vector<double>(s.channels),
         std::vector<double>(s.channels)};
  for (int c = 0; c < s.channels; ++c) {
    const double shift = kind == ChannelSumKind::kMoments ? a[size_t(c) * s.inner] : 0.0;
    for (int o = 0; o < s.outer; ++o)
      for (int p = 0; p < s.inner; ++p) {
        const size_t i = (size_t(o) * s.channels + c) * s.inner + p;
        const double d = a[i] - shift;
        const double second = kind == ChannelSumKind::kMoments ? d * d : d * b[i];
        r.first[c] += d;
        r.second[c] += second;
        r.magnitude[c] += std::fabs(d) + std::fabs(second);
      }
  }
  return r;
}

void ExpectSums(const std::vector<float>& got, int offset, const std::vector<double>& base,
                const std::vector<double>& expected, const std::vector<double>& magnitude) {
  for (size_t c = 0; c < expected.size(); ++c)
    EXPECT_NEAR(got[offset + c], base[offset + c] + expected[c], 1e-5 * (1.0 + magnitude[c]))
        << "channel " << c;
}

// Every test runs with both kernel shapes, whatever this device would pick.
class ChannelSumsTest : public ::testing::TestWithParam<const char*> {
 protected:
  KernelShape kernel_shape() const {
    return std::string(GetParam()) == "cpu" ? KernelShape::kCpu : KernelShape::kGpu;
  }

  // Sums of a random blob of this shape: the first written at offset 2 of
  // one buffer, the second accumulated onto values at offset 1 of another.
  void Check(ChannelSumKind kind, Shape s, unsigned seed) {
    SCOPED_TRACE(std::string(kind == ChannelSumKind::kMoments ? "moments " : "products ") +
                 std::to_string(s.outer) + "x" + std::to_string(s.channels) + "x" +
                 std::to_string(s.inner));
    Blob a(TestContext(), {s.outer, s.channels, s.inner});
    Blob b(TestContext(), {s.outer, s.channels, s.inner});
    // An offset far from 0, so that the moments' shift matters.
    FillUniform(&a, 2.f, 4.f, seed);
    FillUniform(&b, -1.f, 1.f, seed + 1);
    Blob first(TestContext(), {s.channels + 3}), second(TestContext(), {s.channels + 2});
    std::vector<double> first_base(s.channels + 3, 0.0), second_base(s.channels + 2);
    std::vector<float> preset(s.channels + 2);
    for (int i = 0; i < s.channels + 2; ++i) preset[i] = second_base[i] = 0.25f * i - 1.f;
    first.SetData(-7.f);  // overwritten
    second.WriteData(preset);
    ChannelSums(TestContext(), kernel_shape(), kind, s.outer, s.channels, s.inner, a.data(),
                kind == ChannelSumKind::kMoments ? nullptr : b.data(), {first.data(), 2, false},
                {second.data(), 1, true});
    const Sums expected = Reference(kind, s, a.ReadData(), b.ReadData());
    const std::vector<float> got_first = first.ReadData(), got_second = second.ReadData();
    ExpectSums(got_first, 2, first_base, expected.first, expected.magnitude);
    ExpectSums(got_second, 1, second_base, expected.second, expected.magnitude);
    // Nothing outside the targets is touched.
    EXPECT_EQ(got_first[0], -7.f);
    EXPECT_EQ(got_first[1], -7.f);
    EXPECT_EQ(got_second[0], preset[0]);
    EXPECT_EQ(got_second[s.channels + 1], preset[s.channels + 1]);
  }
};

}  // namespace

TEST_P(ChannelSumsTest, OddShapes) {
  unsigned seed = 1;
  for (ChannelSumKind kind : {ChannelSumKind::kMoments, ChannelSumKind::kProducts})
    for (int outer : {1, 3})
      for (int channels : {1, 5, 17})
        for (int inner : {1, 7, 1000}) Check(kind, {outer, channels, inner}, seed++);
}

// Few channels with long runs: the CPU shape splits a channel into blocks of
// rows (13 rows in 5 blocks), whole rows (one each), or segments of rows
// (3 rows of 40000 values), then adds the parts.
TEST_P(ChannelSumsTest, ChannelsSplitIntoParts) {
  unsigned seed = 100;
  for (ChannelSumKind kind : {ChannelSumKind::kMoments, ChannelSumKind::kProducts})
    for (Shape s : {Shape{13, 1, 7001}, Shape{5, 2, 16389}, Shape{3, 1, 40000},
                    Shape{1, 3, 65537}})
      Check(kind, s, seed++);
}

// A skipped target is not written; an empty channel (no rows or no inner
// values) sums to zero.
TEST_P(ChannelSumsTest, SkippedTargetsAndEmptySums) {
  const Shape s{3, 5, 7};
  Blob a(TestContext(), {s.outer, s.channels, s.inner}), out(TestContext(), {s.channels});
  FillUniform(&a, -1.f, 1.f, 200);
  out.SetData(3.f);
  ChannelSums(TestContext(), kernel_shape(), ChannelSumKind::kProducts, s.outer, s.channels,
              s.inner, a.data(), nullptr, {}, {out.data(), 0, true});  // second sum: a * a
  const Sums expected = Reference(ChannelSumKind::kProducts, s, a.ReadData(), a.ReadData());
  const std::vector<float> got = out.ReadData();
  for (int c = 0; c < s.channels; ++c) EXPECT_NEAR(got[c], 3.0 + expected.second[c], 1e-5);

  for (Shape empty : {Shape{0, 4, 7}, Shape{2, 4, 0}}) {
    Blob sums(TestContext(), {2, 4});
    sums.SetData(5.f);
    ChannelSums(TestContext(), kernel_shape(), ChannelSumKind::kProducts, empty.outer,
                empty.channels, empty.inner, a.data(), a.data(), {sums.data(), 0, false},
                {sums.data(), 4, true});
    EXPECT_EQ(sums.ReadData(), (std::vector<float>{0, 0, 0, 0, 5, 5, 5, 5}));
  }
}

INSTANTIATE_TEST_SUITE_P(KernelShapes, ChannelSumsTest, ::testing::Values("cpu", "gpu"));


}  // namespace test
}  // namespace dlcaffe
