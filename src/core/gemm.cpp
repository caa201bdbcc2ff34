// Placeholder GEMM dispatch; replaced by the tiled kernel family.
#include "dlcaffe/context.hpp"
#include "dlcaffe/math.hpp"

namespace dlcaffe {

void Gemm(Context& ctx, const GemmArgs& g) {
  if (g.M == 0 || g.N == 0) return;
  const bool ta = g.trans_a == Transpose::kYes, tb = g.trans_b == Transpose::kYes;
  const int lda = g.lda >= 0 ? g.lda : (ta ? g.M : g.K);
  const int ldb = g.ldb >= 0 ? g.ldb : (tb ? g.K : g.N);
  const int ldc = g.ldc >= 0 ? g.ldc : g.N;
  ctx.Launch(ctx.Kernel("gemm.cl", "", "gemm_naive"),
             NDRange(RoundUp(g.N, 8), RoundUp(g.M, 8)), NDRange(8, 8), g.M, g.N, g.K,
             g.alpha, g.A, (int)g.a_offset, lda, (int)ta, g.B, (int)g.b_offset, ldb,
             (int)tb, g.beta, g.C, (int)g.c_offset, ldc);
}

void Gemm(Context& ctx, Transpose trans_a, Transpose trans_b, int M, int N, int K,
          float alpha, cl_mem A, size_t a_offset, cl_mem B, size_t b_offset, float beta,
          cl_mem C, size_t c_offset) {
  GemmArgs g;
  g.trans_a = trans_a;
  g.trans_b = trans_b;
  g.M = M; g.N = N; g.K = K;
  g.alpha = alpha; g.beta = beta;
  g.A = A; g.a_offset = a_offset;
  g.B = B; g.b_offset = b_offset;
  g.C = C; g.c_offset = c_offset;
  Gemm(ctx, g);
}

}  // namespace dlcaffe
