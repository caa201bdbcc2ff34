// The GEMM's OpenCL C kernels: C = alpha * op(A) * op(B) + beta * C,
// row-major, with arbitrary leading dimensions and offsets (counted in
// floats), optionally a batch of such products (GPU shape: grid z) and an
// epilogue (below). beta == 0 never reads C (it may hold NaN).
//
// Each form has a kernel source of its own, which includes this file (its
// shared definitions, and the helper kernels every form's host file uses):
// gemm_register.cl, the CPU shapes (register tiles and the dot form;
// host: core/gemm_register.cpp); gemm_tiled.cl, the GPU shape (float or
// NVIDIA's mma.sync; host: core/gemm_tiled.cpp). Hopper's wgmma form is
// PTX (gemm_wgmma.cu). Their kernel, gemm_tiled, is compiled only when the
// tile shape is defined (-DMR=...); ChooseGemmConfig
// (src/core/gemm_config.hpp: a tuned winner, else the rule) picks the
// defines per device and shape:
//   MR, NR      register block: each work-item computes an MR x NR block of C
//   VW          vector width (1, 2, 4, 8, 16) along N, NR % VW == 0 (along K
//               in the DOT_FORM)
//   TRANS_A, TRANS_B   op() of each operand, fixed at compile time
//   USE_LOCAL   1: GPU shape. A work-group of WG_N x WG_M work-items computes
//               a (WG_M*MR) x (WG_N*NR) tile of C, staging TK-deep slices of
//               op(A) and op(B) in __local memory (double-buffered) through
//               guarded loads (zeros outside the matrices). Work-item (tx, ty)
//               owns rows ty*MR .. ty*MR + MR - 1 and vectors tx + j*WG_N, so
//               neighbouring work-items touch neighbouring addresses.
//   GROUP_A, GROUP_B, GROUP_C  (GPU shape) which operands are image-grouped
//               (see grouped() below); 0 by default.
//   WIN_KH, WIN_KW, WIN_H, ...  (GPU shape) B is implicit: convolution
//               windows over images (window_at() below), not a stored matrix.
//               0: CPU shape (../shared/notes/pocl-performance.md). One work-item owns a
//               whole MR x NR tile in explicit vector accumulators and runs
//               the whole k loop: no __local memory, no barriers, fma().
//               B must not be transposed (the host packs a transposed B).
//   DOT_FORM    (CPU shape, C = A * B^T only) each work-item computes MR x NR
//               dot products with VW-wide vectors along k, reading both
//               operands in place where they are contiguous.
//   VEC_LOAD_A, VEC_LOAD_B  (GPU shape) 1: interior tiles of that operand
//               are fetched as unguarded float4s; the host sets it only where
//               rows, offsets and image groups are multiples of 4 floats.
//   UNROLL_HINTS  (GPU shape) 0 drops the full-unroll pragmas; set only when
//               a CPU compiles the GPU shape for testing.
//   MMA, WARPS_M  (GPU shape, NVIDIA only: inline PTX) 1, 2, 3: the products
//               run on the tensor cores, mma.sync with f16, bf16 or tf32
//               inputs rounded from the float tiles and float sums
//               (core/matrix_engine.hpp); WARPS_M warps along the tile's
//               rows, the rest along its columns. 0 (default): fma().
//   A_TYPE, B_TYPE, C_TYPE  how each operand's elements are stored
//               (include/dlcaffe/storage_type.hpp): 0 float (default), 1
//               half, 2 bfloat16. 16-bit values are widened on load and C
//               rounded to nearest even on store; the products and sums are
//               float either way, in the same order, so a 16-bit product is
//               the rounding of the float product of the same values. The
//               helpers take them too (gemm_pack_panels its X as A_TYPE;
//               scale_c and reduce_slices C_TYPE); bias, row scale, packed
//               panels and split-K partial sums stay float.
// The helpers (gemm_pack_panels, gemm_scale_c, gemm_reduce_slices) need no
// other defines: gemm.cl alone builds them.

