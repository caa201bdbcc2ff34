// GEMM against a double-precision host reference, for every configuration of
// the kernel family that the dispatcher can pick on any device (so the
// GPU-shaped one is exercised on a CPU too), all four transpose combinations,
// odd sizes, padded leading dimensions, nonzero offsets, beta == 0 over a C
// full of NaN, and matrices flush against unreadable pages. CI runs a
// sample of the configurations and transposes that meets every value of
// each; DLCAFFE_NIGHTLY=1 runs them all (util/test_depth.hpp).
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "../../src/core/gemm_config.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/math.hpp"
#include "util/test_context.hpp"
#include "util/test_depth.hpp"

namespace dlcaffe {
namespace test {
namespace {

const float kSentinel = 1234.5f;  // marks storage outside a matrix window

// A device buffer over host memory fenced by PROT_NONE pages on both sides.
// On a CPU device that uses such memory in place (PoCL does), a kernel that
// reads or writes past either end faults instead of passing silently.
class FencedBuffer {
 public:
  FencedBuffer(Context& ctx, size_t floats) {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    bytes_ = RoundUp(std::max<size_t>(floats, 1) * sizeof(float), page_);
    base_ = static_cast<char*>(mmap(nullptr, bytes_ + 2 * page_, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    EXPECT_NE(base_, MAP_FAILED);
    mprotect(base_, page_, PROT_NONE);
    mprotect(base_ + page_ + bytes_, page_, PROT_NONE);
    cl_int err = CL_SUCCESS;
    mem_ = clCreateBuffer(ctx.cl(), CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, bytes_,
                          base_ + page_, &err);
    EXPECT_EQ(err, CL_SUCCESS);
  }
  ~FencedBuffer() {
    clReleaseMemObject(mem_);
    munmap(base_, bytes_ + 2 * page_);
  }
  cl_mem mem() const { return mem_; }
  size_t floats() const { return bytes_ / sizeof(float); }

 private:
  size_t page_ = 0, bytes_ = 0;
  char* base_ = nullptr;
  cl_mem mem_ = nullptr;
};

// Where a matrix window lies in its buffer: after `offset` floats of a pool
// buffer with slack behind it, or flush against the front or back fence.
enum class Placement { kPool, kFencedFront, kFencedBack };

// A rows x cols window with row stride `ld` inside a device buffer; the rest
// of the buffer and the padding columns hold kSentinel.
struct Matrix {
  int rows, cols, ld, offset;
  Placement placement;
  std::vector<float> host;
  BufferPtr pooled;
  std::unique_ptr<FencedBuffer> fenced;

  Matrix(int rows_, int cols_, int ld_pad, int offset_, Placement placement_)
      : rows(rows_), cols(cols_), ld(cols_ + ld_pad), offset(offset_),
        placement(placement_) {
    const size_t span = rows > 0 && cols > 0 ? size_t(rows - 1) * ld + cols : 0;
    if (placement == Placement::kPool) {
      host.assign(offset + size_t(rows) * ld + 5, kSentinel);
      return;
    }
    fenced.reset(new FencedBuffer(TestContext(), span));
    offset = placement == Placement::kFencedFront ? 0 : int(fenced->floats() - span);
    host.assign(fenced->floats(), kSentinel);
  }
  cl_mem mem() const { return fenced ? fenced->mem() : pooled->mem(); }
  float& at(int r, int c) { return host[offset + size_t(r) * ld + c]; }
  void FillRandom(unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) at(r, c) = dist(rng);
  }
  void FillWith(float value) {
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) at(r, c) = value;
  }
  void Upload(Context& ctx) {
    if (!fenced) pooled = ctx.Allocate(host.size() * sizeof(float));
    ctx.Write(mem(), 0, host.size() * sizeof(float), host.data());
  }
  std::vector<float> Download(Context& ctx) const {
    std::vector<float> out(host.size());
    ctx.Read(mem(), 0, out.size() * sizeof(float), out.data());
    return out;
  }
};

struct Problem {
  int M, N, K;
  bool ta, tb;
  float alpha, beta;
  int pad = 0, offset = 0;  // leading-dimension padding and buffer offsets
  // B's padding and offset beyond A's: by default off by 1 and 3 floats, so
  // that rows of A and B never share an alignment.
  int b_pad_extra = 1, b_offset_extra = 3;
  // The GPU shape must fetch both operands' interior tiles as float4s.
  bool expect_vector_loads = false;
};

// The GPU-shaped configurations whose tiles split into whole float4s per
// work-item (all but the 16-row narrow one): on aligned operands they take
// the float4 path.
bool SplitsIntoFloat4s(const GemmConfig& c) {
  return c.use_local && c.vector_loads && c.wg_m * c.mr >= 64;
}

std::string Describe(const Problem& p) {
  return "M=" + std::to_string(p.M) + " N=" + std::to_string(p.N) +
         " K=" + std::to_string(p.K) + (p.ta ? " A^T" : " A") + (p.tb ? " B^T" : " B") +
         " alpha=" + std::to_string(p.alpha) + " beta=" + std::to_string(p.beta) +
         " pad=" + std::to_string(p.pad) + " offset=" + std::to_string(p.offset);
}

// Runs the problem with `config` (nullptr: the dispatcher's Gemm()) and
// compares every element with the double-precision reference, within the
// classic bound (K + 2) * eps * (|alpha| sum |a||b| + |beta c|). Storage
// outside C's window must be untouched.
void RunAndCheck(const Problem& p, const GemmConfig* config,
                 Placement placement = Placement::kPool) {
  Context& ctx = TestContext();
  SCOPED_TRACE(Describe(p) + (config ? " [" + config->Name() + "]" : " [dispatcher]") +
               (placement == Placement::kPool ? "" : placement == Placement::kFencedFront
                                                         ? " fenced at the front"
                                                         : " fenced at the back"));
  Matrix a(p.ta ? p.K : p.M, p.ta ? p.M : p.K, p.pad, p.offset, placement);
  Matrix b(p.tb ? p.N : p.K, p.tb ? p.K : p.N, p.pad + p.b_pad_extra,
           p.offset + p.b_offset_extra, placement);
  Matrix c(p.M, p.N, p.pad + 2, p.offset + 1, placement);
  a.FillRandom(11 + p.M);
  b.FillRandom(23 + p.N);
  if (p.beta == 0.f) c.FillWith(std::numeric_limits<float>::quiet_NaN());
  else c.FillRandom(37 + p.K);
  a.Upload(ctx);
  b.Upload(ctx);
  c.Upload(ctx);

  GemmArgs g;
  g.trans_a = p.ta ? Transpose::kYes : Transpose::kNo;
  g.trans_b = p.tb ? Transpose::kYes : Transpose::kNo;
  g.M = p.M;
  g.N = p.N;
  g.K = p.K;
  g.alpha = p.alpha;
  g.beta = p.beta;
  g.A = a.mem();
  g.a_offset = a.offset;
  g.lda = a.ld;
  g.B = b.mem();
  g.b_offset = b.offset;
  g.ldb = b.ld;
  g.C = c.mem();
  g.c_offset = c.offset;
  g.ldc = c.ld;
  if (p.expect_vector_loads && config && SplitsIntoFloat4s(*config)) {
    const VectorLoads v = UsesVectorLoads(*config, g);
    EXPECT_TRUE(v.a && v.b);
  }
  if (config) GemmWithConfig(ctx, g, *config);
  else Gemm(ctx, g);
  const std::vector<float> result = c.Download(ctx);

  const double eps = std::numeric_limits<float>::epsilon();
  int failures = 0;
  for (size_t i = 0; i < result.size(); ++i) {
    const size_t rel = i - c.offset;
    const bool inside = i >= size_t(c.offset) && rel / c.ld < size_t(p.M) &&
                        int(rel % c.ld) < p.N;
    if (!inside) {
      ASSERT_EQ(result[i], kSentinel) << "storage outside C changed at " << i;
      continue;
    }
    const int m = rel / c.ld, n = rel % c.ld;
    double sum = 0, magnitude = 0;
    for (int k = 0; k < p.K; ++k) {
      const double av = p.ta ? a.at(k, m) : a.at(m, k);
      const double bv = p.tb ? b.at(n, k) : b.at(k, n);
      sum += av * bv;
      magnitude += std::fabs(av * bv);
    }
    double expected = p.alpha * sum;
    magnitude = std::fabs(p.alpha) * magnitude;
    if (p.beta != 0.f) {
      expected += p.beta * double(c.at(m, n));
      magnitude += std::fabs(p.beta * double(c.at(m, n)));
    }
    const double tolerance = (p.K + 2) * eps * magnitude + 1e-30;
    if (!(std::fabs(result[i] - expected) <= tolerance)) {
      ADD_FAILURE() << "C[" << m << "," << n << "] = " << result[i] << ", expected "
                    << expected << " (tolerance " << tolerance << ")";
      if (++failures >= 5) return;
    }
  }
}

// Odd sizes around every tile edge of the family (register tiles of 12 x 32,
// work-group tiles of 64 x 64), plus 1 and K = 1.
const std::vector<std::tuple<int, int, int>> kShapes = {
    {1, 1, 1},    {1, 3, 13},    {3, 1, 127},  {13, 13, 1},  {12, 32, 16},
    {13, 33, 17}, {127, 13, 3},  {3, 129, 13}, {65, 63, 33}, {129, 127, 129},
    {24, 64, 129}, {1, 257, 5}};

class GemmFamilyTest
    : public ::testing::TestWithParam<std::tuple<int, bool, bool>> {
 protected:

  GemmConfig config() const { return GemmConfigFamily()[std::get<0>(GetParam())]; }
  bool ta() const { return std::get<1>(GetParam()); }
  bool tb() const { return std::get<2>(GetParam()); }
};

TEST_P(GemmFamilyTest, OddShapesMatchReference) {
  const GemmConfig c = config();
  int variant = 0;
  for (const auto& shape : kShapes) {
    // Cycle through scalings and memory layouts so each shape meets a
    // different one: beta = 0 over NaN, beta = 1 (accumulate), general.
    const float alphas[] = {1.f, 1.f, -0.75f, 2.f};
    const float betas[] = {0.f, 1.f, 0.5f, 0.f};
    Problem p{std::get<0>(shape), std::get<1>(shape), std::get<2>(shape), ta(), tb(),
              alphas[variant % 4], betas[variant % 4]};
    p.pad = variant % 3 == 0 ? 0 : 5 + variant;
    p.offset = variant % 2 == 0 ? 0 : 7 * variant;
    ++variant;
    RunAndCheck(p, &c);
  }
}

// Every matrix flush against a fence, in front and behind: edge tiles must
// neither read nor write outside the matrices.
TEST_P(GemmFamilyTest, EdgesStayInsideTheMatrices) {
  const GemmConfig c = config();
  for (Placement placement : {Placement::kFencedFront, Placement::kFencedBack}) {
    RunAndCheck(Problem{13, 33, 17, ta(), tb(), 1.f, 0.5f, 0, 0}, &c, placement);
    RunAndCheck(Problem{3, 1, 31, ta(), tb(), 1.f, 0.f, 2, 0}, &c, placement);
    RunAndCheck(Problem{37, 71, 5, ta(), tb(), -1.f, 1.f, 1, 0}, &c, placement);
  }
}

TEST_P(GemmFamilyTest, BetaZeroNeverReadsC) {
  const GemmConfig c = config();
  RunAndCheck(Problem{13, 127, 33, ta(), tb(), 1.f, 0.f, 3, 5}, &c);
  RunAndCheck(Problem{31, 65, 1, ta(), tb(), -1.f, 0.f, 0, 0}, &c);
}

TEST_P(GemmFamilyTest, ZeroKAndZeroAlphaScaleC) {
  const GemmConfig c = config();
  RunAndCheck(Problem{13, 3, 0, ta(), tb(), 1.f, 0.f, 2, 4}, &c);   // NaN -> 0
  RunAndCheck(Problem{13, 3, 0, ta(), tb(), 1.f, 0.5f, 2, 4}, &c);  // C *= beta
  RunAndCheck(Problem{3, 13, 7, ta(), tb(), 0.f, -2.f, 0, 1}, &c);
}

TEST_P(GemmFamilyTest, EmptyOutputLeavesMemoryAlone) {
  const GemmConfig c = config();
  RunAndCheck(Problem{0, 13, 7, ta(), tb(), 1.f, 0.f, 1, 2}, &c);
  RunAndCheck(Problem{13, 0, 7, ta(), tb(), 1.f, 0.5f, 1, 2}, &c);
}

// Products whose operand rows all start on 16-byte boundaries: the GPU
// shape fetches their interior tiles as unguarded float4s (checked through
// UsesVectorLoads) and the edge tiles, in m, n and k, through the guarded
// path; both must agree with the reference.
TEST_P(GemmFamilyTest, AlignedInteriorTilesMatchReference) {
  const GemmConfig c = config();
  const Problem aligned[] = {
      {260, 264, 72, ta(), tb(), 1.f, 0.f, 0, 0, 0, 0, true},
      {256, 136, 100, ta(), tb(), -0.5f, 0.5f, 4, 8, 0, 0, true},
  };
  for (const Problem& p : aligned) RunAndCheck(p, &c);
}

// Each configuration of the family with each transpose combination it
// handles (DLCAFFE_NIGHTLY), or in CI one combination per configuration,
// configuration i taking the (i mod count)-th of those it handles, so that
// every configuration runs and each combination meets about a quarter of
// them (util/test_depth.hpp). Compiling each pair's kernel is most of this
// program's time on PoCL; the transposes are the same code in every
// configuration (TRANS_A / TRANS_B select the loads).
std::vector<std::tuple<int, bool, bool>> SupportedCombinations() {
  std::vector<std::tuple<int, bool, bool>> combinations;
  const std::vector<GemmConfig> family = GemmConfigFamily();
  for (int i = 0; i < static_cast<int>(family.size()); ++i) {
    std::vector<std::tuple<int, bool, bool>> supported;
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        if (family[i].Supports(ta ? Transpose::kYes : Transpose::kNo,
                               tb ? Transpose::kYes : Transpose::kNo))
          supported.emplace_back(i, ta, tb);
    for (int k = 0; k < static_cast<int>(supported.size()); ++k)
      if (NightlyDepth() || k == i % static_cast<int>(supported.size()))
        combinations.push_back(supported[k]);
  }
  return combinations;
}

// The family's configurations that case `case_index` of a sweep below runs
// with: all (DLCAFFE_NIGHTLY), or in CI those whose index plus the case's is
// a multiple of `stride`, so that the cases take turns over the family: each
// configuration meets about one case in `stride` (the sweeps give it at
// least one) and each case about one configuration in `stride`. Each pair is
// a kernel of its own to compile, most of this program's time on PoCL.
std::vector<GemmConfig> FamilyForCase(int case_index, int stride) {
  std::vector<GemmConfig> sample;
  const std::vector<GemmConfig> family = GemmConfigFamily();
  for (int i = 0; i < static_cast<int>(family.size()); ++i)
    if (InSample(i + case_index, stride)) sample.push_back(family[i]);
  return sample;
}

INSTANTIATE_TEST_SUITE_P(
    AllConfigurations, GemmFamilyTest, ::testing::ValuesIn(SupportedCombinations()),
    [](const ::testing::TestParamInfo<std::tuple<int, bool, bool>>& info) {
      const GemmConfig c = GemmConfigFamily()[std::get<0>(info.param)];
      std::string name = c.use_local ? "Local" : c.dot_form ? "Dot" : "Register";
      name += std::to_string(std::get<0>(info.param));
      name += std::get<1>(info.param) ? "_AT" : "_A";
      name += std::get<2>(info.param) ? "_BT" : "_B";
      return name;
    });

// Convolution's view of NCHW blobs: an axis of `images * group` indices
// stored `group` per image, images `image` floats apart (GemmArgs' grouped
// axes), and the bias + ReLU epilogue. Plain layouts have group 0.
struct GroupedCase {
  int M, N, K;
  bool ta, tb;
  int a_group, b_group, c_group;
  bool bias, relu;
  float alpha, beta;
  int batch = 1;  // products, each operand's matrices `stride` floats apart
  bool row_scale = false;
  // Rows, images and matrices of every operand start on 16-byte boundaries
  // (the GPU shape then fetches interior tiles as float4s where the groups
  // allow it); otherwise they are deliberately misaligned.
  bool aligned = false;
  // Product p's bias and row scale start epilogue_batch * p floats further
  // (a grouped convolution's groups); 0 shares them.
  int epilogue_batch = 0;
  // The bias per column of C (bias[n], a fully connected layer's outputs)
  // instead of per row.
  bool column_bias = false;
};

// Where element (row, q) of a stored matrix lies: q is the grouped index.
size_t GroupedAddress(int row, int q, int ld, int group, int image) {
  return size_t(row) * ld + (group ? size_t(q / group) * image + q % group : size_t(q));
}

// `batch` stored matrices of `rows` x `cols` whose column index may be
// grouped: row stride group + 1 (or cols + 2), images rows * ld + 3 floats
// apart, matrices `stride` floats apart with sentinels between them.
struct StoredMatrix {
  int rows, cols, group, ld, image;
  size_t stride;
  std::vector<float> host;
  BufferPtr buffer;
  StoredMatrix(int rows_, int cols_, int group_, int batch, bool aligned)
      : rows(rows_), cols(cols_), group(group_) {
    const int pad = aligned ? 4 : 1;
    ld = group ? group + pad : (aligned ? (cols + 3) / 4 * 4 + 4 : cols + 2);
    image = group ? rows * ld + (aligned ? 4 : 3) : 0;
    stride = GroupedAddress(rows - 1, cols - 1, ld, group, image) + 9;
    if (aligned) stride = (stride + 3) / 4 * 4;
    host.assign(stride * batch, kSentinel);
  }
  size_t address(int i, int r, int q) const {
    return i * stride + GroupedAddress(r, q, ld, group, image);
  }
  float& at(int i, int r, int q) { return host[address(i, r, q)]; }
};

void RunGroupedCase(const GroupedCase& t, const GemmConfig* config) {
  Context& ctx = TestContext();
  SCOPED_TRACE("M=" + std::to_string(t.M) + " N=" + std::to_string(t.N) + " K=" +
               std::to_string(t.K) + " groups a/b/c " + std::to_string(t.a_group) + "/" +
               std::to_string(t.b_group) + "/" + std::to_string(t.c_group) +
               (t.bias ? (t.column_bias ? " column bias" : " bias") : "") +
               (t.relu ? " relu" : "") +
               " batch " + std::to_string(t.batch) + (t.row_scale ? " row scale" : "") +
               (config ? " [" + config->Name() + "]" : " [dispatcher]"));
  // Stored shapes: A is M x K (grouped along k) or K x M; B is K x N (grouped
  // along n) or N x K (grouped along k); C is M x N (grouped along n).
  StoredMatrix a(t.ta ? t.K : t.M, t.ta ? t.M : t.K, t.a_group, t.batch, t.aligned);
  StoredMatrix b(t.tb ? t.N : t.K, t.tb ? t.K : t.N, t.b_group, t.batch, t.aligned);
  StoredMatrix c(t.M, t.N, t.c_group, t.batch, t.aligned);
  std::mt19937 rng(t.M * 131 + t.N * 7 + t.K);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (StoredMatrix* x : {&a, &b, &c})
    for (int i = 0; i < t.batch; ++i)
      for (int r = 0; r < x->rows; ++r)
        for (int q = 0; q < x->cols; ++q) x->at(i, r, q) = dist(rng);
  const int epilogue_extent = std::max(t.M, t.N) + (t.batch - 1) * t.epilogue_batch;
  std::vector<float> bias(epilogue_extent + 2), row_scale(epilogue_extent + 1);
  for (float& v : bias) v = dist(rng);
  for (float& v : row_scale) v = dist(rng);
  const std::vector<float> c_before = c.host;
  for (StoredMatrix* x : {&a, &b, &c}) {
    x->buffer = ctx.Allocate(x->host.size() * sizeof(float));
    ctx.Write(x->buffer->mem(), 0, x->host.size() * sizeof(float), x->host.data());
  }
  BufferPtr bias_buffer = ctx.Allocate(bias.size() * sizeof(float)),
            row_scale_buffer = ctx.Allocate(row_scale.size() * sizeof(float));
  ctx.Write(bias_buffer->mem(), 0, bias.size() * sizeof(float), bias.data());
  ctx.Write(row_scale_buffer->mem(), 0, row_scale.size() * sizeof(float), row_scale.data());

  GemmArgs g;
  g.trans_a = t.ta ? Transpose::kYes : Transpose::kNo;
  g.trans_b = t.tb ? Transpose::kYes : Transpose::kNo;
  g.M = t.M;
  g.N = t.N;
  g.K = t.K;
  g.alpha = t.alpha;
  g.beta = t.beta;
  g.A = a.buffer->mem();
  g.lda = a.ld;
  g.a_group = t.a_group;
  g.a_image = a.image;
  g.B = b.buffer->mem();
  g.ldb = b.ld;
  g.b_group = t.b_group;
  g.b_image = b.image;
  g.C = c.buffer->mem();
  g.ldc = c.ld;
  g.c_group = t.c_group;
  g.c_image = c.image;
  if (t.bias) {
    g.bias = bias_buffer->mem();
    g.bias_offset = 2;
    g.bias_per_column = t.column_bias;
  }
  if (t.row_scale) {
    g.row_scale = row_scale_buffer->mem();
    g.row_scale_offset = 1;
  }
  g.relu = t.relu;
  g.batch = t.batch;
  g.a_batch_stride = a.stride;
  g.b_batch_stride = b.stride;
  g.c_batch_stride = c.stride;
  g.epilogue_batch_stride = t.epilogue_batch;
  if (t.aligned && config && SplitsIntoFloat4s(*config)) {
    // Both operands go through the float4 path in the interior tiles.
    const VectorLoads v = UsesVectorLoads(*config, g);
    EXPECT_TRUE(v.a && v.b);
  }
  if (config) GemmWithConfig(ctx, g, *config);
  else Gemm(ctx, g);
  std::vector<float> result(c.host.size());
  ctx.Read(c.buffer->mem(), 0, result.size() * sizeof(float), result.data());

  std::vector<bool> inside(result.size(), false);
  int failures = 0;
  for (int p = 0; p < t.batch; ++p) {
    for (int m = 0; m < t.M; ++m)
      for (int n = 0; n < t.N; ++n) {
        const size_t i = c.address(p, m, n);
        inside[i] = true;
        double sum = 0, magnitude = 0;
        for (int k = 0; k < t.K; ++k) {
          const double av = t.ta ? a.at(p, k, m) : a.at(p, m, k);
          const double bv = t.tb ? b.at(p, n, k) : b.at(p, k, n);
          sum += av * bv;
          magnitude += std::fabs(av * bv);
        }
        const int e = p * t.epilogue_batch + m;  // the product's bias and scale
        const int bias_at = 2 + (t.column_bias ? p * t.epilogue_batch + n : e);
        const double alpha = t.alpha * (t.row_scale ? row_scale[1 + e] : 1.f);
        double expected = alpha * sum + t.beta * double(c_before[i]);
        if (t.bias) expected += bias[bias_at];
        if (t.relu) expected = std::max(expected, 0.0);
        magnitude = std::fabs(alpha) * magnitude + std::fabs(t.beta * c_before[i]) +
                    (t.bias ? std::fabs(bias[bias_at]) : 0.0);
        const double tolerance =
            (t.K + 3) * double(std::numeric_limits<float>::epsilon()) * magnitude + 1e-30;
        if (!(std::fabs(result[i] - expected) <= tolerance)) {
          ADD_FAILURE() << "C" << p << "[" << m << "," << n << "] = " << result[i]
                        << ", expected "
                        << expected;
          if (++failures >= 5) return;
        }
      }
  }
  for (size_t i = 0; i < result.size(); ++i) {
    if (!inside[i]) {
      ASSERT_EQ(result[i], c_before[i]) << "storage outside C changed at " << i;
    }
  }
}

// The three products of a convolution over a batch of 3 images of 7 pixels
// (forward into an NCHW top with bias and ReLU, backward-data from an NCHW
// top diff, weight gradient over both NCHW blobs, accumulating), then the
// epilogue on plain layouts and with K = 0, then batches of products (as
// Winograd's 36 per tile), then a per-row scale, through every configuration.
// Five cases add a bias per column instead (InnerProduct's forward, C = A B^T
// + bias[n]; the second, fourth, sixth, eighth and twelfth): over a grouped B,
// with ReLU and beta, with K = 0 into a grouped C, split over k in a batch
// with a bias per product, and with a row scale. (The epilogue is an
// argument, so they build no kernel the others do not.)
const std::vector<GroupedCase> kGroupedCases = {
    {13, 21, 20, false, false, 0, 7, 7, true, true, 1.f, 0.f},
    {20, 21, 13, true, false, 0, 7, 0, true, false, 1.f, 0.f, 1, false, false, 0, true},
    {13, 20, 21, false, true, 7, 7, 0, false, false, 1.f, 1.f},
    {17, 45, 40, false, true, 0, 0, 0, true, true, -0.5f, 0.5f, 1, false, false, 0, true},
    {33, 19, 5, true, false, 0, 0, 0, true, false, 1.f, 0.f},
    {5, 14, 0, false, false, 0, 0, 7, true, true, 1.f, 0.5f, 1, false, false, 0, true},
    {13, 29, 37, false, false, 0, 0, 0, true, false, 1.f, 0.f, 5},
    {9, 21, 200, true, true, 0, 0, 7, true, true, 0.5f, 1.f, 3, false, false, 5, true},
    {6, 10, 0, false, false, 0, 0, 0, true, false, 1.f, 0.5f, 2},
    // A per-row scale (BatchNorm folded into a convolution): grouped and
    // split over k, plain in every transpose.
    {13, 21, 200, false, false, 0, 7, 7, true, true, 1.f, 0.f, 1, true},
    {11, 19, 23, false, true, 0, 0, 0, true, false, -1.f, 0.5f, 1, true},
    {11, 19, 23, true, false, 0, 0, 0, true, false, 1.f, 0.f, 2, true, false, 0, true},
    {11, 19, 23, true, true, 0, 0, 0, true, true, 1.f, 1.f, 1, true},
    // A grouped convolution's groups as one batch, each product with its own
    // bias and row scale: short (one slice) and long (split over k).
    {5, 21, 18, false, false, 0, 7, 7, true, true, 1.f, 0.f, 4, true, false, 5},
    {6, 9, 300, false, false, 0, 0, 0, true, false, 1.f, 0.5f, 3, true, false, 6},
    {7, 13, 11, false, false, 0, 0, 0, true, true, 1.f, 0.f, 3, false, false, 7},
};

// A convolution's products over image-grouped operands whose groups (68
// pixels) and rows lie on 16-byte boundaries, with tiles wholly inside:
// forward (B and C grouped along n, bias + ReLU), weight gradient (A and
// B^T grouped along k, accumulating), and a batch of two products into a
// plain C with a bias per column (stored through whole vectors).
const std::vector<GroupedCase> kAlignedGroupedCases = {
    {132, 204, 136, false, false, 0, 68, 68, true, true, 1.f, 0.f, 1, false, true},
    {136, 132, 204, false, true, 68, 68, 0, false, false, 1.f, 1.f, 1, false, true},
    {132, 136, 140, false, false, 0, 68, 0, true, false, 0.5f, 0.f, 2, false, true, 0, true},
};

// (In CI the cases of each sweep below take turns over the family:
// FamilyForCase. The three aligned cases: each configuration meets one.)
TEST(Gemm, AlignedGroupedOperandsInEveryGpuShapedConfiguration) {
  for (size_t j = 0; j < kAlignedGroupedCases.size(); ++j) {
    const GroupedCase& t = kAlignedGroupedCases[j];
    RunGroupedCase(t, nullptr);
    for (const GemmConfig& c : FamilyForCase(static_cast<int>(j), kAlignedGroupedCases.size()))
      if (c.use_local) RunGroupedCase(t, &c);
  }
}

// Sixteen cases, a quarter of the family each in CI: every configuration
// meets four of them.
TEST(Gemm, GroupedOperandsAndEpilogueInEveryConfiguration) {
  for (size_t j = 0; j < kGroupedCases.size(); ++j) {
    const GroupedCase& t = kGroupedCases[j];
    RunGroupedCase(t, nullptr);
    for (const GemmConfig& c : FamilyForCase(static_cast<int>(j), 4))
      if (c.Supports(t.ta ? Transpose::kYes : Transpose::kNo,
                     t.tb ? Transpose::kYes : Transpose::kNo))
        RunGroupedCase(t, &c);
  }
}

// Implicit im2col (GemmArgs::b_window): the windows of 3 images of 3
// channels, 5 x 7, under a 3 x 2 kernel with pad, stride and dilation,
// starting at channel 1 (a convolution's second group); as B (forward) and
// as B^T (weight gradient, long k: split over k in the sliced
// configuration), against the same product over an explicit host im2col.
void RunWindowCase(bool transposed, float beta, const GemmConfig* config) {
  Context& ctx = TestContext();
  ConvolutionWindow w;
  w.height = 5;
  w.width = 7;
  w.kernel_h = 3;
  w.kernel_w = 2;
  w.pad_h = 1;
  w.pad_w = 0;
  w.stride_h = 2;
  w.stride_w = 1;
  w.dilation_h = 1;
  w.dilation_w = 2;
  w.out_h = (5 + 2 - 3) / 2 + 1;
  w.out_w = (7 - 3) / 1 + 1;
  const int images = 3, channels = 3, first_channel = 1, group_channels = 2;
  w.image_floats = channels * w.height * w.width;
  const int rows = group_channels * w.kernel_h * w.kernel_w;
  const int positions = images * w.out_h * w.out_w;
  SCOPED_TRACE(std::string(transposed ? "windows^T" : "windows") + " beta " +
               std::to_string(beta) + (config ? " [" + config->Name() + "]" : ""));
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> image(images * w.image_floats);
  for (float& v : image) v = dist(rng);
  // col[row][position], as im2col would store it.
  std::vector<double> col(size_t(rows) * positions, 0.0);
  for (int r = 0; r < rows; ++r)
    for (int q = 0; q < positions; ++q) {
      const int c = first_channel + r / 6, ki = r % 6 / 2, kj = r % 2;
      const int n = q / (w.out_h * w.out_w), oh = q % (w.out_h * w.out_w) / w.out_w,
                ow = q % w.out_w;
      const int ih = oh * 2 - 1 + ki, iw = ow - 0 + kj * 2;
      if (ih >= 0 && ih < w.height && iw >= 0 && iw < w.width)
        col[size_t(r) * positions + q] =
            image[n * w.image_floats + (c * w.height + ih) * w.width + iw];
    }
  const int M = 5, K = transposed ? positions : rows, N = transposed ? rows : positions;
  std::vector<float> a(size_t(M) * K), c(size_t(M) * N);
  for (float& v : a) v = dist(rng);
  for (float& v : c) v = dist(rng);
  BufferPtr da = ctx.Allocate(a.size() * sizeof(float)),
            db = ctx.Allocate(image.size() * sizeof(float)),
            dc = ctx.Allocate(c.size() * sizeof(float));
  ctx.Write(da->mem(), 0, a.size() * sizeof(float), a.data());
  ctx.Write(db->mem(), 0, image.size() * sizeof(float), image.data());
  ctx.Write(dc->mem(), 0, c.size() * sizeof(float), c.data());
  GemmArgs g;
  g.trans_b = transposed ? Transpose::kYes : Transpose::kNo;
  g.M = M;
  g.N = N;
  g.K = K;
  g.beta = beta;
  g.A = da->mem();
  g.B = db->mem();
  g.b_offset = size_t(first_channel) * w.height * w.width;
  g.b_window = w;
  g.C = dc->mem();
  if (config) GemmWithConfig(ctx, g, *config);
  else Gemm(ctx, g);
  std::vector<float> result(c.size());
  ctx.Read(dc->mem(), 0, result.size() * sizeof(float), result.data());
  int failures = 0;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double sum = 0, magnitude = std::fabs(beta * c[m * N + n]);
      for (int k = 0; k < K; ++k) {
        const double product = a[size_t(m) * K + k] *
                               (transposed ? col[size_t(n) * positions + k]
                                           : col[size_t(k) * positions + n]);
        sum += product;
        magnitude += std::fabs(product);
      }
      const double expected = sum + beta * c[m * N + n];
      if (!(std::fabs(result[m * N + n] - expected) <=
            (K + 3) * double(std::numeric_limits<float>::epsilon()) * magnitude + 1e-30)) {
        ADD_FAILURE() << "C[" << m << "," << n << "] = " << result[m * N + n] << ", expected "
                      << expected;
        if (++failures >= 5) return;
      }
    }
}

// Four cases (windows as B or as B^T, beta 0 or 1): each configuration
// meets one in CI.
TEST(Gemm, ImplicitWindowsInEveryGpuShapedConfiguration) {
  int case_index = 0;
  for (bool transposed : {false, true})
    for (float beta : {0.f, 1.f}) {
      RunWindowCase(transposed, beta, nullptr);
      for (const GemmConfig& c : FamilyForCase(case_index++, 4))
        if (c.use_local) RunWindowCase(transposed, beta, &c);
    }
}

// The dispatcher's own choice on this device, including the shapes the layers
// use most (LeNet on MNIST at batch 64, scaled down in N to stay quick).
TEST(Gemm, DispatcherMatchesReference) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      RunAndCheck(Problem{50, 576, 500, ta, tb, 1.f, 0.f}, nullptr);
      RunAndCheck(Problem{20, 25, 1000, ta, tb, 1.f, 1.f}, nullptr);
      RunAndCheck(Problem{130, 3, 257, ta, tb, 0.5f, 0.25f, 4, 9}, nullptr);
    }
}

