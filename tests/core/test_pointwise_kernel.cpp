// The pointwise kernel generator (src/core/pointwise_kernel.hpp) against
// plain host loops, in both shapes (RunOptions::kernel_shape cpu and gpu): several
// inputs, outputs and scalars, odd counts (the CPU shape's vector loop and
// scalar tail, chunks ending mid-vector), offsets, in place, per-channel
// inputs, and the errors of a bad description or a body that does not build.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../../src/core/pointwise_kernel.hpp"
#include "dlcaffe/blob.hpp"
#include "dlcaffe/error.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

using namespace pointwise;

std::vector<float> Random(size_t n, unsigned seed, float lo = -2.f, float hi = 2.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

Blob Upload(const std::vector<float>& values) {
  Blob blob(TestContext(), {static_cast<int>(values.size())});
  blob.WriteData(values);
  return blob;
}

// Two inputs, two outputs, an in-out, a float and an int scalar; the body
// mixes ?:, built-ins and arithmetic, as the ported layers' bodies do.
const PointwiseKernel kMixed("test_mixed",
                             {In("a"), In("b"), Out("sum"), Out("gated"), InOut("acc"),
                              Scalar("k"), IntScalar("twice")},
                             "sum = a + k * b;\n"
                             "gated = a > b ? exp(a - b) : fmax(b, 0.5f) * (real)k;\n"
                             "acc = twice ? 2.f * acc + sum : acc + sum;");

struct MixedReference {
  std::vector<float> sum, gated, acc;
};

MixedReference Mixed(const std::vector<float>& a, const std::vector<float>& b,
                     const std::vector<float>& acc, float k, int twice) {
  MixedReference r{std::vector<float>(a.size()), std::vector<float>(a.size()), acc};
  for (size_t i = 0; i < a.size(); ++i) {
    r.sum[i] = a[i] + k * b[i];
    r.gated[i] = a[i] > b[i] ? std::exp(a[i] - b[i]) : std::max(b[i], 0.5f) * k;
    r.acc[i] = twice ? 2.f * acc[i] + r.sum[i] : acc[i] + r.sum[i];
  }
  return r;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want, size_t begin,
                const std::string& what) {
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[begin + i], want[i], 1e-5f * (1.f + std::fabs(want[i])))
        << what << " element " << i;
}

// Every test runs in both shapes, whatever this device would pick.
class PointwiseKernelTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { SetTestOption("kernel_shape", GetParam()); }
  void TearDown() override { ResetTestOption("kernel_shape"); }
};

}  // namespace

TEST_P(PointwiseKernelTest, SeveralInputsOutputsAndScalarsAtOddCounts) {
  unsigned seed = 1;
  for (int n : {1, 3, 13, 16, 17, 127, 4099, 1000003}) {
    for (int twice : {0, 1}) {
      SCOPED_TRACE("count " + std::to_string(n) + " twice " + std::to_string(twice));
      const std::vector<float> a = Random(n, seed++), b = Random(n, seed++),
                               acc = Random(n, seed++);
      Blob da = Upload(a), db = Upload(b), dacc = Upload(acc);
      Blob dsum(TestContext(), {n}), dgated(TestContext(), {n});
      kMixed.Launch(TestContext(), n, {da.data(), db.data(), dsum.data(), dgated.data(),
                                       dacc.data()},
                    {0.75f, twice});
      const MixedReference want = Mixed(a, b, acc, 0.75f, twice);
      ExpectNear(dsum.ReadData(), want.sum, 0, "sum");
      ExpectNear(dgated.ReadData(), want.gated, 0, "gated");
      ExpectNear(dacc.ReadData(), want.acc, 0, "acc");
    }
  }
}

// Each buffer at its own offset; nothing outside [offset, offset + count) of
// an output is written.
TEST_P(PointwiseKernelTest, OffsetsPerBuffer) {
  const int n = 1037;
  const std::vector<float> a = Random(n + 5, 10), b = Random(n + 9, 11), acc = Random(n + 2, 12);
  Blob da = Upload(a), db = Upload(b), dacc = Upload(acc);
  const float kUntouched = -99.f;
  Blob dsum(TestContext(), {n + 7}), dgated(TestContext(), {n + 3});
  dsum.SetData(kUntouched);
  dgated.SetData(kUntouched);
  kMixed.Launch(TestContext(), n, {{da.data(), 5}, {db.data(), 9}, {dsum.data(), 3},
                                   {dgated.data(), 1}, {dacc.data(), 2}},
                {-1.5f, 0});
  const MixedReference want =
      Mixed(std::vector<float>(a.begin() + 5, a.end()), std::vector<float>(b.begin() + 9, b.end()),
            std::vector<float>(acc.begin() + 2, acc.end()), -1.5f, 0);
  const std::vector<float> sum = dsum.ReadData(), gated = dgated.ReadData(),
                           acc_out = dacc.ReadData();
  ExpectNear(sum, want.sum, 3, "sum");
  ExpectNear(gated, want.gated, 1, "gated");
  ExpectNear(acc_out, want.acc, 2, "acc");
  for (int i : {0, 1, 2, n + 3, n + 4, n + 5, n + 6}) EXPECT_EQ(sum[i], kUntouched) << i;
  for (int i : {0, n + 1, n + 2}) EXPECT_EQ(gated[i], kUntouched) << i;
  EXPECT_EQ(acc_out[0], acc[0]);
  EXPECT_EQ(acc_out[1], acc[1]);
}