#ifndef A_TYPE
#define A_TYPE 0
#endif
#ifndef B_TYPE
#define B_TYPE 0
#endif
#ifndef C_TYPE
#define C_TYPE 0
#endif
#define GEMM_CAT_(a, b) a##b
#define GEMM_CAT(a, b) GEMM_CAT_(a, b)
// STORAGE_ELEM, STORAGE_LOAD, STORAGE_STORE: common.cl.
#define A_ELEM STORAGE_ELEM(A_TYPE)
#define B_ELEM STORAGE_ELEM(B_TYPE)
#define C_ELEM STORAGE_ELEM(C_TYPE)
#define A_LOAD(p, i) STORAGE_LOAD(A_TYPE, p, i)
#define B_LOAD(p, i) STORAGE_LOAD(B_TYPE, p, i)
#define C_LOAD(p, i) STORAGE_LOAD(C_TYPE, p, i)
#define C_STORE(p, i, v) STORAGE_STORE(C_TYPE, p, i, v)

// Epilogue flags (a runtime argument): scale row m of the product by
// row_scale[m], add bias[m] (a convolution's channels) or, under
// COLUMN_BIAS instead, bias[n] (a fully connected layer's outputs), then
// clamp at 0.
#define EPILOGUE_BIAS 1
#define EPILOGUE_RELU 2
#define EPILOGUE_ROW_SCALE 4
#define EPILOGUE_COLUMN_BIAS 8
// The bias of element (m, n) where row m's is row_bias: under COLUMN_BIAS
// read from the kernel's `bias` (offset bias_off).
#define ELEMENT_BIAS(row_bias, n) \
  ((epilogue & EPILOGUE_COLUMN_BIAS) ? bias[bias_off + (n)] : (row_bias))

#ifdef MR

#ifndef NR
#error "NR must be defined with MR"
#endif
#ifndef VW
#define VW 1
#endif
#ifndef TRANS_A
#define TRANS_A 0
#endif
#ifndef TRANS_B
#define TRANS_B 0
#endif
#ifndef USE_LOCAL
#define USE_LOCAL 0
#endif
#ifndef DOT_FORM
#define DOT_FORM 0
#endif
#ifndef VEC_LOAD_A
#define VEC_LOAD_A 0
#endif
#ifndef VEC_LOAD_B
#define VEC_LOAD_B 0
#endif

#define NV (NR / VW)  // vectors per row of the register block

#if VW == 1
#define floatV float
#define VLOAD(i, p) ((p)[i])
#define VSTORE(v, i, p) ((p)[i] = (v))
#define VLOAD_HALF(i, p) vload_half((i), (p))
#define VSTORE_HALF(v, i, p) vstore_half_rte((v), (i), (p))
#define VLOAD_BFLOAT16(i, p) float_of_bfloat16((p)[i])
#else
#define floatV GEMM_CAT(float, VW)
#define VLOAD(i, p) GEMM_CAT(vload, VW)(i, p)
#define VSTORE(v, i, p) GEMM_CAT(vstore, VW)(v, i, p)
#define VLOAD_HALF(i, p) GEMM_CAT(vload_half, VW)((i), (p))
#define VSTORE_HALF(v, i, p) GEMM_CAT(GEMM_CAT(vstore_half, VW), _rte)((v), (i), (p))
#define VLOAD_BFLOAT16(i, p) \
  GEMM_CAT(as_float, VW)(GEMM_CAT(convert_uint, VW)(GEMM_CAT(vload, VW)((i), (p))) << 16)
