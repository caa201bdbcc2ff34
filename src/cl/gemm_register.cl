// The GEMM's CPU shapes (host: core/gemm_register.cpp): one work-item per
// register tile running the whole k loop, or (DOT_FORM) per block of dot
// products. Its defines: gemm.cl.
#include "gemm.cl"

#ifdef MR
#if USE_LOCAL
#error "gemm_register.cl is the CPU shape: USE_LOCAL=0"
#endif
#if DOT_FORM  // CPU shape for C = A * B^T

#if TRANS_A || !TRANS_B
#error "the dot-product form reads rows of A and rows of B (C = A * B^T)"
#endif

inline float hsum(const floatV v) {
#if VW == 16
  const float8 h8 = v.lo + v.hi;
  const float4 h4 = h8.lo + h8.hi;
#elif VW == 8
  const float4 h4 = v.lo + v.hi;
#endif
#if VW >= 8
  const float2 h2 = h4.lo + h4.hi;
#elif VW == 4
  const float2 h2 = v.lo + v.hi;
#endif
#if VW >= 4
  return h2.x + h2.y;
#elif VW == 2
  return v.x + v.y;
#else
  return v;
#endif
}

// Both operands are read along k, where they are contiguous: work-item
// (mb, nb) keeps MR x NR partial dot products of VW lanes each, adding VW
// consecutive k per step, and reduces the lanes at the end; the last K % VW
// k are scalar. Rows past M or N are clamped (read, never stored). Nothing is
// packed.
__kernel void gemm_tiled(const int M, const int N, const int K, const float alpha,
                         __global const A_ELEM* A, const int a_off, const int lda,
                         __global const B_ELEM* B, const int b_off, const int ldb,
                         const float beta, __global C_ELEM* C, const int c_off,
                         const int ldc, __global const float* bias, const int bias_off,
                         __global const float* row_scale, const int row_scale_off,
                         const int epilogue) {
  const int mb = get_global_id(0), nb = get_global_id(1);
  const int m0 = mb * MR, n0 = nb * NR;
  if (m0 >= M || n0 >= N) return;
  __global const A_ELEM* a_rows[MR];
  __global const B_ELEM* b_rows[NR];
#pragma unroll
  for (int i = 0; i < MR; ++i) a_rows[i] = A + a_off + min(m0 + i, M - 1) * lda;
#pragma unroll
  for (int j = 0; j < NR; ++j) b_rows[j] = B + b_off + min(n0 + j, N - 1) * ldb;

  floatV acc[MR][NR];
#pragma unroll
  for (int i = 0; i < MR; ++i)
#pragma unroll
    for (int j = 0; j < NR; ++j) acc[i][j] = (floatV)0.f;
  const int k_vectors = K / VW;
  for (int kv = 0; kv < k_vectors; ++kv) {
    floatV av[MR], bv[NR];
#pragma unroll
    for (int i = 0; i < MR; ++i) av[i] = A_VLOAD(kv, a_rows[i]);
#pragma unroll
    for (int j = 0; j < NR; ++j) bv[j] = B_VLOAD(kv, b_rows[j]);
#pragma unroll
    for (int i = 0; i < MR; ++i)
#pragma unroll
      for (int j = 0; j < NR; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
  }
  float sums[MR][NR];
#pragma unroll
  for (int i = 0; i < MR; ++i)
#pragma unroll
    for (int j = 0; j < NR; ++j) sums[i][j] = hsum(acc[i][j]);
  for (int k = k_vectors * VW; k < K; ++k)
#pragma unroll
    for (int i = 0; i < MR; ++i)
#pragma unroll
      for (int j = 0; j < NR; ++j)
        sums[i][j] = fma(A_LOAD(a_rows[i], k), B_LOAD(b_rows[j], k), sums[i][j]);

  C += c_off;
  const int rows = min(MR, M - m0), cols = min(NR, N - n0);
  for (int i = 0; i < rows; ++i) {
    const float row_bias = (epilogue & EPILOGUE_BIAS) ? bias[bias_off + m0 + i] : 0.f;
    const float row_alpha =
        (epilogue & EPILOGUE_ROW_SCALE) ? alpha * row_scale[row_scale_off + m0 + i] : alpha;
    for (int j = 0; j < cols; ++j) {
      __global C_ELEM* c = C + (m0 + i) * ldc + n0 + j;
      C_STORE(c, 0,
              finish(row_alpha * sums[i][j], beta, c, ELEMENT_BIAS(row_bias, n0 + j), epilogue));
    }
  }
}

#else  // CPU shape, outer-product form

#if TRANS_B
#error "the register-tile kernel reads B untransposed; pack a transposed B first"
#endif

// Work-item (mb, nb) computes rows mb*MR.. and columns nb*NR.. of C; dimension
// 0 runs over m so that neighbouring work-items share one panel of B.
//
// Operand blocks are addressed with block strides, so one kernel reads both
// matrices in place and packed panels:
//   A block mb starts at A + a_off + mb * a_block; element (i, k) is at
//     [i * lda + k] (TRANS_A == 0) or [k * lda + i] (TRANS_A == 1; a packed
//     panel [K][MR] is this case with lda = MR, a_block = K * MR).
//   B block nb starts at B + b_off + nb * b_block; element (k, j) is at
//     [k * ldb + j] (a packed panel [K][NR]: ldb = NR, b_block = K * NR).
// Rows past M are clamped to M - 1 (read, computed, never stored). The last
// panel of an in-place B is shifted left to end at column b_cols = N, so all
// its loads stay inside B; the columns it shares with the previous panel are
// not stored (that work-item stores them). A packed B has b_cols = its padded
// width, so it never shifts.
__kernel void gemm_tiled(const int M, const int N, const int K, const float alpha,
                         __global const A_ELEM* A, const int a_off, const int lda,
                         const int a_block, __global const B_ELEM* B, const int b_off,
                         const int ldb, const int b_block, const int b_cols,
                         const float beta, __global C_ELEM* C, const int c_off,
                         const int ldc, __global const float* bias, const int bias_off,
                         __global const float* row_scale, const int row_scale_off,
                         const int epilogue) {
  const int mb = get_global_id(0), nb = get_global_id(1);
  const int m0 = mb * MR, n0 = nb * NR;
  if (m0 >= M || n0 >= N) return;

  const int last_row = M - 1 - m0;
  __global const A_ELEM* a = A + a_off + mb * a_block;
  __global const A_ELEM* a_rows[MR];
#pragma unroll
  for (int i = 0; i < MR; ++i) a_rows[i] = a + (TRANS_A ? min(i, last_row) : min(i, last_row) * lda);
  const int shift = max(0, n0 + NR - b_cols);
  __global const B_ELEM* b = B + b_off + nb * b_block - shift;

  floatV acc[MR][NV];
#pragma unroll
  for (int i = 0; i < MR; ++i)
#pragma unroll
    for (int j = 0; j < NV; ++j) acc[i][j] = (floatV)0.f;

  // Per k: NV vector loads of B, MR broadcasts of A, MR * NV fma.
  for (int k = 0; k < K; ++k) {
    floatV bv[NV];
#pragma unroll
    for (int j = 0; j < NV; ++j) bv[j] = B_VLOAD(j, b + k * ldb);
#pragma unroll
    for (int i = 0; i < MR; ++i) {
      const floatV av = (floatV)(TRANS_A ? A_LOAD(a_rows[i], k * lda) : A_LOAD(a_rows[i], k));
#pragma unroll
      for (int j = 0; j < NV; ++j) acc[i][j] = fma(av, bv[j], acc[i][j]);
    }
  }

  // The store loop is not unrolled (it would only cost compile time): it
  // indexes a private copy of the accumulators.
  floatV result[MR][NV];
#pragma unroll
  for (int i = 0; i < MR; ++i)
#pragma unroll
    for (int j = 0; j < NV; ++j) result[i][j] = acc[i][j];
  C += c_off;
  const int rows = min(MR, M - m0);
  for (int i = 0; i < rows; ++i) {
    const float row_bias = (epilogue & EPILOGUE_BIAS) ? bias[bias_off + m0 + i] : 0.f;
    const float row_alpha =
        (epilogue & EPILOGUE_ROW_SCALE) ? alpha * row_scale[row_scale_off + m0 + i] : alpha;
    for (int j = 0; j < NV; ++j)
      store_vector(C, ldc, m0 + i, n0 - shift + j * VW, n0, N, row_alpha, beta, result[i][j],
                   row_bias, bias + bias_off, epilogue);
  }
}

#endif  // DOT_FORM
#endif  // MR
