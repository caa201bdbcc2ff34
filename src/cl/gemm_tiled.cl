// The GEMM's GPU shape (host: core/gemm_tiled.cpp): work-groups of tiles
// staged in __local memory, the products on the float units or on NVIDIA's
// tensor cores (MMA, MMA_STAGES). Its defines: gemm.cl.
#include "gemm.cl"

#ifdef MR
#if !USE_LOCAL
#error "gemm_tiled.cl is the GPU shape: USE_LOCAL=1"
#endif

#ifndef WG_M
#define WG_M 16
#endif
#ifndef WG_N
#define WG_N 16
#endif
#ifndef TK
#define TK 16
#endif
// Full unrolling keeps the accumulators in registers on a GPU. A CPU
// compiling this shape (only tests do) drops the hints: PoCL spends seconds
// per program on them, and the results do not change.
#ifndef UNROLL_HINTS
#define UNROLL_HINTS 1
#endif
#if UNROLL_HINTS
#define LOCAL_UNROLL _Pragma("unroll")
#else
#define LOCAL_UNROLL
#endif

#ifndef GROUP_A
#define GROUP_A 0
#endif
#ifndef GROUP_B
#define GROUP_B 0
#endif
#ifndef GROUP_C
#define GROUP_C 0
#endif

#define TM (WG_M * MR)
#define TN (WG_N * NR)
#define THREADS (WG_M * WG_N)
#define A_LOADS ((TM * TK + THREADS - 1) / THREADS)  // per work-item and tile
#define B_LOADS ((TN * TK + THREADS - 1) / THREADS)
// __local rows are padded: where a tile is stored k-contiguous from global
// memory, a warp writes down a column, which without padding hits one bank.
#ifndef MMA
#define MMA 0
#endif
#if MMA
// Tensor-core tiles are rows of 32-bit words (see MMA below), 8 words past
// a multiple of 32: a warp's fragment reads (row t, column g, t < 4, g < 8)
// then hit 32 different banks.
#define A_ROW (TM + 8)
#define B_ROW (TN + 8)
#else
#define A_ROW (TM + 4)
#define B_ROW (TN + (VW > 4 ? VW : 4))
#endif

// Image-grouped operands (convolution's NCHW blobs read or written as one
// matrix over the whole batch): with a group size G > 0, index q of the
// grouped axis lives at (q / G) * S + q % G, i.e. G consecutive columns per
// image, images S floats apart. G == 0 is the plain layout. The grouped axis
// is k for A (A untransposed), n for B (B untransposed) or k (B transposed),
// and n for C. GROUP_A/B/C (compile time) say which operands are grouped,
// so plain ones pay no division.
inline int grouped(const int q, const int g, const int s) {
  return (q / g) * s + (q - (q / g) * g);
}
#if GROUP_A
#define A_K(k) grouped(k, a_group, a_image)
#else
#define A_K(k) (k)
#endif
#if GROUP_B
#define B_Q(q) grouped(q, b_group, b_image)
#else
#define B_Q(q) (q)
#endif

#if MMA
// The tile's products on NVIDIA's tensor cores: warp w (32 consecutive
// work-items) computes a WTM x WTN block of the tile as MT x NT mma.sync
// blocks of 16 x 8, with the fragment layouts of the PTX ISA (9.7.14.5.7
// and .8; tools/mma_probe checks them): g = lane / 4, t = lane % 4, and the
// float sums of block (mt, nt) at rows g, g + 8 and columns 2t, 2t + 1.
// The tiles in __local memory hold the instruction's inputs, rounded once
// as they are stored: k-major rows of 32-bit words, each a tf32 value or
// two 16-bit values of consecutive k (the even one in the low half), so
// that every fragment register is one 32-bit read. A 16-bit operand stored
// in the instruction's own type (A_RAW, B_RAW) goes to the tile as it is.
#define WARPS (THREADS / 32)
#define WARPS_N (WARPS / WARPS_M)
#define WTM (TM / WARPS_M)
#define WTN (TN / WARPS_N)
#define MT (WTM / 16)
#define NT (WTN / 8)
#include "mma_sync.cl"
#if THREADS % 32 || WARPS % WARPS_M || WTM % 16 || WTN % 8 || TK % MMA_K
#error "MMA needs whole warps, 16 x 8 blocks per warp and TK a multiple of the instruction's k"
#endif

#if MMA == 3
#define TILE_K_ROWS TK
#define TILE_VALUE(x) mma_operand(x)
#else
#define TILE_K_ROWS (TK / 2)
#define TILE_VALUE(x) ((ushort)(mma_pair((x), 0.f) & 0xFFFFu))
#endif
#if (MMA == 1 && A_TYPE == 1) || (MMA == 2 && A_TYPE == 2)
#define A_RAW 1
#endif
#if (MMA == 1 && B_TYPE == 1) || (MMA == 2 && B_TYPE == 2)
#define B_RAW 1
#endif

// d += a * b on the calling warp's fragments.
inline void mma_accumulate(float d[4], const uint a[4], const uint b[2]) {
  asm volatile(MMA_INSTRUCTION " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%10, %11, %12, %13};"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                 "f"(d[0]), "f"(d[1]), "f"(d[2]), "f"(d[3]));
}
#endif  // MMA
#ifndef A_RAW
#define A_RAW 0
#endif
#ifndef B_RAW
#define B_RAW 0
#endif