#endif
// Vector i (VW elements) of p as floatV, for each storage type.
#define VLOAD_T_0(i, p) VLOAD(i, p)
#define VLOAD_T_1(i, p) VLOAD_HALF(i, p)
#define VLOAD_T_2(i, p) VLOAD_BFLOAT16(i, p)
#define A_VLOAD(i, p) GEMM_CAT(VLOAD_T_, A_TYPE)(i, p)
#define B_VLOAD(i, p) GEMM_CAT(VLOAD_T_, B_TYPE)(i, p)
#define C_VLOAD(i, p) GEMM_CAT(VLOAD_T_, C_TYPE)(i, p)
// Stores floatV v as vector i of C.
#if C_TYPE == 0
#define C_VSTORE(v, i, p) VSTORE(v, i, p)
#elif C_TYPE == 1
#define C_VSTORE(v, i, p) VSTORE_HALF(v, i, p)
#else
inline void store_bfloat16_vector(const floatV v, const int i, __global ushort* p) {
  float lanes[VW];
  VSTORE(v, 0, lanes);
  for (int l = 0; l < VW; ++l) p[i * VW + l] = bfloat16_of_bits(as_uint(lanes[l]));
}
#define C_VSTORE(v, i, p) store_bfloat16_vector(v, i, p)
#endif

// value + beta * *c (never reading *c when beta == 0) + bias, then ReLU.
inline float finish(const float value, const float beta, __global const C_ELEM* c,
                    const float bias, const int epilogue) {
  float r = (beta == 0.f ? value : fma(beta, C_LOAD(c, 0), value)) + bias;
  return (epilogue & EPILOGUE_RELU) ? fmax(r, 0.f) : r;
}

// C[m, n..n+VW) = alpha * acc + beta * C + bias (then ReLU) for the columns
// in [n_lo, n_hi): the row's bias row_bias, or under COLUMN_BIAS each
// column's from `bias` (already offset).
inline void store_vector(__global C_ELEM* C, const int ldc, const int m, const int n,
                         const int n_lo, const int n_hi, const float alpha,
                         const float beta, const floatV acc, const float row_bias,
                         __global const float* bias, const int epilogue) {
  const int bias_off = 0;  // ELEMENT_BIAS's offset: `bias` comes offset
  __global C_ELEM* c = C + m * ldc + n;
  if (n >= n_lo && n + VW <= n_hi) {
    floatV r = alpha * acc;
    if (beta != 0.f) r = fma((floatV)beta, C_VLOAD(0, c), r);
    r += (epilogue & EPILOGUE_COLUMN_BIAS) ? VLOAD(0, bias + n) : (floatV)row_bias;
    if (epilogue & EPILOGUE_RELU) r = fmax(r, (floatV)0.f);
    C_VSTORE(r, 0, c);
    return;
  }
#if VW == 1
  const float values[1] = {acc};
#else
  float values[VW];
  VSTORE(acc, 0, values);
#endif
  for (int v = max(0, n_lo - n); v < min(VW, n_hi - n); ++v)
    C_STORE(c, v,
            finish(alpha * values[v], beta, c + v, ELEMENT_BIAS(row_bias, n + v), epilogue));
}

#endif  // MR


// Copies a rows x K matrix X into panels P[ceil(rows/width)][K][width],
// zero-padded past `rows`: op(A) into MR-row panels (rows = M) or op(B)^T into
// NR-column panels (rows = N). Element (r, k) of X is X[r * ld + k] when
// k_contiguous, else X[k * ld + r]. Each work-item reads a contiguous run of
// X (strided gathers alias in the cache when ld is a multiple of 4 KiB):
//   k_contiguous: PACK_RUN consecutive k of row r, work-item (k block, r);
//   otherwise: the `width` consecutive rows of one panel row, work-item
//     (k, panel).
#define PACK_RUN 16

