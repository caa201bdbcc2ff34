// Placeholder GEMM (one output per work-item); replaced by the tiled kernel.
__kernel void gemm_naive(const int M, const int N, const int K, const float alpha,
                         __global const float* A, const int a_off, const int lda,
                         const int trans_a, __global const float* B, const int b_off,
                         const int ldb, const int trans_b, const float beta,
                         __global float* C, const int c_off, const int ldc) {
  const int n = get_global_id(0), m = get_global_id(1);
  if (m >= M || n >= N) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) {
    const float a = trans_a ? A[a_off + k * lda + m] : A[a_off + m * lda + k];
    const float b = trans_b ? B[b_off + n * ldb + k] : B[b_off + k * ldb + n];
    acc += a * b;
  }
  const int c = c_off + m * ldc + n;
  C[c] = alpha * acc + (beta == 0.f ? 0.f : beta * C[c]);
}