#ifndef MMA_STAGES
#define MMA_STAGES 0
#endif
#if MMA_STAGES && !MMA
#undef MMA_STAGES
#define MMA_STAGES 0
#endif
#if MMA_STAGES
// The cp.async pipeline (MMA_STAGES >= 2; the host sets it only for
// operands stored in the instruction's type, 16-bit or (tf32) float, whose
// rows, offsets and image groups are whole 16-byte chunks and whose
// contiguous axis is a whole number of chunks long: src/core/gemm.cpp,
// MmaPipelineStages). Each work-item copies 16-byte chunks (CHUNK values)
// straight from global into __local memory (cp.async, no registers, no
// conversion), MMA_STAGES tiles deep, so that the fetches of the next tiles
// overlap the products of this one. A tile keeps its operand's own layout:
// lines along the operand's contiguous axis ([row][k] for untransposed A
// and transposed B, else [k][row]), its chunks XOR-swizzled so that 8 lines
// of one chunk, and cp.async's stores, hit 8 different 16-byte bank groups.
// The warps read their fragments with ldmatrix: 16-bit tiles of either
// layout (.trans for [k][row]), tf32 tiles along k (a 32-bit value is two
// 16-bit ones to ldmatrix); tf32 tiles across k one word at a time, and
// tf32 fragments are rounded (cvt.rna) in registers.
#if (MMA == 3 && (A_TYPE || B_TYPE)) || (MMA != 3 && (!A_RAW || !B_RAW)) || \
    (defined(WIN_KH) && !defined(WIN_C))
#error "the cp.async pipeline streams stored operands of the instruction's type"
#endif
// Whether B's tile lines run along k: a stored B's contiguous axis is k when
// it is transposed; channels-last windows run along their rows (channels),
// which are k for op(B) = windows and n for its transpose.
#ifdef WIN_C
#define B_ALONG_K (!TRANS_B)
#else
#define B_ALONG_K TRANS_B
#endif
#if TK % MMA_K || TM % 16 || TN % 16 || NT % 2
#error "the cp.async pipeline needs whole k steps and pairs of 8-column blocks"
#endif
#define CHUNK (MMA == 3 ? 4 : 8)  // values per 16-byte chunk
#if TRANS_A
#define A_LINE_CHUNKS (TM / CHUNK)
#else
#define A_LINE_CHUNKS (TK / CHUNK)
#endif
#if B_ALONG_K
#define B_LINE_CHUNKS (TK / CHUNK)
#else
#define B_LINE_CHUNKS (TN / CHUNK)
#endif
#if (A_LINE_CHUNKS & (A_LINE_CHUNKS - 1)) || (B_LINE_CHUNKS & (B_LINE_CHUNKS - 1))
#error "the swizzle needs tile lines of a power of two chunks"
#endif
#define A_STAGE_CHUNKS (TM * TK / CHUNK)
#define B_STAGE_CHUNKS (TN * TK / CHUNK)
#if MMA == 3
#define A_CHUNKS_FROM A
#define B_CHUNKS_FROM B
#else
#define A_CHUNKS_FROM A_BITS
#define B_CHUNKS_FROM B_BITS
#endif
#define A_COPIES ((A_STAGE_CHUNKS + THREADS - 1) / THREADS)  // per work-item
#define B_COPIES ((B_STAGE_CHUNKS + THREADS - 1) / THREADS)

// Where chunk `chunk` of tile line `line` sits in a line of `line_chunks`
// chunks (a power of two). A 128-byte row of banks holds 8 chunks: lines
// shorter than that share one, and the XOR with the row's number (modulo
// the line's chunks) sends the same chunk of 8 consecutive lines to 8
// different places in their rows; longer lines XOR with the line's place
// among 8 consecutive ones.
inline int swizzled_chunk(const int line, const int chunk, const int line_chunks) {
  return line_chunks >= 8 ? chunk ^ (line & 7)
                          : chunk ^ ((line / (8 / line_chunks)) & (line_chunks - 1));
}

#if MMA_STAGES == 2
#define STAGES_AHEAD 0
#elif MMA_STAGES == 3
#define STAGES_AHEAD 1
#elif MMA_STAGES == 4
#define STAGES_AHEAD 2
#else
#error "MMA_STAGES is 2, 3 or 4"
#endif

// One 32-bit word at a __local address.
inline uint load_word(const uint address) {
  uint r;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(r) : "r"(address));
  return r;
}
#endif  // MMA_STAGES

// Value v of op(A) or op(B) at depth kk, row or column col, into `tile`
// (k-major, `row` words per k row): as a float, or (MMA) as its tensor-core
// input; a raw operand's v is its stored 16 bits already.
#if MMA == 3
#define TILE_PUT(tile, row, kk, col, v, raw) \
  (((__local uint*)(tile))[(kk) * (row) + (col)] = TILE_VALUE(v))
#elif MMA
#define TILE_PUT(tile, row, kk, col, v, raw)                                   \
  (((__local ushort*)(tile))[(((kk) >> 1) * (row) + (col)) * 2 + ((kk) & 1)] = \
       (raw) ? (ushort)(v) : TILE_VALUE(v))
#else
#define TILE_PUT(tile, row, kk, col, v, raw) (((__local float*)(tile))[(kk) * (row) + (col)] = (v))
#endif
// What a work-item holds of the next tiles: floats, or a raw operand's bits.
#if A_RAW
#define A_NEXT ushort
#define A_BITS ((__global const ushort*)A)
#else
#define A_NEXT float
#endif
#if B_RAW
#define B_NEXT ushort
#define B_BITS ((__global const ushort*)B)
#else
#define B_NEXT float
#endif