__kernel void gemm_pack_panels(const int rows, const int K, const int width,
                               __global const A_ELEM* X, const int x_off, const int ld,
                               const int k_contiguous, __global float* P) {
  X += x_off;
  if (k_contiguous) {
    const int k0 = get_global_id(0) * PACK_RUN, r = get_global_id(1);
    const int padded_rows = (rows + width - 1) / width * width;
    if (k0 >= K || r >= padded_rows) return;
    __global float* dst = P + ((r / width) * K + k0) * width + r % width;
    const int count = min(PACK_RUN, K - k0);
    if (r >= rows) {
      for (int t = 0; t < count; ++t) dst[t * width] = 0.f;
#if A_TYPE == 0
    } else if (count == PACK_RUN) {
      float values[PACK_RUN];
      vstore16(vload16(0, X + r * ld + k0), 0, values);
#pragma unroll
      for (int t = 0; t < PACK_RUN; ++t) dst[t * width] = values[t];
#endif
    } else {
      for (int t = 0; t < count; ++t) dst[t * width] = A_LOAD(X, r * ld + k0 + t);
    }
  } else {
    const int k = get_global_id(0), panel = get_global_id(1);
    if (k >= K || panel * width >= rows) return;
    __global float* dst = P + (panel * K + k) * width;
    const int r0 = panel * width;
    for (int c = 0; c < width; ++c) dst[c] = r0 + c < rows ? A_LOAD(X, k * ld + r0 + c) : 0.f;
  }
}

// C = beta * C + bias (a row's or a column's; then ReLU) over an M x N
// window, C possibly grouped (K == 0 or alpha == 0); beta == 0 never reads C.
__kernel void gemm_scale_c(const int M, const int N, const float beta,
                           __global C_ELEM* C, const int c_off, const int ldc,
                           const int c_group, const int c_image,
                           __global const float* bias, const int bias_off,
                           const int epilogue) {
  const int n = get_global_id(0), m = get_global_id(1);
  if (m >= M || n >= N) return;
  const int col = c_group ? (n / c_group) * c_image + n % c_group : n;
  __global C_ELEM* c = C + c_off + m * ldc + col;
  float r = beta == 0.f ? 0.f : beta * C_LOAD(c, 0);
  r += ELEMENT_BIAS((epilogue & EPILOGUE_BIAS) ? bias[bias_off + m] : 0.f, n);
  C_STORE(c, 0, (epilogue & EPILOGUE_RELU) ? fmax(r, 0.f) : r);
}

// Split-K: C = alpha * row scale * (sum of the `slices` partial products,
// packed M x N each) + beta * C + bias, then ReLU; C possibly grouped. Dimension 2 runs
// over the products of a batch (their slices consecutive in `partial`; bias
// and row scale epilogue_batch floats apart).
__kernel void gemm_reduce_slices(const int M, const int N, const int slices,
                                 __global const float* partial, const float alpha,
                                 const float beta, __global C_ELEM* C, const int c_off,
                                 const int ldc, const int c_group, const int c_image,
                                 const int c_batch, __global const float* bias,
                                 const int bias_off, __global const float* row_scale,
                                 const int row_scale_off, const int epilogue,
                                 const int epilogue_batch) {
  const int n = get_global_id(0), m = get_global_id(1), product = get_global_id(2);
  if (m >= M || n >= N) return;
  partial += product * slices * M * N;
  bias += product * epilogue_batch;
  row_scale += product * epilogue_batch;
  float sum = 0.f;
  for (int s = 0; s < slices; ++s) sum += partial[(s * M + m) * N + n];
  const int col = c_group ? (n / c_group) * c_image + n % c_group : n;
  __global C_ELEM* c = C + c_off + product * c_batch + m * ldc + col;
  const float row_alpha =
      (epilogue & EPILOGUE_ROW_SCALE) ? alpha * row_scale[row_scale_off + m] : alpha;
  float r = beta == 0.f ? row_alpha * sum : fma(beta, C_LOAD(c, 0), row_alpha * sum);
  r += ELEMENT_BIAS((epilogue & EPILOGUE_BIAS) ? bias[bias_off + m] : 0.f, n);
  C_STORE(c, 0, (epilogue & EPILOGUE_RELU) ? fmax(r, 0.f) : r);
}
