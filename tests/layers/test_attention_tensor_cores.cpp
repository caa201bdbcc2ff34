// The fused Attention layer on the tensor cores (src/cl/attention_mma.cl):
// 16-bit Q, K, V with 16-bit math and head sizes that are multiples of 16.
// On a device without tensor cores the run option matrix_emulate runs the
// same kernels with the warp instructions written out in OpenCL C, so the
// fragment bookkeeping is checked on PoCL too; on NVIDIA's tensor cores the
// instructions themselves run.
//
// Forward and the gradients of Q, K and V are checked against sums in
// double over the same 16-bit inputs, element by element, within what the
// kernels' roundings allow: the probabilities (forward, dV) and dS (dQ, dK)
// are rounded to the 16-bit type as the next product's operand, and each
// result once as it is stored. So an element may differ by u (the type's
// unit roundoff) times the sum of the magnitudes of its terms, and u times
// its own magnitude; the test allows twice that. A misplaced fragment, a
// wrong row of the online softmax or a key past the causal bound gives
// errors of the values' own size. A (T, S) mask's gradient, dS summed over
// the batch and heads, is checked the same way.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "../../src/core/matrix_engine.hpp"
#include "dlcaffe/kernel_profile.hpp"
#include "dlcaffe/program_cache.hpp"
#include "util/clang_ptx.hpp"
#include "util/layer_test_util.hpp"
#include "util/storage_values.hpp"
#include "util/test_context.hpp"
#include "util/test_depth.hpp"