#if TRANS_A
#define A_INDEX(m, k) ((k) * lda + (m))
#else
#define A_INDEX(m, k) ((m) * lda + A_K(k))
#endif
#if A_RAW
#define A_AT(m, k) A_BITS[A_INDEX(m, k)]
#else
#define A_AT(m, k) A_LOAD(A, A_INDEX(m, k))
#endif
#ifdef WIN_KH
// Implicit im2col (GemmArgs::b_window): B is the column matrix of
// convolution windows over NCHW images, read from the images themselves.
// Every size is a compile-time constant, so the divisions are cheap; the
// images are b_image floats apart. The offset of the window's element, or
// -1 in the padding.
// Channels-last windows (WIN_C, the images NHWC with WIN_C channels) have
// rows (ki, kj, c), c fastest: WIN_C % 8 == 0 makes 8 16-bit values of a
// row one 16-byte chunk of the image, which the cp.async pipeline streams.
inline int window_offset(const int row, const int pos, const int image) {
#ifdef WIN_C
  const int r = row / WIN_C, c = row - r * WIN_C;
#else
  const int c = row / (WIN_KH * WIN_KW), r = row - c * (WIN_KH * WIN_KW);
#endif
  const int ki = r / WIN_KW, kj = r - ki * WIN_KW;
  const int img = pos / (WIN_OH * WIN_OW), p = pos - img * (WIN_OH * WIN_OW);
  const int oh = p / WIN_OW, ow = p - oh * WIN_OW;
  const int ih = oh * WIN_SH - WIN_PH + ki * WIN_DH, iw = ow * WIN_SW - WIN_PW + kj * WIN_DW;
  if ((uint)ih >= (uint)WIN_H || (uint)iw >= (uint)WIN_W) return -1;
#ifdef WIN_C
  return img * image + (ih * WIN_W + iw) * WIN_C + c;
#else
  return img * image + (c * WIN_H + ih) * WIN_W + iw;
#endif
}
#if B_RAW
inline ushort window_at(__global const ushort* B, const int offset) {
  return offset >= 0 ? B[offset] : 0;
}
#define B_SOURCE B_BITS
#else
inline float window_at(__global const B_ELEM* B, const int offset) {
  return offset >= 0 ? B_LOAD(B, offset) : 0.f;
}
#define B_SOURCE B
#endif
#if TRANS_B
#define B_INDEX(k, n) window_offset(n, k, b_image)
#else
#define B_INDEX(k, n) window_offset(k, n, b_image)
#endif
#define B_AT(k, n) window_at(B_SOURCE, B_INDEX(k, n))
#else
#if TRANS_B
#define B_INDEX(k, n) ((n) * ldb + B_Q(k))
#else
#define B_INDEX(k, n) ((k) * ldb + B_Q(n))
#endif
#if B_RAW
#define B_AT(k, n) B_BITS[B_INDEX(k, n)]
#else
#define B_AT(k, n) B_LOAD(B, B_INDEX(k, n))
#endif
#endif

// Where load e of a tile goes: consecutive e read consecutive addresses of
// the source matrix.
#if TRANS_A
#define A_TILE_POS(e, kk, mm) const int mm = (e) % TM, kk = (e) / TM
#else
#define A_TILE_POS(e, kk, mm) const int kk = (e) % TK, mm = (e) / TK
#endif
#if TRANS_B
#define B_TILE_POS(e, kk, nn) const int kk = (e) % TK, nn = (e) / TK
#else
#define B_TILE_POS(e, kk, nn) const int nn = (e) % TN, kk = (e) / TN
#endif
// This work-item's share of the op(A) or op(B) tile at depth kt, into
// registers a_next / b_next (zeros outside the matrices and past k_end).
#define LOAD_A_GUARDED(kt)                                                 \
  do {                                                                     \
    LOCAL_UNROLL                                                           \
    for (int t = 0; t < A_LOADS; ++t) {                                    \
      const int e = tid + t * THREADS;                                     \
      A_TILE_POS(e, kk, mm);                                               \
      const int m = m0 + mm, k = (kt) + kk;                                \
      a_next[t] = (e < TM * TK && m < M && k < k_end) ? A_AT(m, k) : 0;    \
    }                                                                      \
  } while (0)
#define LOAD_B_GUARDED(kt)                                                 \
  do {                                                                     \
    LOCAL_UNROLL                                                           \
    for (int t = 0; t < B_LOADS; ++t) {                                    \
      const int e = tid + t * THREADS;                                     \
      B_TILE_POS(e, kk, nn);                                               \
      const int n = n0 + nn, k = (kt) + kk;                                \
      b_next[t] = (e < TN * TK && n < N && k < k_end) ? B_AT(k, n) : 0;    \
    }                                                                      \
  } while (0)
// ... and from the registers into __local buffer `buf` (k-major tiles).
#define STORE_A_GUARDED(buf)                                               \
  do {                                                                     \
    LOCAL_UNROLL                                                           \
    for (int t = 0; t < A_LOADS; ++t) {                                    \
      const int e = tid + t * THREADS;                                     \
      A_TILE_POS(e, kk, mm);                                               \
      if (e < TM * TK) TILE_PUT(As[buf], A_ROW, kk, mm, a_next[t], A_RAW); \
    }                                                                      \
  } while (0)