// An output that is also an input: every element is read before it is
// written.
TEST_P(PointwiseKernelTest, InPlace) {
  const PointwiseKernel swap("test_swap", {In("x"), In("y"), Out("x2"), Out("y2")},
                             "x2 = y; y2 = x - y;");
  for (int n : {1, 13, 127, 70001}) {
    const std::vector<float> x = Random(n, 20), y = Random(n, 21);
    Blob dx = Upload(x), dy = Upload(y);
    swap.Launch(TestContext(), n, {dx.data(), dy.data(), dx.data(), dy.data()});
    const std::vector<float> x2 = dx.ReadData(), y2 = dy.ReadData();
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(x2[i], y[i]) << i;
      ASSERT_EQ(y2[i], x[i] - y[i]) << i;
    }
  }
}

// Per-channel inputs over outer x channels x inner: rows shorter than a
// vector, rows ending mid-vector, a per-channel buffer at an offset and
// stride, and stride 0 (one value for all channels).
TEST_P(PointwiseKernelTest, PerChannelBroadcast) {
  const PointwiseKernel affine("test_affine",
                               {In("x"), Channel("scale"), Channel("shift"), Channel("all"),
                                Out("y")},
                               "y = fma(x, scale, shift) - all;");
  unsigned seed = 30;
  for (int outer : {1, 3})
    for (int channels : {1, 5, 17})
      for (int inner : {1, 7, 16, 33, 1000}) {
        SCOPED_TRACE(std::to_string(outer) + "x" + std::to_string(channels) + "x" +
                     std::to_string(inner));
        const int n = outer * channels * inner;
        const std::vector<float> x = Random(n, seed++), scale = Random(2 + 3 * channels, seed++),
                                 shift = Random(channels, seed++), all = Random(4, seed++);
        Blob dx = Upload(x), dscale = Upload(scale), dshift = Upload(shift), dall = Upload(all);
        Blob dy(TestContext(), {n});
        affine.Launch(TestContext(), n,
                      {dx.data(), {dscale.data(), 2, 3}, dshift.data(), {dall.data(), 1, 0},
                       dy.data()},
                      {}, {channels, inner});
        const std::vector<float> y = dy.ReadData();
        for (int i = 0; i < n; ++i) {
          const int c = (i / inner) % channels;
          ASSERT_NEAR(y[i], x[i] * scale[2 + 3 * c] + shift[c] - all[1], 1e-5f) << i;
        }
      }
}

TEST_P(PointwiseKernelTest, ZeroCountLaunchesNothing) {
  Blob x(TestContext(), {4});
  x.SetData(1.f);
  const PointwiseKernel negate("test_negate", {InOut("x")}, "x = -x;");
  negate.Launch(TestContext(), 0, {x.data()});
  EXPECT_EQ(x.ReadData(), std::vector<float>(4, 1.f));
}