TEST(Gemm, PackedConvenienceForm) {
  Context& ctx = TestContext();
  // [1 2 3; 4 5 6] * [1 0; 0 1; 1 1] = [4 5; 10 11]
  const std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {1, 0, 0, 1, 1, 1};
  BufferPtr da = ctx.Allocate(6 * sizeof(float)), db = ctx.Allocate(6 * sizeof(float)),
            dc = ctx.Allocate(4 * sizeof(float));
  ctx.Write(da->mem(), 0, 6 * sizeof(float), a.data());
  ctx.Write(db->mem(), 0, 6 * sizeof(float), b.data());
  Gemm(ctx, Transpose::kNo, Transpose::kNo, 2, 2, 3, 1.f, da->mem(), 0, db->mem(), 0, 0.f,
       dc->mem(), 0);
  std::vector<float> c(4);
  ctx.Read(dc->mem(), 0, 4 * sizeof(float), c.data());
  EXPECT_EQ(c, (std::vector<float>{4, 5, 10, 11}));
}

}  // namespace
}  // namespace test
// The split-K policy on a device of 132 compute units (an H100), for the
// products it was measured on: a product that fills the last wave runs
// whole; one that leaves units idle is split into the fewest slices that
// fill >= 90% of the last wave, each at least 16 k-tiles deep; DeepSplit
// aims at 8 work-groups per unit. Tiles streamed through the tensor cores
// split only where they leave over half the units idle.
TEST(Gemm, SplitKFillsTheLastWave) {
  const int units = 132;
  const GemmConfig square = GpuShapedGemmConfig();  // 128 x 128 tiles, 16 deep
  EXPECT_EQ(SplitKSlices(units, square, 4096, 4096, 4096, 1), 1);  // 1024 tiles
  EXPECT_EQ(SplitKSlices(units, square, 2048, 2048, 2048, 1), 1);  // 256: 97%
  EXPECT_EQ(SplitKSlices(units, square, 1024, 1024, 1024, 1), 2);  // 64 x 2: 97%
  EXPECT_EQ(SplitKSlices(units, square, 512, 3136, 4608, 1), 5);   // 100 x 5: 95%
  // 196 tiles fill 74%; 576 deep allows 2 slices of 16 k-tiles: 99%.
  EXPECT_EQ(SplitKSlices(units, square, 256, 12544, 576, 1), 2);
  EXPECT_EQ(SplitKSlices(units, square, 256, 12544, 255, 1), 1);  // too short to split
  // 140 tiles: 6 slices fill 91% (840 of 924 places).
  EXPECT_EQ(SplitKSlices(units, square, 1792, 1280, 2560, 1), 6);
  // Where the depth limit stops short of 90%, the best fill within it wins
  // (K 1024: at most 4 slices, 560 of 660 places).
  EXPECT_EQ(SplitKSlices(units, square, 1792, 1280, 1024, 1), 4);
  EXPECT_EQ(SplitKSlices(units, square, 1792, 1280, 512, 1), 2);  // 280 of 396
  // The batch counts as tiles.
  EXPECT_EQ(SplitKSlices(units, square, 1024, 1024, 1024, 2), 1);  // 128: 97%
  // DeepSplit: 5 tiles of 64 x 128 want 8 x 132 groups, 212 slices, and K
  // 802816 allows them.
  EXPECT_EQ(SplitKSlices(units, DeepSplit(GpuHalfHeightGemmConfig()), 64, 576, 802816, 1),
            212);
  GemmConfig fixed = square;
  fixed.k_slices = 3;
  EXPECT_EQ(SplitKSlices(units, fixed, 4096, 4096, 4096, 1), 3);
  // Tiles streamed through the tensor cores split only where over half the
  // units would idle: vit_b_16's products of 150 and 108 tiles run whole
  // (they were split 3 and 2 ways), 64 and 50 tiles as before.
  EXPECT_EQ(SplitKSlices(units, square, 3152, 768, 768, 1), 3);
  EXPECT_EQ(SplitKSlices(units, square, 3152, 768, 768, 1, true), 1);
  EXPECT_EQ(SplitKSlices(units, square, 2304, 768, 3152, 1, true), 1);
  EXPECT_EQ(SplitKSlices(units, square, 1024, 1024, 1024, 1, true), 2);
  EXPECT_EQ(SplitKSlices(units, square, 256, 3136, 576, 1, true), 2);
  EXPECT_EQ(SplitKSlices(units, fixed, 4096, 4096, 4096, 1, true), 3);
}

}  // namespace dlcaffe
