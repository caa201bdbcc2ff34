// The GEMM arguments of one plain product C = op(A) op(B) + beta C over
// buffers of any storage type (pointwise::BufferArg: a cl_mem and how its
// elements are stored), for the layers that multiply whole blobs
// (InnerProduct, MatMul), under the layer's choices. Internal to the library.
#pragma once
#include "core/pointwise_kernel.hpp"
#include "dlcaffe/math.hpp"

namespace dlcaffe {

inline GemmArgs TypedProduct(bool trans_a, bool trans_b, int M, int N, int K,
                             const pointwise::BufferArg& A, const pointwise::BufferArg& B,
                             const pointwise::BufferArg& C, float beta, MatrixMath math,
                             const LayerChoices& choices) {
  GemmArgs g;
  g.trans_a = trans_a ? Transpose::kYes : Transpose::kNo;
  g.trans_b = trans_b ? Transpose::kYes : Transpose::kNo;
  g.M = M;
  g.N = N;
  g.K = K;
  g.A = A.mem;
  g.B = B.mem;
  g.C = C.mem;
  g.a_type = A.type;
  g.b_type = B.type;
  g.c_type = C.type;
  g.beta = beta;
  g.math = math;
  g.choices = choices;
  return g;
}

}  // namespace dlcaffe