#define STORE_B_GUARDED(buf)                                               \
  do {                                                                     \
    LOCAL_UNROLL                                                           \
    for (int t = 0; t < B_LOADS; ++t) {                                    \
      const int e = tid + t * THREADS;                                     \
      B_TILE_POS(e, kk, nn);                                               \
      if (e < TN * TK) TILE_PUT(Bs[buf], B_ROW, kk, nn, b_next[t], B_RAW); \
    }                                                                      \
  } while (0)

// Interior tiles of an operand whose 4-element vectors along its rows never
// cross a row or image boundary and start on 4-element boundaries (the host
// sets VEC_LOAD_A / VEC_LOAD_B only then: plain or image-grouped with a
// group of a multiple of 4, never implicit): unguarded vector loads through
// float4 (16-bit: ushort4) pointers, so that the compiler may issue 128-bit
// (64-bit) loads (vload4 only promises element alignment). Vector v of a
// tile covers four consecutive elements of the source row.
#define A_VLOADS (TM * TK / 4 / THREADS)
#define B_VLOADS (TN * TK / 4 / THREADS)
#if VEC_LOAD_A && ((TM * TK) % (4 * THREADS) || TK % 4 || TM % 4)
#error "VEC_LOAD_A needs tiles that split into whole 4-vectors per work-item"
#endif
#if VEC_LOAD_B && ((TN * TK) % (4 * THREADS) || TK % 4 || TN % 4)
#error "VEC_LOAD_B needs tiles that split into whole 4-vectors per work-item"
#endif
// The 4 elements at p of an operand stored as type 0, 1 or 2, as floats;
// a raw operand's as their bits.
#define USHORT4_AT(p) (*(__global const ushort4*)(p))
#define VECTOR_AT_0(p) (*(__global const float4*)(p))
#define VECTOR_AT_1(p) vload_half4(0, p)
#define VECTOR_AT_2(p) float4_of_bfloat16(USHORT4_AT(p))
#if A_RAW
#define A_VECTOR_AT(i) USHORT4_AT(A_BITS + (i))
#else
#define A_VECTOR_AT(i) GEMM_CAT(VECTOR_AT_, A_TYPE)(A + (i))
#endif
#if B_RAW
#define B_VECTOR_AT(i) USHORT4_AT(B_BITS + (i))
#else
#define B_VECTOR_AT(i) GEMM_CAT(VECTOR_AT_, B_TYPE)(B + (i))
#endif
#if TRANS_A
#define A_VPOS(v, kk, mq) const int mq = (v) % (TM / 4), kk = (v) / (TM / 4)
#define A_VAT(kt, kk, mq) A_VECTOR_AT(((kt) + (kk)) * lda + m0 + 4 * (mq))
#else
#define A_VPOS(v, kk, mq) const int kk = (v) % (TK / 4), mq = (v) / (TK / 4)
#define A_VAT(kt, kk, mq) A_VECTOR_AT((m0 + (mq)) * lda + A_K((kt) + 4 * (kk)))
#endif
#if TRANS_B
#define B_VPOS(v, kk, nq) const int kk = (v) % (TK / 4), nq = (v) / (TK / 4)
#define B_VAT(kt, kk, nq) B_VECTOR_AT((n0 + (nq)) * ldb + B_Q((kt) + 4 * (kk)))
#else
#define B_VPOS(v, kk, nq) const int nq = (v) % (TN / 4), kk = (v) / (TN / 4)
#define B_VAT(kt, kk, nq) B_VECTOR_AT(((kt) + (kk)) * ldb + B_Q(n0 + 4 * (nq)))
#endif
#define LOAD_A_VEC(kt)                                                     \
  do {                                                                     \
    LOCAL_UNROLL                                                           \
    for (int t = 0; t < A_VLOADS; ++t) {                                   \
      A_VPOS(tid + t * THREADS, kk, mq);                                   \
      vstore4(A_VAT(kt, kk, mq), t, a_next);                               \
    }                                                                      \
  } while (0)
#define LOAD_B_VEC(kt)                                                     \
  do {                                                                     \
    LOCAL_UNROLL                                                           \
    for (int t = 0; t < B_VLOADS; ++t) {                                   \
      B_VPOS(tid + t * THREADS, kk, nq);                                   \
      vstore4(B_VAT(kt, kk, nq), t, b_next);                               \
    }                                                                      \
  } while (0)
// Four values v[0..3] of consecutive columns col.. at depth kk of `tile`,
// and of consecutive depths k4.. (a multiple of 4) at column col.
#if MMA
#define PUT_ALONG_ROW(tile, row, kk, col, v, raw)                                   \
  do {                                                                               \
    LOCAL_UNROLL for (int c = 0; c < 4; ++c) TILE_PUT(tile, row, kk, (col) + c, (v)[c], raw); \
  } while (0)
#else
#define PUT_ALONG_ROW(tile, row, kk, col, v, raw) \
  vstore4(vload4(0, v), 0, (__local float*)(tile) + (kk) * (row) + (col))
#endif
#if MMA == 1 || MMA == 2
// Two 16-bit values of consecutive k as one word of a packed tile.
#define PAIR_WORD(lo, hi, raw) \
  ((raw) ? ((uint)(lo) | ((uint)(hi) << 16)) : mma_pair((float)(lo), (float)(hi)))
#define PUT_ALONG_K(tile, row, k4, col, v, raw)                                             \
  do {                                                                                     \
    ((__local uint*)(tile))[((k4) / 2) * (row) + (col)] = PAIR_WORD((v)[0], (v)[1], raw);     \
    ((__local uint*)(tile))[((k4) / 2 + 1) * (row) + (col)] = PAIR_WORD((v)[2], (v)[3], raw); \
  } while (0)
