// The CPU shapes (src/cl/gemm_register.cl) as a GEMM form: one work-item
// per register tile running the whole k loop (operands read in place, or
// packed into panels first), and the dot form for C = A B^T. Batches run
// product by product; grouped operands and convolution windows are the GPU
// shape's (GemmWithConfig sends them there).
#include "core/gemm_launch.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/error.hpp"

namespace dlcaffe {

namespace {

const int kPackRun = 16;  // PACK_RUN in gemm.cl

// Copies the rows x K matrix X (element (r, k) at X[r*ld + k] if k_contiguous,
// else X[k*ld + r]) into zero-padded panels [ceil(rows/width)][K][width].
BufferPtr PackPanels(Context& ctx, int rows, int K, int width, cl_mem X, StorageType x_type,
                     int x_off, int ld, bool k_contiguous) {
  const int panels = CeilDiv(rows, width);
  BufferPtr packed = ctx.Allocate(sizeof(float) * size_t(panels) * width * K);
  const NDRange global = k_contiguous ? NDRange(CeilDiv(K, kPackRun), panels * width)
                                      : NDRange(RoundUp(K, kPackRun), panels);
  const NDRange local = k_contiguous ? NDRange(1, width) : NDRange(kPackRun, 1);
  // The panels are float whatever X holds (the kernel reads X as A_TYPE).
  ctx.Launch(ctx.Kernel("gemm.cl", TypeDefine("A", x_type), "gemm_pack_panels"), global, local,
             rows, K, width, X, x_off, ld, k_contiguous ? 1 : 0, packed->mem());
  return packed;
}

}  // namespace

void RunRegisterGemm(Context& ctx, const GemmConfig& c, const GemmArgs& g) {
  const bool ta = g.trans_a == Transpose::kYes, tb = g.trans_b == Transpose::kYes;
  const int M = g.M, N = g.N, K = g.K;
  const LeadingDims ld(g);
  const int lda = ld.a, ldb = ld.b, ldc = ld.c;
  const int a_off = static_cast<int>(g.a_offset), b_off = static_cast<int>(g.b_offset),
            c_off = static_cast<int>(g.c_offset);
  const int epilogue = EpilogueFlags(g);
  const LayerChoices choices = ProductChoices(ctx, g);
  // Unused buffer arguments get C.
  cl_mem bias = g.bias ? g.bias : g.C, row_scale = g.row_scale ? g.row_scale : g.C;
  const int bias_off = static_cast<int>(g.bias_offset),
            row_scale_off = static_cast<int>(g.row_scale_offset);
  const std::string types =
      TypeDefine("A", g.a_type) + TypeDefine("B", g.b_type) + TypeDefine("C", g.c_type);
  DLC_REQUIRE(c.Supports(g.trans_a, g.trans_b),
              "Gemm: configuration '" << c.Name() << "' cannot compute op(A) = "
                                      << (ta ? "A^T" : "A") << ", op(B) = "
                                      << (tb ? "B^T" : "B"));
  if (c.dot_form) {
    ctx.Launch(ctx.Kernel("gemm_register.cl", GemmDefines(choices, c, ta, tb, types), "gemm_tiled"),
               NDRange(CeilDiv(M, c.mr), CeilDiv(N, c.nr)), NDRange(1, 1), M, N, K, g.alpha,
               g.A, a_off, lda, g.B, b_off, ldb, g.beta, g.C, c_off, ldc, bias, bias_off,
               row_scale, row_scale_off, epilogue);
    return;
  }

  // Register-tile shape: operands are read in place where their layout
  // allows, else from packed panels (kept alive until the kernel is queued;
  // the in-order queue runs it before the pool hands the memory out again).
  const int mr = c.mr, nr = c.nr;
  cl_mem A = g.A, B = g.B;
  StorageType a_type = g.a_type, b_type = g.b_type;
  int a_off_k = a_off, lda_k = lda, a_block = ta ? mr : mr * lda;
  bool trans_a_k = ta;
  BufferPtr a_packed, b_packed;
  if (c.pack_a) {
    // A panel [K][MR] is a transposed A with lda = MR.
    a_packed = PackPanels(ctx, M, K, mr, g.A, g.a_type, a_off, lda, !ta);
    A = a_packed->mem();
    a_type = StorageType::kFloat32;
    a_off_k = 0;
    lda_k = mr;
    a_block = K * mr;
    trans_a_k = true;
  }
  int b_off_k = b_off, ldb_k = ldb, b_block = nr, b_cols = N;
  if (c.pack_b || tb || N < nr) {
    // The kernel needs NR contiguous columns per k: a transposed B has none,
    // a B narrower than NR too few.
    b_packed = PackPanels(ctx, N, K, nr, g.B, g.b_type, b_off, ldb, tb);
    B = b_packed->mem();
    b_type = StorageType::kFloat32;
    b_off_k = 0;
    ldb_k = nr;
    b_block = K * nr;
    b_cols = CeilDiv(N, nr) * nr;
  }
  ctx.Launch(ctx.Kernel("gemm_register.cl",
                        GemmDefines(choices, c, trans_a_k, false,
                                    TypeDefine("A", a_type) + TypeDefine("B", b_type) +
                                        TypeDefine("C", g.c_type)),
                        "gemm_tiled"),
             NDRange(CeilDiv(M, mr), CeilDiv(N, nr)), NDRange(1, 1), M, N, K, g.alpha, A,
             a_off_k, lda_k, a_block, B, b_off_k, ldb_k, b_block, b_cols, g.beta, g.C,
             c_off, ldc, bias, bias_off, row_scale, row_scale_off, epilogue);
}

}  // namespace dlcaffe
