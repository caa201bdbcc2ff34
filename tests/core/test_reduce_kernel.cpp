// The per-channel reduce generator (src/core/reduce_kernel.hpp) against
// double-precision host sums, in both shapes (RunOptions::kernel_shape cpu and gpu):
// sums and maxima over odd outer x inner, channels split into many parts
// (their results combined by a second launch), repeated launches on one
// workspace, finishes that read and write
// per-channel buffers, empty channels, a matrix's columns, and a finish that
// does not build.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "../../src/core/reduce_kernel.hpp"
#include "dlcaffe/blob.hpp"
#include "dlcaffe/error.hpp"
#include "util/random_values.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

using namespace pointwise;

struct Shape {
  int outer, channels, inner;
};

std::string Name(Shape s) {
  return std::to_string(s.outer) + "x" + std::to_string(s.channels) + "x" +
         std::to_string(s.inner);
}

// Per channel: mean = sum(a * w) / count, top = max(a - b), total +=
// sum(a * b); `launches` (one value for all channels: stride 0) counts the
// launches, through channel 0 only.
const ChannelReduceKernel kStats(
    "test_stats",
    {In("a"), In("b"), Channel("w"), ChannelOut("mean"), ChannelOut("top"),
     ChannelOut("total"), ChannelOut("launches"), Scalar("count")},
    {Sum("s", "a * w"), Max("m", "a - b"), Sum("p", "a * b")},
    "mean = count > 0.f ? s / count : 0.f;\n"
    "top = m;\n"
    "total += p;\n"
    "if (channel == 0) launches += 1.f;");

struct Expected {
  std::vector<double> mean, top, total, magnitude;
};

Expected Reference(Shape s, const std::vector<float>& a, const std::vector<float>& b,
                   const std::vector<float>& w, const std::vector<float>& total) {
  Expected e{std::vector<double>(s.channels), std::vector<double>(s.channels),
             std::vector<double>(total.begin(), total.end()), std::vector<double>(s.channels)};
  const double count = double(s.outer) * s.inner;
  for (int c = 0; c < s.channels; ++c) {
    double sum = 0, top = -std::numeric_limits<double>::infinity(), products = 0, magnitude = 0;
    for (int o = 0; o < s.outer; ++o)
      for (int p = 0; p < s.inner; ++p) {
        const size_t i = (size_t(o) * s.channels + c) * s.inner + p;
        sum += double(a[i]) * w[c];
        top = std::max(top, double(float(a[i] - b[i])));
        products += double(a[i]) * b[i];
        magnitude += std::fabs(double(a[i]) * b[i]) + std::fabs(double(a[i]) * w[c]);
      }
    e.mean[c] = count > 0 ? sum / count : 0.0;
    e.top[c] = top;
    e.total[c] += products;
    e.magnitude[c] = magnitude;
  }
  return e;
}

class ReduceKernelTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { SetTestOption("kernel_shape", GetParam()); }
  void TearDown() override { ResetTestOption("kernel_shape"); }
  bool cpu() const { return std::string(GetParam()) == "cpu"; }

  // `launches` launches of kStats on one workspace; returns the split used.
  ChannelReduceKernel::Split Check(Shape s, unsigned seed, int launches = 1) {
    SCOPED_TRACE(Name(s));
    const size_t n = size_t(s.outer) * s.channels * s.inner;
    const std::vector<float> a = RandomValues(n, seed, -1.f, 3.f), b = RandomValues(n, seed + 1, -1.f, 1.f),
                             w = RandomValues(s.channels, seed + 2, 0.5f, 1.5f),
                             total = RandomValues(s.channels, seed + 3, -1.f, 1.f);
    Blob da(TestContext(), {int(n) + 1}), db(TestContext(), {int(n) + 3});
    da.WriteData(a.data(), int(n), 1);  // a at offset 1, b at offset 3
    db.WriteData(b.data(), int(n), 3);
    Blob dw(TestContext(), {s.channels}), dmean(TestContext(), {s.channels}),
        dtop(TestContext(), {s.channels}), dtotal(TestContext(), {s.channels}),
        dlaunches(TestContext(), {2});
    dw.WriteData(w);
    dtotal.WriteData(total);
    dlaunches.SetData(0.f);
    ReduceWorkspace workspace;
    for (int l = 0; l < launches; ++l) {
      dmean.SetData(-7.f);
      kStats.Launch(TestContext(), workspace, s.outer, s.channels, s.inner,
                    {{da.data(), 1}, {db.data(), 3}, dw.data(), dmean.data(), dtop.data(),
                     dtotal.data(), {dlaunches.data(), 1, 0}},
                    {float(s.outer) * s.inner});
    }
    Expected e = Reference(s, a, b, w, total);
    const std::vector<float> mean = dmean.ReadData(), top = dtop.ReadData(),
                             got_total = dtotal.ReadData(), counted = dlaunches.ReadData();
    const double count = std::max(1.0, double(s.outer) * s.inner);
    for (int c = 0; c < s.channels; ++c) {
      EXPECT_NEAR(mean[c], e.mean[c], 1e-5 * (1.0 + e.magnitude[c] / count)) << "channel " << c;
      EXPECT_EQ(top[c], float(e.top[c])) << "channel " << c;
      const double expected_total = total[c] + launches * (e.total[c] - total[c]);
      EXPECT_NEAR(got_total[c], expected_total, 1e-5 * (1.0 + launches * e.magnitude[c]))
          << "channel " << c;
    }
    EXPECT_EQ(counted[0], 0.f);
    EXPECT_EQ(counted[1], float(launches));
    return ChannelReduceKernel::ChooseSplit(TestContext().info(), cpu(), s.outer, s.channels,
                                            s.inner);
  }
};

}  // namespace