namespace dlcaffe {
namespace test {
namespace {

struct Case {
  const char* name;
  int B, H, T, S, dk, dv;
  bool heads_side_by_side, causal, mask;
  // With heads side by side: (T, B, H*D), and Q, K, V packed in one bottom.
  bool sequence_first = false, packed = false;
};

// Tensors as the test holds them: [b][h][t][d], whatever the layer's layout.
struct Tensors {
  std::vector<float> q, k, v, dout, mask;  // mask [t][s]
};

struct Gradients {
  std::vector<float> out, dq, dk, dv;
  std::vector<float> dmask;  // (T, S), where the case has a mask
};

int At(const Case& c, int b, int h, int t, int d, int rows, int D) {
  return ((b * c.H + h) * rows + t) * D + d;
}

// Row (b, t) of heads side by side: (B, T, ...) or (T, B, ...).
int RowOf(const Case& c, int b, int t, int rows) {
  return c.sequence_first ? t * c.B + b : b * rows + t;
}

// [b][h][t][d] <-> the layer's layout ((B, H, T, D), (B, T, H*D) or (T, B,
// H*D)).
std::vector<float> ToLayer(const Case& c, const std::vector<float>& x, int rows, int D) {
  if (!c.heads_side_by_side) return x;
  std::vector<float> y(x.size());
  for (int b = 0; b < c.B; ++b)
    for (int h = 0; h < c.H; ++h)
      for (int t = 0; t < rows; ++t)
        for (int d = 0; d < D; ++d)
          y[(RowOf(c, b, t, rows) * c.H + h) * D + d] = x[At(c, b, h, t, d, rows, D)];
  return y;
}
std::vector<float> FromLayer(const Case& c, const std::vector<float>& y, int rows, int D) {
  if (!c.heads_side_by_side) return y;
  std::vector<float> x(y.size());
  for (int b = 0; b < c.B; ++b)
    for (int h = 0; h < c.H; ++h)
      for (int t = 0; t < rows; ++t)
        for (int d = 0; d < D; ++d)
          x[At(c, b, h, t, d, rows, D)] = y[(RowOf(c, b, t, rows) * c.H + h) * D + d];
  return x;
}

std::vector<int> Shape(const Case& c, int rows, int D) {
  if (c.heads_side_by_side && c.sequence_first) return {rows, c.B, c.H * D};
  if (c.heads_side_by_side) return {c.B, rows, c.H * D};
  return {c.B, c.H, rows, D};
}

// Packed rows: Q's, K's and V's row (each `width` values) side by side, and
// back.
std::vector<float> Pack(const std::vector<std::vector<float>>& parts, int width) {
  std::vector<float> packed;
  for (size_t row = 0; row * width < parts[0].size(); ++row)
    for (const std::vector<float>& x : parts)
      packed.insert(packed.end(), x.begin() + row * width, x.begin() + (row + 1) * width);
  return packed;
}
std::vector<float> Unpack(const std::vector<float>& packed, int part, int width) {
  std::vector<float> x;
  for (size_t row = 0; row * 3 * width < packed.size(); ++row) {
    const auto from = packed.begin() + (row * 3 + part) * width;
    x.insert(x.end(), from, from + width);
  }
  return x;
}

std::vector<float> Uniform(int n, unsigned seed, StorageType type) {
  Blob b(TestContext(), {n});
  FillUniform(&b, -1.f, 1.f, seed);
  return RoundedTo(b.ReadData(), type);
}

Tensors MakeTensors(const Case& c, StorageType type) {
  Tensors x;
  x.q = Uniform(c.B * c.H * c.T * c.dk, 11, type);
  x.k = Uniform(c.B * c.H * c.S * c.dk, 12, type);
  x.v = Uniform(c.B * c.H * c.S * c.dv, 13, type);
  x.dout = Uniform(c.B * c.H * c.T * c.dv, 14, type);
  if (c.mask) {
    x.mask = Uniform(c.T * c.S, 15, StorageType::kFloat32);
    for (int i = 5; i < c.T * c.S; i += 9)
      if (i % c.S != 0) x.mask[i] = -std::numeric_limits<float>::infinity();
  }
  return x;
}

std::string Param(const Case& c) {
  std::string p = "type: 'Attention' attention_param {";
  if (c.heads_side_by_side) p += " num_heads: " + std::to_string(c.H);
  if (c.sequence_first) p += " layout: SEQUENCE_FIRST";
  if (c.packed) p += " packed_qkv: true";
  if (c.causal) p += " causal: true";
  return p + " }";
}

Gradients RunLayer(const Case& c, StorageType type, const Tensors& x) {
  Context& ctx = TestContext();
  auto layer = MakeLayer(Param(c));
  Blob q(ctx), k(ctx), v(ctx), qkv(ctx), mask(ctx), out(ctx);
  for (Blob* b : {&q, &k, &v, &qkv, &out}) b->set_storage_type(type);
  q.Reshape(Shape(c, c.T, c.dk));
  k.Reshape(Shape(c, c.S, c.dk));
  v.Reshape(Shape(c, c.S, c.dv));
  qkv.Reshape(Shape(c, c.T, 3 * c.dk));
  std::vector<Blob*> bottom = c.packed ? std::vector<Blob*>{&qkv} : std::vector<Blob*>{&q, &k, &v};
  if (c.mask) {
    mask.Reshape({c.T, c.S});
    mask.WriteData(x.mask);
    bottom.push_back(&mask);
  }
  layer->SetUp(bottom, {&out});
  const std::vector<float> q_values = ToLayer(c, x.q, c.T, c.dk),
                           k_values = ToLayer(c, x.k, c.S, c.dk),
                           v_values = ToLayer(c, x.v, c.S, c.dv);
  if (c.packed) {
    qkv.WriteData(Pack({q_values, k_values, v_values}, c.H * c.dk));
  } else {
    q.WriteData(q_values);
    k.WriteData(k_values);
    v.WriteData(v_values);
  }
  layer->Forward(bottom, {&out});
  out.WriteDiff(ToLayer(c, x.dout, c.T, c.dv));
  layer->Backward({&out}, std::vector<bool>(bottom.size(), true), bottom);
  std::vector<float> dq, dk, dv;
  if (c.packed) {
    const std::vector<float> packed = qkv.ReadDiff();
    dq = Unpack(packed, 0, c.H * c.dk), dk = Unpack(packed, 1, c.H * c.dk),
    dv = Unpack(packed, 2, c.H * c.dk);
  } else {
    dq = q.ReadDiff(), dk = k.ReadDiff(), dv = v.ReadDiff();
  }
  return {FromLayer(c, out.ReadData(), c.T, c.dv), FromLayer(c, dq, c.T, c.dk),
          FromLayer(c, dk, c.S, c.dk), FromLayer(c, dv, c.S, c.dv),
          c.mask ? mask.ReadDiff() : std::vector<float>()};
}

// The sums in double, and for each element the sum of its terms'
// magnitudes over the values the kernels round (P for out and dV, dS for dQ
// and dK). Backward reads the output as the layer stored it. The mask's
// gradient (dS summed over batch and heads) is never rounded to 16 bits:
// its magnitude is that of the float sums behind dS, P (|dO| |V| + |dO| |O|).
struct Expected {
  Gradients value, magnitude;
};

Expected Reference(const Case& c, const Tensors& x, const std::vector<float>& stored_out) {
  Expected e;
  for (Gradients* g : {&e.value, &e.magnitude}) {
    g->out.assign(x.dout.size(), 0.f);
    g->dq.assign(x.q.size(), 0.f);
    g->dk.assign(x.k.size(), 0.f);
    g->dv.assign(x.v.size(), 0.f);
    g->dmask.assign(c.mask ? x.mask.size() : 0, 0.f);
  }
  const double scale = 1.0 / std::sqrt(double(c.dk));
  std::vector<double> p(c.S), ds(c.S);
  for (int b = 0; b < c.B; ++b)
    for (int h = 0; h < c.H; ++h)
      for (int t = 0; t < c.T; ++t) {
        double top = -INFINITY;
        for (int s = 0; s < c.S; ++s) {
          const bool seen = !c.causal || s <= t + c.S - c.T;
          double score = 0;
          for (int d = 0; d < c.dk; ++d)
            score += double(x.q[At(c, b, h, t, d, c.T, c.dk)]) * x.k[At(c, b, h, s, d, c.S, c.dk)];
          p[s] = seen ? score * scale + (c.mask ? x.mask[t * c.S + s] : 0.f) : -INFINITY;
          top = std::max(top, p[s]);
        }
        double sum = 0;
        for (int s = 0; s < c.S; ++s) {
          p[s] = top == -INFINITY ? 0 : std::exp(p[s] - top);
          sum += p[s];
        }
        for (int s = 0; s < c.S; ++s) p[s] = sum > 0 ? p[s] / sum : 0;
        double delta = 0, delta_magnitude = 0;
        for (int d = 0; d < c.dv; ++d) {
          const double term = double(x.dout[At(c, b, h, t, d, c.T, c.dv)]) *
                              stored_out[At(c, b, h, t, d, c.T, c.dv)];
          delta += term;
          delta_magnitude += std::fabs(term);
        }
        for (int s = 0; s < c.S; ++s) {
          double dp = 0, dp_magnitude = 0;
          for (int d = 0; d < c.dv; ++d) {
            const double term =
                double(x.dout[At(c, b, h, t, d, c.T, c.dv)]) * x.v[At(c, b, h, s, d, c.S, c.dv)];
            dp += term;
            dp_magnitude += std::fabs(term);
          }
          ds[s] = p[s] * (dp - delta);
          if (c.mask) {
            e.value.dmask[t * c.S + s] += ds[s];
            e.magnitude.dmask[t * c.S + s] += p[s] * (dp_magnitude + delta_magnitude);
          }
        }
        for (int d = 0; d < c.dv; ++d) {
          const int o = At(c, b, h, t, d, c.T, c.dv);
          double out = 0, out_magnitude = 0;
          for (int s = 0; s < c.S; ++s) {
            const double vv = x.v[At(c, b, h, s, d, c.S, c.dv)];
            out += p[s] * vv;
            out_magnitude += p[s] * std::fabs(vv);
            e.value.dv[At(c, b, h, s, d, c.S, c.dv)] += p[s] * x.dout[o];
            e.magnitude.dv[At(c, b, h, s, d, c.S, c.dv)] += p[s] * std::fabs(x.dout[o]);
          }
          e.value.out[o] = out;
          e.magnitude.out[o] = out_magnitude;
        }
        for (int d = 0; d < c.dk; ++d) {
          const int i = At(c, b, h, t, d, c.T, c.dk);
          double dq = 0, dq_magnitude = 0;
          for (int s = 0; s < c.S; ++s) {
            const int j = At(c, b, h, s, d, c.S, c.dk);
            dq += ds[s] * x.k[j] * scale;
            dq_magnitude += std::fabs(ds[s] * x.k[j]) * scale;
            e.value.dk[j] += ds[s] * x.q[i] * scale;
            e.magnitude.dk[j] += std::fabs(ds[s] * x.q[i]) * scale;
          }
          e.value.dq[i] = dq;
          e.magnitude.dq[i] = dq_magnitude;
        }
      }
  return e;
}

double UnitRoundoff(StorageType type) {
  return type == StorageType::kBFloat16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
}

void ExpectWithin(const std::vector<float>& got, const std::vector<float>& want,
                  const std::vector<float>& magnitude, double u, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double allowed = 2 * u * (magnitude[i] + std::fabs(want[i])) + 1e-6;
    const double error = std::fabs(double(got[i]) - want[i]);
    worst = std::max(worst, error / allowed);
    if (!(error <= allowed) && bad++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: " << got[i] << ", expected " << want[i]
                    << " within " << allowed;
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.size() << " elements out of bounds";
  // The bound is not so loose that anything passes: the errors use part of it.
  std::vector<float> zeros(want.size(), 0.f);
  bool all_zero = want == zeros;
  EXPECT_FALSE(all_zero) << what << " is all zeros: the case checks nothing";
  ::testing::Test::RecordProperty(std::string("worst_") + what, std::to_string(worst));
}

// Whether this context runs attention_mma.cl's instructions or their
// emulation; the emulation is switched on where there are no tensor cores.
bool UseTensorCoresOrEmulate(StorageType type) {
  Context& ctx = TestContext();
  const MatrixMath math =
      type == StorageType::kFloat16 ? MatrixMath::kFloat16 : MatrixMath::kBFloat16;
  const bool real = MmaFormFor(ctx, ctx.default_choices(), math) != MmaForm::kNone;
  SetTestOption("matrix_emulate", real ? "off" : "on");
  return real;
}

// Names of the kernels run since the last call.
std::vector<std::string> KernelsRun() {
  std::vector<std::string> names;
  for (const KernelTime& k : TestContext().kernel_profile()->Collect())
    names.push_back(k.label.substr(0, k.label.find(' ')));
  return names;
}

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

const Case kCases[] = {
    // odd lengths, a mask with -inf entries, keys fewer than queries
    {"plain_masked", 2, 3, 70, 45, 32, 32, false, false, true},
    // heads side by side (B, T, H*D), causal, several tiles of both
    {"heads_causal", 2, 2, 67, 67, 64, 64, true, true, false},
    // Dk != Dv, more keys than queries: causal with a shift of 110
    {"shifted_causal", 1, 2, 20, 130, 16, 48, false, true, false},
    // the largest head size
    {"head_128", 1, 1, 65, 33, 128, 128, false, false, true},
    // nn.MultiheadAttention's packed, sequence-first projection, a mask
    {"packed_sequence_first", 2, 3, 70, 70, 32, 32, true, false, true, true, true},
};

// Emulated (CI), each case is a program to build, about 13 s on PoCL: the
// short form takes one case per type -- f16 the shifted causal one (Dk !=
// Dv, three tiles of keys), bf16 the packed one (odd lengths, Q, K and V at
// offsets in one buffer, the mask's gradient) -- and nightly every case; on
// tensor cores every case runs.
bool CaseInSample(int index, StorageType type, bool real) {
  if (real || NightlyDepth()) return true;
  return index == (type == StorageType::kFloat16 ? 2 : 4);
}

TEST(AttentionTensorCores, MatchesDoubleSumsWithinTheRoundings) {
  TestContext().EnableKernelProfile();
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    const bool real = UseTensorCoresOrEmulate(type);
    for (int i = 0; i < int(std::size(kCases)); ++i) {
      if (!CaseInSample(i, type, real)) continue;
      const Case& c = kCases[i];
      SCOPED_TRACE(std::string(StorageTypeName(type)) + " " + c.name +
                   (real ? " (tensor cores)" : " (emulated)"));
      const Tensors x = MakeTensors(c, type);
      KernelsRun();
      const Gradients got = RunLayer(c, type, x);
      const std::vector<std::string> ran = KernelsRun();
      for (const char* kernel : {"attention_mma_forward", "attention_mma_backward_dq",
                                 "attention_mma_backward_dkv"})
        EXPECT_TRUE(Contains(ran, kernel)) << kernel << " did not run";
      const Expected want = Reference(c, x, got.out);
      const double u = UnitRoundoff(type);
      ExpectWithin(got.out, want.value.out, want.magnitude.out, u, "out");
      ExpectWithin(got.dq, want.value.dq, want.magnitude.dq, u, "dq");
      ExpectWithin(got.dk, want.value.dk, want.magnitude.dk, u, "dk");
      ExpectWithin(got.dv, want.value.dv, want.magnitude.dv, u, "dv");
      if (c.mask)  // float sums: u of float with room for the sums' length
        ExpectWithin(got.dmask, want.value.dmask, want.magnitude.dmask, std::ldexp(1.0, -16),
                     "dmask");
    }
  }
  ResetTestOption("matrix_emulate");
}

// No atomics, one order of sums: a second run gives the same bits.
TEST(AttentionTensorCores, RunsAreIdentical) {
  const StorageType type = StorageType::kBFloat16;
  UseTensorCoresOrEmulate(type);
  const Case& c = kCases[4];  // the bf16 case the short form builds
  const Tensors x = MakeTensors(c, type);
  const Gradients first = RunLayer(c, type, x), second = RunLayer(c, type, x);
  EXPECT_EQ(first.out, second.out);
  EXPECT_EQ(first.dq, second.dq);
  EXPECT_EQ(first.dk, second.dk);
  EXPECT_EQ(first.dv, second.dv);
  ResetTestOption("matrix_emulate");
}

// Float math in 16-bit storage, or a head size that is not a multiple of
// 16, keeps the float kernels.
TEST(AttentionTensorCores, FloatMathAndOddHeadSizesKeepTheFloatKernels) {
  const StorageType type = StorageType::kFloat16;
  UseTensorCoresOrEmulate(type);
  TestContext().EnableKernelProfile();
  Case odd = kCases[0];
  odd.dk = odd.dv = 24;
  KernelsRun();
  RunLayer(odd, type, MakeTensors(odd, type));
  std::vector<std::string> ran = KernelsRun();
  EXPECT_TRUE(Contains(ran, "attention_forward"));
  EXPECT_FALSE(Contains(ran, "attention_mma_forward"));

  Context& ctx = TestContext();
  auto layer = MakeLayer(
      "type: 'Attention' forward_math: FLOAT backward_math: FLOAT attention_param { }");
  Blob q(ctx), k(ctx), v(ctx), out(ctx);
  for (Blob* b : {&q, &k, &v, &out}) {
    b->set_storage_type(type);
    b->Reshape({1, 1, 8, 16});
  }
  FillUniform(&q, -1.f, 1.f, 3);
  FillUniform(&k, -1.f, 1.f, 4);
  FillUniform(&v, -1.f, 1.f, 5);
  layer->SetUp({&q, &k, &v}, {&out});
  layer->Forward({&q, &k, &v}, {&out});
  ran = KernelsRun();
  EXPECT_TRUE(Contains(ran, "attention_forward"));
  EXPECT_FALSE(Contains(ran, "attention_mma_forward"));
  ResetTestOption("matrix_emulate");
}

// The instructions' form (no emulation) is built only by NVIDIA's driver:
// clang compiles it to PTX here, in both types, at the smallest head size
// in two stages and the largest in one, and each kernel's products are all
// there: per 64-row tile,
// Q K^T and P V forward (Dk / 2 and Dv / 2 mma), three products for dQ
// and four for dK and dV.
TEST(AttentionTensorCores, TheInstructionFormCompilesToPtx) {
  ASSERT_NE(FindClang(), "") << "clang is not on the PATH: scripts/install_deps.sh installs it";
  const std::string source = ProgramCache::SourceText("attention_mma.cl", SourceDir() + "/src/cl");
  for (const int mma : {1, 2})
    for (const int d : {16, 128}) {
      const int stages = d == 16 ? 2 : 1;  // as the host picks them on NVIDIA's 48 KiB
      SCOPED_TRACE("MMA " + std::to_string(mma) + ", head size " + std::to_string(d));
      std::string log;
      const std::string ptx = CompileToPtx(
          source, "-DMMA=" + std::to_string(mma) + " -DDK=" + std::to_string(d) + " -DDV=" +
                      std::to_string(d) + " -DDATA_TYPE=" + std::to_string(mma) +
                      " -DSTAGES=" + std::to_string(stages),
          &log);
      ASSERT_NE(ptx, "") << log;
      const std::string instruction = mma == 1
                                          ? "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
                                          : "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32";
      EXPECT_EQ(Occurrences(ptx, instruction), size_t(d + 3 * d / 2 + 2 * d));
      EXPECT_GT(Occurrences(ptx, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"), 0u);
      EXPECT_GT(Occurrences(ptx, "shfl.sync.bfly.b32"), 0u);
      EXPECT_GT(Occurrences(ptx, "cp.async.cg.shared.global"), 0u);
      EXPECT_GT(Occurrences(ptx, stages == 2 ? "cp.async.wait_group 1" : "cp.async.wait_group 0"),
                0u);
    }
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
