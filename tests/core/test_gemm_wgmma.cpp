// The GEMM's wgmma form (core/gemm_wgmma.hpp): its PTX as NVIDIA's OpenCL
// takes it, which products it takes, and its products.
//
// The products are checked against sums in double of the same 16-bit
// values, computed here: f16 and bf16 values multiply exactly in float, so
// the kernel's result differs from the double sum only by float rounding of
// the sums, at most (K + 8) * 2^-22 * |alpha * row scale| * sum |a| |b| per
// element, plus half an ulp of a 16-bit C. A fragment in the wrong place is
// off by a whole product, far outside.
//
// Where the device runs the form (compute capability 9.0: the GPU check
// runs this there), each product must have run it: the rule picks it, and
// the form is still on afterwards (a program that fails to load turns it
// off for the device). Elsewhere (PoCL, CI) the same products run the
// OpenCL C kernels a wgmma configuration falls back to, and must be right
// just the same.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "../../src/core/gemm_config.hpp"
#include "../../src/core/gemm_wgmma.hpp"
#include "../../src/core/matrix_engine.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/half_conversion.hpp"
#include "dlcaffe/math.hpp"
#include "dlcaffe/program_cache.hpp"
#include "dlcaffe/run_options.hpp"
#include "util/random_values.hpp"
#include "util/storage_values.hpp"
#include "util/test_context.hpp"
#include "util/test_depth.hpp"