TEST_P(ReduceKernelTest, OddShapes) {
  unsigned seed = 1;
  for (int outer : {1, 3})
    for (int channels : {1, 5, 17})
      for (int inner : {1, 7, 13, 127}) Check({outer, channels, inner}, seed += 4);
}

// Few channels with many values: each channel is split into parts, and a
// second launch adds them up and runs the finish. The split is checked, so
// that this test cannot pass without the parts.
TEST_P(ReduceKernelTest, ChannelsOfManyPartsAreCombined) {
  unsigned seed = 100;
  for (Shape s : {Shape{3, 1, 40000}, Shape{13, 2, 7001}, Shape{1, 3, 65537},
                  Shape{64, 1, 2049}}) {
    const ChannelReduceKernel::Split split = Check(s, seed += 4);
    EXPECT_GT(split.parts, 1) << Name(s);
  }
}

// A matrix's column sums (inner = 1): in the GPU shape a work-item per
// column and slice of rows. Many slices (combined by the second launch) and
// one; channels past a work-group's last work-item.
TEST_P(ReduceKernelTest, ColumnsOfAMatrix) {
  unsigned seed = 500;
  for (Shape s : {Shape{3152, 37, 1}, Shape{700, 300, 1}, Shape{5, 300, 1}}) {
    const ChannelReduceKernel::Split split = Check(s, seed += 4);
    EXPECT_EQ(split.columns, !cpu()) << Name(s);
    if (!cpu() && s.outer > 16) {
      EXPECT_GT(split.parts, 1) << Name(s);
    }
  }
}

// The same workspace serves the next launch (three here, on a split shape):
// nothing one launch leaves in it changes the next one's results.
TEST_P(ReduceKernelTest, RepeatedLaunchesOnOneWorkspace) {
  const ChannelReduceKernel::Split split = Check({5, 2, 16389}, 300, 3);
  EXPECT_GT(split.parts, 1);
}

// A channel without values sums to 0 and has the maximum -inf; the finish
// still runs.
TEST_P(ReduceKernelTest, EmptyChannels) {
  for (Shape s : {Shape{0, 4, 7}, Shape{2, 3, 0}}) {
    SCOPED_TRACE(Name(s));
    Blob dummy(TestContext(), {4}), w(TestContext(), {s.channels}),
        mean(TestContext(), {s.channels}), top(TestContext(), {s.channels}),
        total(TestContext(), {s.channels}), launches(TestContext(), {1});
    w.SetData(1.f);
    mean.SetData(5.f);
    total.SetData(2.f);
    launches.SetData(0.f);
    ReduceWorkspace workspace;
    kStats.Launch(TestContext(), workspace, s.outer, s.channels, s.inner,
                  {dummy.data(), dummy.data(), w.data(), mean.data(), top.data(), total.data(),
                   {launches.data(), 0, 0}},
                  {0.f});
    EXPECT_EQ(mean.ReadData(), std::vector<float>(s.channels, 0.f));
    EXPECT_EQ(top.ReadData(),
              std::vector<float>(s.channels, -std::numeric_limits<float>::infinity()));
    EXPECT_EQ(total.ReadData(), std::vector<float>(s.channels, 2.f));
    EXPECT_EQ(launches.ReadData(), std::vector<float>(1, 1.f));
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, ReduceKernelTest, ::testing::Values("cpu", "gpu"));

TEST(ReduceKernel, FinishThatDoesNotBuildIsAClearError) {
  const ChannelReduceKernel broken("test_broken_finish", {In("x"), ChannelOut("out")},
                                   {Sum("s", "x")}, "out = s +* 2;");
  Blob x(TestContext(), {2, 3}), out(TestContext(), {3});
  ReduceWorkspace workspace;
  for (const char* shape : {"cpu", "gpu"}) {
    SetTestOption("kernel_shape", shape);
    try {
      broken.Launch(TestContext(), workspace, 2, 3, 1, {x.data(), out.data()});
      ADD_FAILURE() << "a finish with a syntax error built";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("test_broken_finish"), std::string::npos) << message;
      EXPECT_NE(message.find("out = s +* 2;"), std::string::npos) << message;
    }
  }
  ResetTestOption("kernel_shape");
}

TEST(ReduceKernel, BadDescriptionsAreErrors) {
  // Element outputs belong to pointwise kernels.
  EXPECT_THROW(ChannelReduceKernel("out", {In("x"), Out("y")}, {Sum("s", "x")}, ""), Error);
  EXPECT_THROW(ChannelReduceKernel("none", {In("x")}, {}, ""), Error);
  EXPECT_THROW(ChannelReduceKernel("clash", {In("x")}, {Sum("x", "x")}, ""), Error);
  EXPECT_THROW(ChannelReduceKernel("reserved", {In("x")}, {Sum("channel", "x")}, ""), Error);
}

}  // namespace test
}  // namespace dlcaffe