// LaunchMany against one Launch per segment: segments of mixed sizes (empty
// ones, small ones that the GPU shape batches up to eight to a launch, ones
// of kSmallSegment or more that keep their own launch), 19 of them so that
// the last batch is partial, each with its own buffers, offsets and scalars.
// Nothing outside a segment's range is written.
TEST_P(PointwiseKernelTest, LaunchManyMatchesOneLaunchPerSegment) {
  ASSERT_EQ(kMixed.segments_per_launch(), 8);
  const int kSmall = PointwiseKernel::kSmallSegment;
  const std::vector<int> counts = {1,  17, 0,   4099, kSmall - 1, 3,  kSmall, 250, 64, 65,
                                   1,  2,  7,   kSmall + 13,     999, 31, 16,     5,   12};
  const float kUntouched = -99.f;
  struct Buffers {
    std::vector<float> a, b, acc;
    std::unique_ptr<Blob> da, db, dsum, dgated, dacc;
  };
  std::vector<Buffers> buffers(counts.size());
  std::vector<Segment> segments;
  unsigned seed = 100;
  for (size_t s = 0; s < counts.size(); ++s) {
    const int n = counts[s], offset = static_cast<int>(s % 3);
    Buffers& b = buffers[s];
    b.a = Random(n + offset, seed++);
    b.b = Random(n + offset, seed++);
    b.acc = Random(n + offset, seed++);
    b.da.reset(new Blob(Upload(b.a)));
    b.db.reset(new Blob(Upload(b.b)));
    b.dacc.reset(new Blob(Upload(b.acc)));
    b.dsum.reset(new Blob(TestContext(), {n + offset + 1}));
    b.dgated.reset(new Blob(TestContext(), {n + offset + 1}));
    b.dsum->SetData(kUntouched);
    b.dgated->SetData(kUntouched);
    segments.push_back({n,
                        {{b.da->data(), offset}, {b.db->data(), offset}, {b.dsum->data(), offset},
                         {b.dgated->data(), offset}, {b.dacc->data(), offset}},
                        {0.25f * s - 1.f, static_cast<int>(s % 2)}});
  }
  kMixed.LaunchMany(TestContext(), segments);
  for (size_t s = 0; s < counts.size(); ++s) {
    SCOPED_TRACE("segment " + std::to_string(s) + " of " + std::to_string(counts[s]));
    const int offset = static_cast<int>(s % 3);
    const Buffers& b = buffers[s];
    auto from_offset = [&](const std::vector<float>& v) {
      return std::vector<float>(v.begin() + offset, v.end());
    };
    const MixedReference want = Mixed(from_offset(b.a), from_offset(b.b), from_offset(b.acc),
                                      0.25f * s - 1.f, static_cast<int>(s % 2));
    const std::vector<float> sum = b.dsum->ReadData(), gated = b.dgated->ReadData(),
                             acc = b.dacc->ReadData();
    ExpectNear(sum, want.sum, offset, "sum");
    ExpectNear(gated, want.gated, offset, "gated");
    ExpectNear(acc, want.acc, offset, "acc");
    for (int i = 0; i < offset; ++i) {
      EXPECT_EQ(sum[i], kUntouched);
      EXPECT_EQ(acc[i], b.acc[i]);
    }
    EXPECT_EQ(sum.back(), kUntouched);
    EXPECT_EQ(gated.back(), kUntouched);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, PointwiseKernelTest, ::testing::Values("cpu", "gpu"));

// The message names the generated kernel and shows its body and the
// compiler's log.
TEST(PointwiseKernel, BodyThatDoesNotBuildIsAClearError) {
  const PointwiseKernel broken("test_broken_body", {In("x"), Out("y")}, "y = x +;");
  Blob x(TestContext(), {3}), y(TestContext(), {3});
  for (const char* shape : {"cpu", "gpu"}) {
    SetTestOption("kernel_shape", shape);
    try {
      broken.Launch(TestContext(), 3, {x.data(), y.data()});
      ADD_FAILURE() << "a body with a syntax error built";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("test_broken_body"), std::string::npos) << message;
      EXPECT_NE(message.find("y = x +;"), std::string::npos) << message;
      EXPECT_NE(message.find("does not build"), std::string::npos) << message;
    }
  }
  ResetTestOption("kernel_shape");
}

TEST(PointwiseKernel, BadDescriptionsAreErrors) {
  EXPECT_THROW(PointwiseKernel("dup", {In("x"), Out("x")}, "x = 1.f;"), Error);
  EXPECT_THROW(PointwiseKernel("reserved", {In("pw_x"), Out("y")}, "y = pw_x;"), Error);
  EXPECT_THROW(PointwiseKernel("not-an-identifier", {Out("y")}, "y = 1.f;"), Error);
  EXPECT_THROW(PointwiseKernel("channel_out", {ChannelOut("c"), Out("y")}, "y = 1.f;"), Error);
}


// Segments per batched launch: eight unless the arguments would pass 1024
// bytes of kernel parameters; none with per-channel inputs.
TEST(PointwiseKernel, SegmentsPerLaunchFitTheParameterSize) {
  std::vector<Arg> twelve;
  std::string body;
  for (int i = 0; i < 12; ++i) {
    twelve.push_back(InOut("x" + std::to_string(i)));
    body += "x" + std::to_string(i) + " += 1.f;\n";
  }
  // Per segment 12 pointers (8 bytes) and 4 + 12 + 1 ints: 164 bytes, six fit.
  EXPECT_EQ(PointwiseKernel("test_twelve", twelve, body).segments_per_launch(), 6);
  EXPECT_EQ(PointwiseKernel("test_channel", {Channel("c"), Out("y")}, "y = c;")
                .segments_per_launch(),
            1);
}

// Equal descriptions give equal text (the program and disk caches key on it);
// different bodies, different text.
TEST(PointwiseKernel, SourceIsDeterministic) {
  const PointwiseKernel a("test_same", {In("x"), Out("y")}, "y = 2.f * x;");
  const PointwiseKernel b("test_same", {In("x"), Out("y")}, "y = 2.f * x;");
  const PointwiseKernel c("test_same", {In("x"), Out("y")}, "y = 3.f * x;");
  EXPECT_EQ(a.source(), b.source());
  EXPECT_NE(a.source(), c.source());
  // Both kernels named test_same coexist.
  Blob x(TestContext(), {5}), y(TestContext(), {5});
  x.SetData(1.f);
  a.Launch(TestContext(), 5, {x.data(), y.data()});
  EXPECT_EQ(y.ReadData(), std::vector<float>(5, 2.f));
  c.Launch(TestContext(), 5, {x.data(), y.data()});
  EXPECT_EQ(y.ReadData(), std::vector<float>(5, 3.f));
}

}  // namespace test
}  // namespace dlcaffe