#else
#define PUT_ALONG_K(tile, row, k4, col, v, raw)                                     \
  do {                                                                               \
    LOCAL_UNROLL for (int c = 0; c < 4; ++c) TILE_PUT(tile, row, (k4) + c, col, (v)[c], raw); \
  } while (0)
#endif
// Untransposed A and transposed B arrive along k and are stored down a
// column of their k-major tile; the others arrive along the tile's rows.
#define STORE_A_VEC(buf)                                                   \
  do {                                                                     \
    LOCAL_UNROLL                                                           \
    for (int t = 0; t < A_VLOADS; ++t) {                                   \
      A_VPOS(tid + t * THREADS, kk, mq);                                   \
      if (TRANS_A)                                                         \
        PUT_ALONG_ROW(As[buf], A_ROW, kk, 4 * (mq), a_next + 4 * t, A_RAW); \
      else                                                                 \
        PUT_ALONG_K(As[buf], A_ROW, 4 * (kk), mq, a_next + 4 * t, A_RAW);  \
    }                                                                      \
  } while (0)
#define STORE_B_VEC(buf)                                                   \
  do {                                                                     \
    LOCAL_UNROLL                                                           \
    for (int t = 0; t < B_VLOADS; ++t) {                                   \
      B_VPOS(tid + t * THREADS, kk, nq);                                   \
      if (!TRANS_B)                                                        \
        PUT_ALONG_ROW(Bs[buf], B_ROW, kk, 4 * (nq), b_next + 4 * t, B_RAW); \
      else                                                                 \
        PUT_ALONG_K(Bs[buf], B_ROW, 4 * (kk), nq, b_next + 4 * t, B_RAW);  \
    }                                                                      \
  } while (0)