namespace dlcaffe {
namespace test {
namespace {

using F = StorageType;

bool DeviceRunsWgmma(Context& ctx, MatrixMath math) { return WgmmaAvailable(ctx, ctx.default_choices(), math); }

// The embedded PTX: sm_90a, an entry per configuration and type, and every
// pointer parameter in OpenCL's form (without it every launch fails).
TEST(GemmWgmma, ProgramIsPtxInOpenClsParameterForm) {
  const auto& sources = EmbeddedKernelSources();
  const auto it = sources.find("gemm_wgmma.ptx");
  ASSERT_NE(it, sources.end()) << "gemm_wgmma.ptx is not embedded";
  const std::string& ptx = it->second;
  EXPECT_NE(ptx.find("\n.target sm_90a"), std::string::npos);
  int entries = 0;
  for (const GemmConfig& c : WgmmaConfigs())
    for (StorageType type : {F::kFloat16, F::kBFloat16}) {
      const std::string entry = ".entry " + WgmmaKernelName(type, c) + "(";
      EXPECT_NE(ptx.find(entry), std::string::npos) << "no " << entry;
      ++entries;
    }
  const std::regex param(R"(\.param \.u64 (\.ptr \.global \.align \d+ )?\w+)");
  int pointers = 0, plain = 0;
  for (auto m = std::sregex_iterator(ptx.begin(), ptx.end(), param); m != std::sregex_iterator();
       ++m)
    ++((*m)[1].matched ? pointers : plain);
  // A, B, C, bias and row scale in each kernel.
  EXPECT_EQ(pointers, 5 * entries);
  EXPECT_EQ(plain, 0) << "pointer parameters without '.ptr .global'";
}

GemmArgs Plain(int M, int N, int K, Transpose ta, Transpose tb) {
  GemmArgs g;
  g.M = M;
  g.N = N;
  g.K = K;
  g.trans_a = ta;
  g.trans_b = tb;
  g.math = MatrixMath::kFloat16;
  g.a_type = g.b_type = g.c_type = F::kFloat16;
  return g;
}

// Which products the form takes: whole 16-byte chunks, its own type, no
// windows. Checked on every device through the operand rule alone.
TEST(GemmWgmma, TakesWholeChunksOfItsOwnTypeOnly) {
  const GemmArgs fits = Plain(64, 64, 64, Transpose::kNo, Transpose::kNo);
  EXPECT_TRUE(WgmmaOperandsFit(fits, F::kFloat16));
  EXPECT_FALSE(WgmmaOperandsFit(fits, F::kBFloat16));  // stored in another type
  GemmArgs g = fits;
  g.K = 60;  // A's rows (K long) no whole chunks
  EXPECT_FALSE(WgmmaOperandsFit(g, F::kFloat16));
  g = fits;
  g.trans_a = Transpose::kYes;
  g.M = 60;  // A^T's rows are M long
  EXPECT_FALSE(WgmmaOperandsFit(g, F::kFloat16));
  g.M = 64;
  EXPECT_TRUE(WgmmaOperandsFit(g, F::kFloat16));
  g = fits;
  g.b_offset = 4;
  EXPECT_FALSE(WgmmaOperandsFit(g, F::kFloat16));
  g = fits;
  g.batch = 2;
  g.a_batch_stride = 64 * 64 + 4;
  EXPECT_FALSE(WgmmaOperandsFit(g, F::kFloat16));
  g = fits;
  g.b_group = 12;  // image groups of 12 columns straddle chunks
  g.b_image = 64 * 12;
  EXPECT_FALSE(WgmmaOperandsFit(g, F::kFloat16));
  g.b_group = 16;
  g.b_image = 64 * 16;
  EXPECT_TRUE(WgmmaOperandsFit(g, F::kFloat16));
  g = fits;
  g.b_window.out_h = g.b_window.out_w = 8;
  g.b_window.kernel_h = g.b_window.kernel_w = 1;
  g.b_window.height = g.b_window.width = 8;
  EXPECT_FALSE(WgmmaOperandsFit(g, F::kFloat16));  // implicit B
}

// The rule takes the form where the run option asks for it and the device
// runs it; never by default (mma.sync is faster so far).
TEST(GemmWgmma, RuleTakesTheFormOnlyWhenAskedAndWhereTheDeviceRunsIt) {
  Context& ctx = TestContext();
  const GemmArgs g = Plain(256, 256, 256, Transpose::kNo, Transpose::kNo);
  RunOptions asked = ctx.options();
  asked.matrix_wgmma = true;
  const Context wgmma(ctx.info(), asked);
  RunOptions unasked = ctx.options();
  unasked.matrix_wgmma = false;
  const Context plain(ctx.info(), unasked);
  EXPECT_EQ(RuleGemmConfig(plain, g).form, GemmForm::kOpenCL);
  const GemmConfig chosen = RuleGemmConfig(wgmma, g);
  if (DeviceRunsWgmma(ctx, g.math)) {
    EXPECT_EQ(chosen.form, GemmForm::kWgmma) << chosen.Name();
    GemmArgs narrow = g;
    narrow.M = 16;  // a 64-row warpgroup tile would be mostly padding
    EXPECT_EQ(RuleGemmConfig(wgmma, narrow).form, GemmForm::kOpenCL);
    GemmArgs float_math = g;
    float_math.math = MatrixMath::kFloat32;
    EXPECT_EQ(RuleGemmConfig(wgmma, float_math).form, GemmForm::kOpenCL);
  } else {
    EXPECT_EQ(chosen.form, GemmForm::kOpenCL) << chosen.Name();
    EXPECT_FALSE(NvidiaComputeCapability(ctx.info()) == 90 && ctx.options().matrix_engine)
        << "a compute capability 9.0 device whose wgmma form is off: it failed to load";
  }
}

struct Product {
  GemmArgs g;  // shapes, layout, grouping, epilogue flags (buffers bound by Check)
  int images = 1;  // for grouped B and C: the images the N columns span
  std::string what;
};

// Where element (m, k) of op(A) and element (k, n) of op(B) are stored;
// grouping runs along A's k, and B's contiguous axis.
size_t Grouped(int q, int group, int image) {
  return group ? size_t(q / group) * image + q % group : size_t(q);
}
size_t AAt(bool ta, int m, int k, int lda, int group, int image) {
  return ta ? size_t(k) * lda + m : size_t(m) * lda + Grouped(k, group, image);
}
size_t BAt(bool tb, int n, int k, int ldb, int group, int image) {
  return tb ? size_t(n) * ldb + Grouped(k, group, image) : size_t(k) * ldb + Grouped(n, group, image);
}

void Check(const Product& p, const GemmConfig& config, MatrixMath math, StorageType c_type) {
  Context& ctx = TestContext();
  const StorageType own = math == MatrixMath::kFloat16 ? F::kFloat16 : F::kBFloat16;
  GemmArgs g = p.g;
  g.math = math;
  g.a_type = g.b_type = own;
  g.c_type = c_type;
  SCOPED_TRACE(p.what + ", " + StorageTypeName(own) + ", C " + StorageTypeName(c_type) + " [" +
               config.Name() + "]");
  const bool ta = g.trans_a == Transpose::kYes, tb = g.trans_b == Transpose::kYes;
  const int lda = g.lda >= 0 ? g.lda : (ta ? g.M : g.K);
  const int ldb = g.ldb >= 0 ? g.ldb : (tb ? g.K : g.N);
  const int ldc = g.ldc >= 0 ? g.ldc : g.N;
  const int batch = std::max(1, g.batch);
  const size_t a_size = g.a_offset + g.a_batch_stride * (batch - 1) + size_t(ta ? g.K : g.M) * lda;
  const size_t b_size = p.g.b_group ? size_t(p.images) * g.b_image
                                    : g.b_offset + g.b_batch_stride * (batch - 1) + size_t(tb ? g.N : g.K) * ldb;
  const size_t c_size = p.g.c_group ? size_t(p.images) * g.c_image
                                    : g.c_offset + g.c_batch_stride * (batch - 1) + size_t(g.M) * ldc;
  const std::vector<float> a = RoundedTo(RandomValues(a_size, 3), own),
                           b = RoundedTo(RandomValues(b_size, 5), own),
                           c0 = RoundedTo(RandomValues(c_size, 7), c_type),
                           bias = RandomValues(size_t(g.M) * batch, 9),
                           scale = RandomValues(size_t(g.M) * batch, 11);
  BufferPtr da = UploadAs(ctx, a, own), db = UploadAs(ctx, b, own),
            dc = UploadAs(ctx, c0, c_type), dbias = UploadAs(ctx, bias, F::kFloat32),
            dscale = UploadAs(ctx, scale, F::kFloat32);
  g.A = da->mem();
  g.B = db->mem();
  g.C = dc->mem();
  if (p.g.bias) g.bias = dbias->mem();
  if (p.g.row_scale) g.row_scale = dscale->mem();
  g.epilogue_batch_stride = g.batch > 1 ? g.M : 0;
  GemmWithConfig(ctx, g, config);
  std::vector<float> got(c_size);
  {
    std::vector<char> bytes(c_size * StorageBytes(c_type));
    ctx.Read(dc->mem(), 0, bytes.size(), bytes.data());
    StorageToFloats(bytes.data(), static_cast<int>(c_size), c_type, got.data());
  }
  if (DeviceRunsWgmma(ctx, math) && WgmmaOperandsFit(g, own)) {
    EXPECT_TRUE(WgmmaRuns(ctx, config, g) && WgmmaAvailable(ctx, ctx.default_choices(), math))
        << "the wgmma form did not run (it failed to load and is off)";
  }

  std::vector<double> want(c0.begin(), c0.end());
  std::vector<bool> written(c_size, false);
  const double c_rounding = c_type == F::kFloat16    ? std::ldexp(1.0, -11)
                            : c_type == F::kBFloat16 ? std::ldexp(1.0, -8)
                                                     : 0.0;
  int failures = 0;
  for (int z = 0; z < batch; ++z)
    for (int m = 0; m < g.M; ++m) {
      const double rs = g.row_scale ? scale[size_t(z) * g.M + m] : 1.0;
      const double add = g.bias ? bias[size_t(z) * g.M + m] : 0.0;
      for (int n = 0; n < g.N; ++n) {
        double sum = 0, magnitude = 0;
        for (int k = 0; k < g.K; ++k) {
          const double x = a[g.a_offset + z * g.a_batch_stride + AAt(ta, m, k, lda, g.a_group, g.a_image)];
          const double y = b[g.b_offset + z * g.b_batch_stride + BAt(tb, n, k, ldb, g.b_group, g.b_image)];
          sum += x * y;
          magnitude += std::fabs(x * y);
        }
        const size_t ci = g.c_offset + z * g.c_batch_stride + size_t(m) * ldc + Grouped(n, g.c_group, g.c_image);
        double r = g.alpha * rs * sum + (g.beta != 0.f ? g.beta * c0[ci] : 0.0) + add;
        if (g.relu) r = std::max(r, 0.0);
        want[ci] = r;
        written[ci] = true;
        const double bound = (g.K + 8) * std::ldexp(1.0, -22) * std::fabs(g.alpha * rs) *
                                 magnitude +
                             c_rounding * std::fabs(r) + 1e-30;
        if (std::fabs(got[ci] - r) > bound && failures++ < 5)
          ADD_FAILURE() << "C[" << ci << "] (batch " << z << ", m " << m << ", n " << n
                        << ") = " << got[ci] << ", want " << r << " (bound " << bound << ")";
      }
    }
  // What the product does not cover keeps its value.
  for (size_t i = 0; i < c_size; ++i)
    if (!written[i] && got[i] != c0[i] && failures++ < 5)
      ADD_FAILURE() << "C[" << i << "] outside the product changed: " << got[i] << ", was "
                    << c0[i];
}

Product InLayout(int M, int N, int K, Transpose ta, Transpose tb, const std::string& what) {
  Product p;
  p.g = Plain(M, N, K, ta, tb);
  p.what = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) +
           (ta == Transpose::kYes ? " A^T" : " A") + (tb == Transpose::kYes ? " B^T" : " B") +
           ", " + what;
  return p;
}

std::vector<Product> Products() {
  std::vector<Product> products;
  // Partial tiles each way, k past a few 32-deep tiles, the whole epilogue.
  for (const auto& [ta, tb] :
       {std::pair{Transpose::kNo, Transpose::kNo}, std::pair{Transpose::kYes, Transpose::kNo},
        std::pair{Transpose::kNo, Transpose::kYes}, std::pair{Transpose::kYes, Transpose::kYes}}) {
    Product p = InLayout(136, 200, 104, ta, tb, "alpha, beta, bias, ReLU");
    p.g.alpha = 0.75f;
    p.g.beta = 0.5f;
    p.g.bias = reinterpret_cast<cl_mem>(1);  // Check binds the real ones
    p.g.relu = true;
    products.push_back(p);
  }
  Product tall = InLayout(264, 136, 520, Transpose::kNo, Transpose::kNo, "row scale");
  tall.g.row_scale = reinterpret_cast<cl_mem>(1);
  products.push_back(tall);
  // Leading dimensions past the rows, offsets, a batch.
  Product batch = InLayout(72, 48, 40, Transpose::kNo, Transpose::kYes, "batch of 3, ld, offsets");
  batch.g.batch = 3;
  batch.g.lda = 48;
  batch.g.ldb = 56;
  batch.g.ldc = 50;
  batch.g.a_offset = 8;
  batch.g.b_offset = 16;
  batch.g.c_offset = 3;
  batch.g.a_batch_stride = 72 * 48 + 8;
  batch.g.b_batch_stride = 48 * 56 + 16;
  batch.g.c_batch_stride = 72 * 50 + 3;
  batch.g.bias = reinterpret_cast<cl_mem>(1);
  products.push_back(batch);
  // A convolution's NCHW blobs: B (K channels) and C (M channels) over 3
  // images of 24 positions, image-grouped, C accumulated.
  Product images = InLayout(80, 3 * 24, 40, Transpose::kNo, Transpose::kNo, "grouped B and C");
  images.images = 3;
  images.g.ldb = 24;
  images.g.b_group = 24;
  images.g.b_image = 40 * 24;
  images.g.ldc = 24;
  images.g.c_group = 24;
  images.g.c_image = 80 * 24;
  images.g.beta = 1.f;
  products.push_back(images);
  return products;
}

// Every configuration of the form (and split-K) on every product, in both
// types, C in each storage type by turns. Off the device each is one
// OpenCL C program build on PoCL: CI runs a sample that meets every
// configuration, product and C type.
TEST(GemmWgmma, EveryLayoutEpilogueBatchGroupAndSplitK) {
  Context& ctx = TestContext();
  std::vector<GemmConfig> configs = WgmmaConfigs();
  GemmConfig sliced = WgmmaConfig(128, 128, 16, 6, 0);
  sliced.k_slices = 3;
  configs.push_back(sliced);
  const std::vector<Product> products = Products();
  const bool device = DeviceRunsWgmma(ctx, MatrixMath::kFloat16);
  int turn = 0;
  for (size_t ci = 0; ci < configs.size(); ++ci)
    for (size_t pi = 0; pi < products.size(); ++pi)
      for (MatrixMath math : {MatrixMath::kFloat16, MatrixMath::kBFloat16}) {
        const StorageType own = math == MatrixMath::kFloat16 ? F::kFloat16 : F::kBFloat16;
        const StorageType c_type = turn % 2 ? own : F::kFloat32;
        if (device || InSample(turn, 5)) Check(products[pi], configs[ci], math, c_type);
        ++turn;
      }
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