// Work-group z computes product z / slices of a batch (operands at their
// offset + that index times their batch stride, the epilogue's bias and row
// scale at theirs + that index times epilogue_batch) over k in [s * k_per_slice,
// (s + 1) * k_per_slice), s = z % slices, and writes its tile at
// C + s * c_slice (split-K: the host sums the slices with
// gemm_reduce_slices); with one slice, k runs over all of K.
// Epilogue (runtime flags, EPILOGUE_*): C = alpha * row_scale[m] * AB +
// beta * C + bias[m], then max(0, .).
//
// Work-item (tx, ty) owns rows ty * MR .. ty * MR + MR - 1 of the tile (read
// from __local memory as float4s) and the vectors tx + j * WG_N of each row
// (so neighbouring work-items read and store neighbouring addresses).
// Tiles are double-buffered in __local memory: the next one is loaded into
// registers while the current one is multiplied, then stored into the other
// buffer, one barrier per tile.
__kernel __attribute__((reqd_work_group_size(WG_N, WG_M, 1))) void gemm_tiled(
    const int M, const int N, const int K, const float alpha,
    __global const A_ELEM* A, const int a_off, const int lda,
    __global const B_ELEM* B, const int b_off, const int ldb, const float beta,
    __global C_ELEM* C, const int c_off, const int ldc,
    const int a_group, const int a_image, const int b_group, const int b_image,
    const int c_group, const int c_image, const int slices, const int k_per_slice,
    const int c_slice, const int a_batch, const int b_batch, const int c_batch,
    __global const float* bias, const int bias_off,
    __global const float* row_scale, const int row_scale_off, const int epilogue,
    const int epilogue_batch) {
#if MMA_STAGES
  __local uint4 As[MMA_STAGES * A_STAGE_CHUNKS];
  __local uint4 Bs[MMA_STAGES * B_STAGE_CHUNKS];
#elif MMA
  __local uint As[2][TILE_K_ROWS][A_ROW];
  __local uint Bs[2][TILE_K_ROWS][B_ROW];
#else
  __local float4 As[2][TK][A_ROW / 4];
  __local floatV Bs[2][TK][B_ROW / VW];
#endif
  const int tx = get_local_id(0), ty = get_local_id(1);
  const int tid = ty * WG_N + tx;
  const int m0 = get_group_id(1) * TM, n0 = get_group_id(0) * TN;
  const int product = get_group_id(2) / slices, slice = get_group_id(2) % slices;
  const int k_begin = slice * k_per_slice, k_end = min(K, k_begin + k_per_slice);
  A += a_off + product * a_batch;
  B += b_off + product * b_batch;
  bias += product * epilogue_batch;
  row_scale += product * epilogue_batch;

#if MMA
  const int lane = tid % 32, warp = tid / 32;
  const int g = lane >> 2, t = lane & 3;
  // This warp's block: rows wm0 + [0, WTM), columns wn0 + [0, WTN) of the tile.
  const int wm0 = (warp / WARPS_N) * WTM, wn0 = (warp % WARPS_N) * WTN;
  float acc[MT][NT][4];
LOCAL_UNROLL
  for (int i = 0; i < MT; ++i)
LOCAL_UNROLL
    for (int j = 0; j < NT; ++j)
LOCAL_UNROLL
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.f;
#else
  floatV acc[MR][NV];
LOCAL_UNROLL
  for (int i = 0; i < MR; ++i)
LOCAL_UNROLL
    for (int j = 0; j < NV; ++j) acc[i][j] = (floatV)0.f;
#endif

#if MMA_STAGES
  // Operand X's chunks of the tile at depth kt into stage `stage`. Chunk e
  // of the stage's tile is line e / LINE_CHUNKS, chunk e % LINE_CHUNKS
  // (consecutive work-items copy consecutive 16 bytes of a line). The
  // tile's rows (m for A, n for B) start at row0, the matrix's end at ROWS
  // (M or N); CHUNKS_ALONG_ROWS says whether a line runs along the rows
  // (else along k); X_AT_ROW_K(row, k) is the element's index in X.
#define COPY_STAGE_CHUNKS(X, stage, kt, row0, ROWS, CHUNKS_ALONG_ROWS, X_AT_ROW_K)       \
  LOCAL_UNROLL                                                                        \
  for (int u = 0; u < X##_COPIES; ++u) {                                              \
    const int e = tid + u * THREADS;                                                  \
    if (X##_STAGE_CHUNKS % THREADS == 0 || e < X##_STAGE_CHUNKS) {                    \
      const int line = e / X##_LINE_CHUNKS, chunk = e % X##_LINE_CHUNKS;              \
      const int row = (CHUNKS_ALONG_ROWS) ? (row0) + CHUNK * chunk : (row0) + line;   \
      const int k = (CHUNKS_ALONG_ROWS) ? (kt) + line : (kt) + CHUNK * chunk;         \
      const int at = row < (ROWS) && k < k_end ? X_AT_ROW_K(row, k) : -1;             \
      copy_chunk_async(                                                               \
          X##s + (stage) * X##_STAGE_CHUNKS + line * X##_LINE_CHUNKS +                \
              swizzled_chunk(line, chunk, X##_LINE_CHUNKS),                           \
          X##_CHUNKS_FROM + max(at, 0), at >= 0);                                     \
    }                                                                                 \
  }
#define B_INDEX_N_K(n, k) B_INDEX(k, n)
#define ISSUE_STAGE(stage, kt)                                                        \
  do {                                                                                \
    COPY_STAGE_CHUNKS(A, stage, kt, m0, M, TRANS_A, A_INDEX)                          \
    COPY_STAGE_CHUNKS(B, stage, kt, n0, N, !B_ALONG_K, B_INDEX_N_K)                   \
  } while (0)
  // Fragments of k step ks of a stage. 16-bit: A's block i (16 rows) as
  // matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15),
  // (rows 8-15, k 8-15); B's blocks j, j + 1 (8 columns each) as (j, k 0-7),
  // (j, k 8-15), (j + 1, k 0-7), (j + 1, k 8-15). tf32 alike with k 0-3 and
  // 4-7, where the tile runs along k; else word by word.
  const int quad = lane >> 3, quad_line = lane & 7;
#define A_CHUNK_AT(line, chunk) \
  (16 * ((line) * A_LINE_CHUNKS + swizzled_chunk(line, chunk, A_LINE_CHUNKS)))
#define B_CHUNK_AT(line, chunk) \
  (16 * ((line) * B_LINE_CHUNKS + swizzled_chunk(line, chunk, B_LINE_CHUNKS)))
#if MMA == 3
  // The word of value (line, q) of a tile whose lines run along q.
#define A_WORD(tile, line, q) load_word((tile) + A_CHUNK_AT(line, (q) / 4) + 4 * ((q) % 4))
#define B_WORD(tile, line, q) load_word((tile) + B_CHUNK_AT(line, (q) / 4) + 4 * ((q) % 4))
#define LOAD_FRAGMENTS(a_tile, b_tile, ks, af, bf)                                      \
  do {                                                                                  \
    LOCAL_UNROLL                                                                        \
    for (int i = 0; i < MT; ++i) {                                                      \
      const int m = wm0 + i * 16 + g;                                                   \
      if (TRANS_A) {                                                                    \
        af[i][0] = A_WORD(a_tile, (ks) + t, m);                                         \
        af[i][1] = A_WORD(a_tile, (ks) + t, m + 8);                                     \
        af[i][2] = A_WORD(a_tile, (ks) + t + 4, m);                                     \
        af[i][3] = A_WORD(a_tile, (ks) + t + 4, m + 8);                                 \
      } else {                                                                          \
        const int line = wm0 + i * 16 + (lane & 15);                                    \
        load_matrices(af[i], (a_tile) + A_CHUNK_AT(line, (ks) / 4 + (lane >> 4)));      \
      }                                                                                 \
      LOCAL_UNROLL for (int r = 0; r < 4; ++r) af[i][r] = mma_operand(as_float(af[i][r])); \
    }                                                                                   \
    LOCAL_UNROLL                                                                        \
    for (int j = 0; j < NT; j += 2) {                                                   \
      if (B_ALONG_K) {                                                                  \
        const int line = wn0 + j * 8 + (quad >> 1) * 8 + quad_line;                     \
        uint r[4];                                                                      \
        load_matrices(r, (b_tile) + B_CHUNK_AT(line, (ks) / 4 + (quad & 1)));           \
        bf[j][0] = r[0];                                                                \
        bf[j][1] = r[1];                                                                \
        bf[j + 1][0] = r[2];                                                            \
        bf[j + 1][1] = r[3];                                                            \
      } else {                                                                          \
        LOCAL_UNROLL for (int h = 0; h < 2; ++h) {                                      \
          const int n = wn0 + (j + h) * 8 + g;                                          \
          bf[j + h][0] = B_WORD(b_tile, (ks) + t, n);                                   \
          bf[j + h][1] = B_WORD(b_tile, (ks) + t + 4, n);                               \
        }                                                                               \
      }                                                                                 \
      LOCAL_UNROLL for (int h = 0; h < 2; ++h) {                                        \
        bf[j + h][0] = mma_operand(as_float(bf[j + h][0]));                             \
        bf[j + h][1] = mma_operand(as_float(bf[j + h][1]));                             \
      }                                                                                 \
    }                                                                                   \
  } while (0)
#else
#define LOAD_FRAGMENTS(a_tile, b_tile, ks, af, bf)                                      \
  do {                                                                                  \
    LOCAL_UNROLL                                                                        \
    for (int i = 0; i < MT; ++i) {                                                      \
      const int line = TRANS_A ? (ks) + quad_line + (quad >> 1) * 8                     \
                               : wm0 + i * 16 + (lane & 15);                            \
      const int chunk = TRANS_A ? (wm0 + i * 16) / 8 + (quad & 1) : (ks) / 8 + (lane >> 4); \
      const uint address = (a_tile) + A_CHUNK_AT(line, chunk);                          \
      if (TRANS_A)                                                                      \
        load_matrices_transposed(af[i], address);                                       \
      else                                                                              \
        load_matrices(af[i], address);                                                  \
    }                                                                                   \
    LOCAL_UNROLL                                                                        \
    for (int j = 0; j < NT; j += 2) {                                                   \
      const int line = B_ALONG_K ? wn0 + j * 8 + (quad >> 1) * 8 + quad_line            \
                               : (ks) + (quad & 1) * 8 + quad_line;                     \
      const int chunk = B_ALONG_K ? (ks) / 8 + (quad & 1) : (wn0 + j * 8) / 8 + (quad >> 1); \
      const uint address = (b_tile) + B_CHUNK_AT(line, chunk);                          \
      uint r[4];                                                                        \
      if (B_ALONG_K)                                                                    \
        load_matrices(r, address);                                                      \
      else                                                                              \
        load_matrices_transposed(r, address);                                           \
      bf[j][0] = r[0];                                                                  \
      bf[j][1] = r[1];                                                                  \
      bf[j + 1][0] = r[2];                                                              \
      bf[j + 1][1] = r[3];                                                              \
    }                                                                                   \
  } while (0)
#endif
  const int k_tiles = (k_end - k_begin + TK - 1) / TK;
  // Tiles 0 .. MMA_STAGES - 2 in flight; then, per tile: wait for it, and
  // after the barrier (every work-item's copies landed, and every warp done
  // with the stage multiplied last) refill that stage MMA_STAGES - 1 tiles
  // ahead. A group is committed every time, empty or not, so that the
  // count waited for always means the same tiles.
LOCAL_UNROLL
  for (int s = 0; s < MMA_STAGES - 1; ++s) {
    if (s < k_tiles) ISSUE_STAGE(s, k_begin + s * TK);
    commit_copies();
  }
  for (int kt = 0; kt < k_tiles; ++kt) {
    WAIT_COPIES(STAGES_AHEAD);
    barrier(CLK_LOCAL_MEM_FENCE);
    const int ahead = kt + MMA_STAGES - 1;
    if (ahead < k_tiles) ISSUE_STAGE(ahead % MMA_STAGES, k_begin + ahead * TK);
    commit_copies();
    const int stage = kt % MMA_STAGES;
    const uint a_tile = shared_address(As + stage * A_STAGE_CHUNKS),
               b_tile = shared_address(Bs + stage * B_STAGE_CHUNKS);
    // (Fragments loaded a step ahead into a second set of registers ran no
    // faster on an H100, and took more than 128 registers a work-item
    // against 124.)
LOCAL_UNROLL
    for (int ks = 0; ks < TK; ks += MMA_K) {
      uint af[MT][4], bf[NT][2];
      LOAD_FRAGMENTS(a_tile, b_tile, ks, af, bf);
LOCAL_UNROLL
      for (int i = 0; i < MT; ++i)
LOCAL_UNROLL
        for (int j = 0; j < NT; ++j) mma_product(acc[i][j], af[i], bf[j]);
    }
  }
  // Nothing may be left in flight into __local memory at exit.
  WAIT_COPIES(0);
#else  // !MMA_STAGES
  A_NEXT a_next[A_LOADS];
  B_NEXT b_next[B_LOADS];
#if VEC_LOAD_A || VEC_LOAD_B
  // Whether the tile at depth kt lies wholly inside both operands (the same
  // for every work-item of the group).
  const bool inside_mn = m0 + TM <= M && n0 + TN <= N;
#define TILE_INSIDE(kt) (inside_mn && (kt) + TK <= k_end)
#else
#define TILE_INSIDE(kt) false
#endif
#define LOAD_NEXT(kt, vec)       \
  do {                           \
    if (VEC_LOAD_A && (vec))     \
      LOAD_A_VEC(kt);            \
    else                         \
      LOAD_A_GUARDED(kt);        \
    if (VEC_LOAD_B && (vec))     \
      LOAD_B_VEC(kt);            \
    else                         \
      LOAD_B_GUARDED(kt);        \
  } while (0)
#define STORE_NEXT(buf, vec)     \
  do {                           \
    if (VEC_LOAD_A && (vec))     \
      STORE_A_VEC(buf);          \
    else                         \
      STORE_A_GUARDED(buf);      \
    if (VEC_LOAD_B && (vec))     \
      STORE_B_VEC(buf);          \
    else                         \
      STORE_B_GUARDED(buf);      \
  } while (0)
  bool vec = TILE_INSIDE(k_begin);
  LOAD_NEXT(k_begin, vec);
  STORE_NEXT(0, vec);
  barrier(CLK_LOCAL_MEM_FENCE);
  int buf = 0;
  for (int k0 = k_begin; k0 < k_end; k0 += TK) {
    const bool more = k0 + TK < k_end;
    vec = TILE_INSIDE(k0 + TK);
    if (more) LOAD_NEXT(k0 + TK, vec);
#if MMA
    {
      __local const uint* as = (__local const uint*)As[buf];
      __local const uint* bs = (__local const uint*)Bs[buf];
#define A_TILE(k, m) as[(k) * A_ROW + (m)]
#define B_TILE(k, n) bs[(k) * B_ROW + (n)]
LOCAL_UNROLL
      for (int ks = 0; ks < TK; ks += MMA_K) {
        // Word row of depth ks: packed tiles hold two k per word.
        const int kw = MMA == 3 ? ks : ks / 2;
        uint af[MT][4], bf[NT][2];
LOCAL_UNROLL
        for (int i = 0; i < MT; ++i) {
          const int r = wm0 + i * 16 + g;
          af[i][0] = A_TILE(kw + t, r);
          af[i][1] = A_TILE(kw + t, r + 8);
          af[i][2] = A_TILE(kw + t + 4, r);
          af[i][3] = A_TILE(kw + t + 4, r + 8);
        }
LOCAL_UNROLL
        for (int j = 0; j < NT; ++j) {
          const int c = wn0 + j * 8 + g;
          bf[j][0] = B_TILE(kw + t, c);
          bf[j][1] = B_TILE(kw + t + 4, c);
        }
LOCAL_UNROLL
        for (int i = 0; i < MT; ++i)
LOCAL_UNROLL
          for (int j = 0; j < NT; ++j) mma_accumulate(acc[i][j], af[i], bf[j]);
      }
#undef A_TILE
#undef B_TILE
    }
#else
LOCAL_UNROLL
    for (int kk = 0; kk < TK; ++kk) {
      floatV b[NV];
LOCAL_UNROLL
      for (int j = 0; j < NV; ++j) b[j] = Bs[buf][kk][tx + j * WG_N];
      float a[MR];
#if MR % 4 == 0
LOCAL_UNROLL
      for (int v = 0; v < MR / 4; ++v) vstore4(As[buf][kk][ty * (MR / 4) + v], v, a);
#else
LOCAL_UNROLL
      for (int i = 0; i < MR; ++i) a[i] = ((__local float*)As[buf][kk])[ty * MR + i];
#endif
LOCAL_UNROLL
      for (int i = 0; i < MR; ++i)
LOCAL_UNROLL
        for (int j = 0; j < NV; ++j) acc[i][j] = fma((floatV)a[i], b[j], acc[i][j]);
    }
#endif  // MMA
    if (more) STORE_NEXT(buf ^ 1, vec);
    barrier(CLK_LOCAL_MEM_FENCE);
    buf ^= 1;
  }
#endif  // MMA_STAGES

  C += c_off + product * c_batch + slice * c_slice;
#if MMA
LOCAL_UNROLL
  for (int i = 0; i < MT; ++i)
LOCAL_UNROLL
    for (int upper = 0; upper < 2; ++upper) {
      const int m = m0 + wm0 + i * 16 + g + 8 * upper;
      if (m >= M) continue;
      const float row_bias = (epilogue & EPILOGUE_BIAS) ? bias[bias_off + m] : 0.f;
      const float row_alpha =
          (epilogue & EPILOGUE_ROW_SCALE) ? alpha * row_scale[row_scale_off + m] : alpha;
LOCAL_UNROLL
      for (int j = 0; j < NT; ++j)
LOCAL_UNROLL
        for (int e = 0; e < 2; ++e) {
          const int n = n0 + wn0 + j * 8 + 2 * t + e;
          if (n >= N) continue;
#if GROUP_C
          __global C_ELEM* c = C + m * ldc + grouped(n, c_group, c_image);
#else
          __global C_ELEM* c = C + m * ldc + n;
#endif
          C_STORE(c, 0, finish(row_alpha * acc[i][j][2 * upper + e], beta, c,
                               ELEMENT_BIAS(row_bias, n), epilogue));
        }
    }
#else
LOCAL_UNROLL
  for (int i = 0; i < MR; ++i) {
    const int m = m0 + ty * MR + i;
    if (m < M) {
      const float row_bias = (epilogue & EPILOGUE_BIAS) ? bias[bias_off + m] : 0.f;
      const float row_alpha =
          (epilogue & EPILOGUE_ROW_SCALE) ? alpha * row_scale[row_scale_off + m] : alpha;
LOCAL_UNROLL
      for (int j = 0; j < NV; ++j) {
        const int n = n0 + (tx + j * WG_N) * VW;
        if (n >= N) continue;
#if GROUP_C
        // Grouped C: an image boundary may fall inside the vector.
#if VW == 1
        const float values[1] = {acc[i][j]};
#else
        float values[VW];
        VSTORE(acc[i][j], 0, values);
#endif
        for (int v = 0; v < VW && n + v < N; ++v) {
          __global C_ELEM* c = C + m * ldc + grouped(n + v, c_group, c_image);
          C_STORE(c, 0,
                  finish(row_alpha * values[v], beta, c, ELEMENT_BIAS(row_bias, n + v), epilogue));
        }
#else
        store_vector(C, ldc, m, n, 0, N, row_alpha, beta, acc[i][j], row_bias, bias + bias_off,
                     epilogue);
#endif
      }
    }
  }
#endif  // MMA
}

#endif  // MR
