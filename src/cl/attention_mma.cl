// The fused attention (src/layers/attention.cpp) on NVIDIA's tensor cores:
// the same flash-attention scheme as attention.cl (online softmax, the T x S
// scores never stored, backward recomputing the probabilities from the
// log-sum-exps; dQ and dK/dV in separate kernels, so no atomics and the
// sums run in one fixed order), with its four products per tile -- Q K^T
// and P V forward; dO V^T, dS K, P^T dO and dS^T Q backward -- as mma.sync
// m16n8k16 with 16-bit inputs (f16 or bf16: MMA 1 or 2, the storage type of
// Q, K, V, the output and their gradients) and float sums.
//
// A work-group is WARPS warps; warp w owns 16 rows of the group's 64
// (queries forward and for dQ, keys for dK/dV) and keeps their operand
// fragments and float sums in registers. The other operand streams through
// __local tiles of 64 rows in the tensor's own [row][d] layout, rows padded
// by 16 bytes so that ldmatrix's 8 row addresses fall in 8 different bank
// groups. A probability tile leaves the accumulators of one product as the
// A operand of the next (rounded to 16 bits: the float sums' fragment
// layout is the A operand's), as in FlashAttention-2.
//
// Fragments (PTX ISA, mma.m16n8k16, as tools/mma_probe checks them): lane
// l of a warp, g = l / 4, c = l % 4; A (16 x 16, row-major) registers hold
// rows g and g + 8, columns 2c, 2c + 1 and 2c + 8, 2c + 9; B (16 x 8)
// rows 2c, 2c + 1 and 2c + 8, 2c + 9 of column g; the sums rows g, g + 8
// and columns 2c, 2c + 1. A row's values are spread over the 4 lanes of one
// g: its maximum and sum are reduced by two butterfly shuffles.
//
// EMULATE_MMA 1 writes the warp instructions (mma, ldmatrix, shfl) out in
// OpenCL C through __local memory, so that these kernels run -- slowly --
// on any device, and their fragment bookkeeping is tested where there are
// no tensor cores (the run option matrix_emulate). Every barrier is then
// reached by the whole group: all control flow here is uniform across it.
//
// Compile-time: DK, DV (head sizes, multiples of 16 up to 128), MMA,
// EMULATE_MMA. Tensors are addressed as attention.cl's (base + b * sb + h *
// sh + t * st + d, base moved by the tensor's offset), with every row offset
// a multiple of 8 values (16 bytes).

#define WARPS 4
#define THREADS (WARPS * 32)
#define BLOCK (WARPS * 16)  // the group's own rows
#define TILE 64             // rows per streamed tile
#define DKS (DK + 8)        // a tile row's length in 16-bit values
#define DVS (DV + 8)
#ifndef EMULATE_MMA
#define EMULATE_MMA 0
#endif
// Loops over registers: unrolled, so that fragment arrays stay in registers
// (not where emulated: the barriers would multiply the code).
#if EMULATE_MMA
#define UNROLL
#else
#define UNROLL _Pragma("unroll")
#endif
#if DK % 16 || DV % 16 || DK > 128 || DV > 128
#error "the tensor-core attention takes head sizes that are multiples of 16, up to 128"
#endif

#if EMULATE_MMA
// A 16-bit value's bits as a float.
#if MMA == 2
inline float value_of_bits(const uint bits) { return as_float(bits << 16); }
#else
inline float value_of_bits(const uint bits) { return vload_half(0, (const __private half*)&bits); }
#endif

// Each warp's exchange area: 6 words per lane (an mma's A and B registers).
#define EXCHANGE_WORDS (32 * 6)
#define EXCHANGE __local uint* exchange, const int lane
#define EXCHANGE_ARGS exchange, lane

// Two values rounded to the instruction's type, the first in the low half.
inline uint pack_pair(const float lo, const float hi) {
#if MMA == 2
  return (uint)bfloat16_of_bits(as_uint(lo)) | ((uint)bfloat16_of_bits(as_uint(hi)) << 16);
#else
  ushort2 h;
  vstore_half2_rte((float2)(lo, hi), 0, (__private half*)&h);
  return as_uint(h);
#endif
}

// d += a b, each lane reading the fragments it needs from the others'.
inline void mma_16816(float d[4], const uint a[4], const uint b[2], EXCHANGE) {
  UNROLL for (int r = 0; r < 4; ++r) exchange[lane * 6 + r] = a[r];
  exchange[lane * 6 + 4] = b[0];
  exchange[lane * 6 + 5] = b[1];
  barrier(CLK_LOCAL_MEM_FENCE);
  const int g = lane >> 2, c = lane & 3;
  UNROLL for (int e = 0; e < 4; ++e) {
    const int row = g + (e >> 1) * 8, col = 2 * c + (e & 1);
    float sum = 0.f;
    UNROLL for (int k = 0; k < 16; ++k) {
      // A[row][k]: lane (row % 8) * 4 + (k % 8) / 2, register row / 8 + 2 (k / 8).
      const uint aw = exchange[((row & 7) * 4 + ((k & 7) >> 1)) * 6 + (row >> 3) + 2 * (k >> 3)];
      // B[k][col]: lane col * 4 + (k % 8) / 2, register k / 8.
      const uint bw = exchange[(col * 4 + ((k & 7) >> 1)) * 6 + 4 + (k >> 3)];
      sum += value_of_bits((aw >> (16 * (k & 1))) & 0xFFFFu) *
             value_of_bits((bw >> (16 * (k & 1))) & 0xFFFFu);
    }
    d[e] += sum;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}

// x from lane (lane ^ mask) of the warp.
inline float lane_xor(const float x, const int mask, EXCHANGE) {
  exchange[lane] = as_uint(x);
  barrier(CLK_LOCAL_MEM_FENCE);
  const float y = as_float(exchange[lane ^ mask]);
  barrier(CLK_LOCAL_MEM_FENCE);
  return y;
}

inline uint tile_word(__local const ushort* tile, const int stride, const int row, const int col) {
  return *(__local const uint*)(tile + row * stride + col);
}
inline uint tile_column_pair(__local const ushort* tile, const int stride, const int row,
                             const int col) {
  return (uint)tile[row * stride + col] | ((uint)tile[(row + 1) * stride + col] << 16);
}

// The A fragment of the 16 x 16 block at (r0, c0) of a [row][col] tile.
inline void load_a(uint a[4], __local const ushort* tile, const int stride, const int r0,
                   const int c0, EXCHANGE) {
  const int g = lane >> 2, c = lane & 3;
  a[0] = tile_word(tile, stride, r0 + g, c0 + 2 * c);
  a[1] = tile_word(tile, stride, r0 + g + 8, c0 + 2 * c);
  a[2] = tile_word(tile, stride, r0 + g, c0 + 8 + 2 * c);
  a[3] = tile_word(tile, stride, r0 + g + 8, c0 + 8 + 2 * c);
}
// B fragments of two 8-column blocks, columns n0.. of op(B) = rows n0.. of
// a [n][k] tile, depth k0..k0+15 (K^T from K's rows).
inline void load_b_rows(uint b[2][2], __local const ushort* tile, const int stride, const int n0,
                        const int k0, EXCHANGE) {
  const int g = lane >> 2, c = lane & 3;
  UNROLL for (int j = 0; j < 2; ++j) {
    b[j][0] = tile_word(tile, stride, n0 + 8 * j + g, k0 + 2 * c);
    b[j][1] = tile_word(tile, stride, n0 + 8 * j + g, k0 + 8 + 2 * c);
  }
}
// B fragments of two 8-column blocks from a [k][n] tile: depth rows
// k0..k0+15, columns n0..n0+15 (V as it is stored).
inline void load_b_columns(uint b[2][2], __local const ushort* tile, const int stride,
                           const int k0, const int n0, EXCHANGE) {
  const int g = lane >> 2, c = lane & 3;
  UNROLL for (int j = 0; j < 2; ++j) {
    b[j][0] = tile_column_pair(tile, stride, k0 + 2 * c, n0 + 8 * j + g);
    b[j][1] = tile_column_pair(tile, stride, k0 + 8 + 2 * c, n0 + 8 * j + g);
  }
}
#define FENCE_EXCHANGE() barrier(CLK_LOCAL_MEM_FENCE)

#else  // the instructions themselves (mma_sync.cl), the lane implicit
#include "mma_sync.cl"
#define EXCHANGE const int lane
#define EXCHANGE_ARGS lane
#define FENCE_EXCHANGE()

inline uint pack_pair(const float lo, const float hi) { return mma_pair(lo, hi); }
inline void mma_16816(float d[4], const uint a[4], const uint b[2], EXCHANGE) {
  mma_product(d, a, b);
}
inline float lane_xor(const float x, const int mask, EXCHANGE) { return shuffle_xor(x, mask); }
inline void ldmatrix_x4(uint r[4], __local const ushort* p) {
  load_matrices(r, shared_address(p));
}
inline void ldmatrix_x4_trans(uint r[4], __local const ushort* p) {
  load_matrices_transposed(r, shared_address(p));
}

// Lane l gives the address of line l % 8 of 8 x 8 matrix m = l / 8; register
// m of every lane receives matrix m's fragment.
inline void load_a(uint a[4], __local const ushort* tile, const int stride, const int r0,
                   const int c0, EXCHANGE) {
  const int m = lane >> 3;  // a[m]: rows +8 for m odd, columns +8 for m >= 2
  ldmatrix_x4(a, tile + (r0 + (lane & 7) + (m & 1) * 8) * stride + c0 + (m >> 1) * 8);
}
inline void load_b_rows(uint b[2][2], __local const ushort* tile, const int stride, const int n0,
                        const int k0, EXCHANGE) {
  const int m = lane >> 3;  // b[m / 2][m % 2]: rows +8 for m >= 2, depth +8 for m odd
  uint r[4];
  ldmatrix_x4(r, tile + (n0 + (lane & 7) + (m >> 1) * 8) * stride + k0 + (m & 1) * 8);
  b[0][0] = r[0], b[0][1] = r[1], b[1][0] = r[2], b[1][1] = r[3];
}
inline void load_b_columns(uint b[2][2], __local const ushort* tile, const int stride,
                           const int k0, const int n0, EXCHANGE) {
  const int m = lane >> 3;  // b[m / 2][m % 2]: depth +8 for m odd, columns +8 for m >= 2
  uint r[4];
  ldmatrix_x4_trans(r, tile + (k0 + (lane & 7) + (m & 1) * 8) * stride + n0 + (m >> 1) * 8);
  b[0][0] = r[0], b[0][1] = r[1], b[1][0] = r[2], b[1][1] = r[3];
}
#endif  // EMULATE_MMA

inline int row_offset(const int b, const int h, const int t, const int sb, const int sh,
                      const int st) {
  return b * sb + h * sh + t * st;
}

// Rows [r0, r0 + n) of a 16-bit tensor (head size D) into a tile of TILE
// rows (row length D + 8), 16-byte chunks, rows past n zero: with the
// instructions, cp.async copies straight into __local memory (no registers)
// and the copies complete at wait_fetches; emulated, at once.
inline void fetch_tile(__local ushort* tile, __global const ushort* x, const int b, const int h,
                       const int r0, const int n, const int sb, const int sh, const int st,
                       const int D, const int lid) {
  const int chunks = D / 8;
  for (int i = lid; i < TILE * chunks; i += THREADS) {
    const int row = i / chunks, chunk = i % chunks;
    // A row past n reads nothing (cp.async's source size 0 fills zeros) but
    // still names an address inside the tensor.
    __global const ushort* src = x + row_offset(b, h, r0 + (row < n ? row : 0), sb, sh, st) +
                                 chunk * 8;
    __local ushort* dst = tile + row * (D + 8) + chunk * 8;
#if EMULATE_MMA
    *(__local uint4*)dst = row < n ? *(__global const uint4*)src : (uint4)(0u);
#else
    copy_chunk_async(dst, src, row < n);
#endif
  }
}
// Closes this work-item's group of fetches (cp.async.commit_group).
inline void commit_fetches(void) {
#if !EMULATE_MMA
  commit_copies();
#endif
}
// Waits until at most `n` of this work-item's groups are in flight; a
// barrier then makes every work-item's fetches visible to the group.
#if EMULATE_MMA
#define WAIT_FETCHES(n)
#else
#define WAIT_FETCHES(n) WAIT_COPIES(n)
#endif

// STAGES 2: the next tile is fetched into the other half of the tiles while
// this one's products run (the host chooses it where two stages fit the
// device's __local memory), else 1.
#ifndef STAGES
#define STAGES 1
#endif
#if STAGES != 1 && STAGES != 2
#error "STAGES is 1 or 2"
#endif

// The additive mask at (b, h, t, s), 0 without one (mask_batches 0). A mask
// of mask_batches batch items gives batch item b its item b % mask_batches
// (1: one for all; B: its own; swin's windows: the window's).
inline float mask_at(__global const float* mask, const int mask_batches, const int mask_sb,
                     const int mask_sh, const int S, const int b, const int h, const int t,
                     const int s) {
  return mask_batches ? mask[(b % mask_batches) * mask_sb + h * mask_sh + t * S + s] : 0.f;
}

// Stores a warp's 16 x D float block (sums of 8-column blocks), times
// `factor` (a macro of the half: rows g or g + 8), rows from `row0` that are below `rows`, as 16-bit pairs.
#define STORE_BLOCK(acc, D, x, b, h, row0, rows, sb, sh, st, factor)                        \
  do {                                                                                     \
    const int g_ = lane >> 2, c_ = lane & 3;                                               \
    UNROLL for (int half_ = 0; half_ < 2; ++half_) {                                              \
      const int row_ = (row0) + g_ + 8 * half_;                                            \
      if (row_ >= (rows)) continue;                                                        \
      __global uint* line_ = (__global uint*)((x) + row_offset(b, h, row_, sb, sh, st));   \
      UNROLL for (int j_ = 0; j_ < (D) / 8; ++j_)                                                 \
        line_[4 * j_ + c_] = pack_pair(acc[j_][2 * half_] * (factor(half_)),               \
                                       acc[j_][2 * half_ + 1] * (factor(half_)));          \
    }                                                                                      \
  } while (0)

// Q K^T for a warp's 16 query rows (fragments qf) against the tile's 64
// keys: s[j] holds keys 8j..8j+7.
#define SCORES(s, qf, tile, stride, D)                                           \
  do {                                                                           \
    UNROLL for (int j_ = 0; j_ < TILE / 8; ++j_)                                        \
      UNROLL for (int e_ = 0; e_ < 4; ++e_) s[j_][e_] = 0.f;                            \
    UNROLL for (int kk_ = 0; kk_ < (D) / 16; ++kk_)                                     \
      UNROLL for (int j2_ = 0; j2_ < TILE / 16; ++j2_) {                                \
        uint b_[2][2];                                                           \
        load_b_rows(b_, tile, stride, 16 * j2_, 16 * kk_, EXCHANGE_ARGS);        \
        mma_16816(s[2 * j2_], qf[kk_], b_[0], EXCHANGE_ARGS);                    \
        mma_16816(s[2 * j2_ + 1], qf[kk_], b_[1], EXCHANGE_ARGS);                \
      }                                                                          \
  } while (0)

// acc (16 x D) += P (16 x 64, float sums p in the accumulator layout,
// rounded to 16 bits) times a [k][n] tile's 64 rows.
#define ACCUMULATE_PRODUCT(acc, p, tile, stride, D)                               \
  do {                                                                            \
    UNROLL for (int kk_ = 0; kk_ < TILE / 16; ++kk_) {                                   \
      uint a_[4];                                                                 \
      a_[0] = pack_pair(p[2 * kk_][0], p[2 * kk_][1]);                            \
      a_[1] = pack_pair(p[2 * kk_][2], p[2 * kk_][3]);                            \
      a_[2] = pack_pair(p[2 * kk_ + 1][0], p[2 * kk_ + 1][1]);                    \
      a_[3] = pack_pair(p[2 * kk_ + 1][2], p[2 * kk_ + 1][3]);                    \
      UNROLL for (int j2_ = 0; j2_ < (D) / 16; ++j2_) {                                  \
        uint b_[2][2];                                                            \
        load_b_columns(b_, tile, stride, 16 * kk_, 16 * j2_, EXCHANGE_ARGS);      \
        mma_16816(acc[2 * j2_], a_, b_[0], EXCHANGE_ARGS);                        \
        mma_16816(acc[2 * j2_ + 1], a_, b_[1], EXCHANGE_ARGS);                    \
      }                                                                           \
    }                                                                             \
  } while (0)

// A warp's 16 rows of a [row][d] tile as A fragments.
#define LOAD_FRAGMENTS(f, tile, stride, D, r0)                                             \
  do {                                                                                     \
    UNROLL for (int kk_ = 0; kk_ < (D) / 16; ++kk_)                                               \
      load_a(f[kk_], tile, stride, r0, 16 * kk_, EXCHANGE_ARGS);                           \
  } while (0)

#if EMULATE_MMA
#define LOCAL_EXCHANGE                                 \
  __local uint exchange_area[WARPS * EXCHANGE_WORDS]; \
  __local uint* exchange = exchange_area + (get_local_id(0) >> 5) * EXCHANGE_WORDS;
#else
#define LOCAL_EXCHANGE
#endif

// Where a work-item is: its warp, its lane's fragment coordinates (g, c),
// the (batch item, head) of the group; query t sees keys s <= t + shift
// when causal.
#define GROUP_COORDINATES                                             \
  const int lid = get_local_id(0), lane = lid & 31, warp = lid >> 5; \
  const int g = lane >> 2, c = lane & 3;                              \
  const int bh = get_global_id(1), b = bh / H, h = bh % H;           \
  const int shift = S - T

// The fetches started so far done, and visible to the group.
#define ALL_FETCHED()             \
  do {                            \
    commit_fetches();             \
    WAIT_FETCHES(0);              \
    barrier(CLK_LOCAL_MEM_FENCE); \
  } while (0)

// Tile i's fetches done and visible, tile i + 1's started (STAGES 2) --
// `fetch(tile, stage)` starts one tile's fetches; every work-item calls it.
#if STAGES == 2
#define BEGIN_TILE(i, tiles, fetch)   \
  do {                                \
    if ((i) == 0) fetch(0, 0);        \
    if ((i) + 1 < (tiles)) {          \
      fetch((i) + 1, ((i) + 1) & 1);  \
      WAIT_FETCHES(1);                \
    } else {                          \
      WAIT_FETCHES(0);                \
    }                                 \
    barrier(CLK_LOCAL_MEM_FENCE);     \
  } while (0)
#else
#define BEGIN_TILE(i, tiles, fetch) \
  do {                              \
    fetch((i), 0);                  \
    WAIT_FETCHES(0);                \
    barrier(CLK_LOCAL_MEM_FENCE);   \
  } while (0)
#endif

// The keys and values of tile `tile` into stage `stage`.
#define FETCH_KV(tile, stage)                                                                \
  do {                                                                                       \
    const int s0_ = (tile) * TILE, n_ = min(TILE, S - s0_);                                  \
    fetch_tile(k_tiles + (stage) * TILE * DKS, k, b, h, s0_, n_, k_sb, k_sh, k_st, DK, lid); \
    fetch_tile(v_tiles + (stage) * TILE * DVS, v, b, h, s0_, n_, v_sb, v_sh, v_st, DV, lid); \
    commit_fetches();                                                                        \
  } while (0)

// Forward: out = softmax(Q K^T * scale + mask) V and each query row's
// log-sum-exp (attention.cl's lse).
__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1))) void attention_mma_forward(
    int T, int S, int H, float scale, int causal,
    __global const ushort* q, int q_off, int q_sb, int q_sh, int q_st,
    __global const ushort* k, int k_off, int k_sb, int k_sh, int k_st,
    __global const ushort* v, int v_off, int v_sb, int v_sh, int v_st,
    __global const float* mask, int mask_batches, int mask_sb, int mask_sh,
    __global ushort* out, int o_off, int o_sb, int o_sh, int o_st,
    __global float* lse) {
  // Each tensor from its offset in its buffer (a packed Q, K, V).
  q += q_off; k += k_off; v += v_off; out += o_off;
  __local uint4 k_tiles_[STAGES * TILE * DKS / 8];  // Q's rows first, then the keys
  __local uint4 v_tiles_[STAGES * TILE * DVS / 8];
  __local ushort* k_tiles = (__local ushort*)k_tiles_;
  __local ushort* v_tiles = (__local ushort*)v_tiles_;
  LOCAL_EXCHANGE
  GROUP_COORDINATES;
  const int q0 = get_group_id(0) * BLOCK;
  const int row_a = q0 + warp * 16 + g, row_b = row_a + 8;

  uint qf[DK / 16][4];
  fetch_tile(k_tiles, q, b, h, q0, min(BLOCK, T - q0), q_sb, q_sh, q_st, DK, lid);
  ALL_FETCHED();
  LOAD_FRAGMENTS(qf, k_tiles, DKS, DK, warp * 16);
  barrier(CLK_LOCAL_MEM_FENCE);

  float acc[DV / 8][4];
  UNROLL for (int j = 0; j < DV / 8; ++j)
    UNROLL for (int e = 0; e < 4; ++e) acc[j][e] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};  // rows a and b; l this lane's part

  const int group_last = min(T - 1, q0 + BLOCK - 1);
  const int s_end = causal ? clamp(group_last + shift + 1, 0, S) : S;
  const int tiles = (s_end + TILE - 1) / TILE;
  for (int i = 0; i < tiles; ++i) {
    const int s0 = i * TILE;
    BEGIN_TILE(i, tiles, FETCH_KV);
    __local ushort* k_tile = k_tiles + (i % STAGES) * TILE * DKS;
    __local ushort* v_tile = v_tiles + (i % STAGES) * TILE * DVS;
    float s[TILE / 8][4];
    SCORES(s, qf, k_tile, DKS, DK);
    float tile_max[2] = {-INFINITY, -INFINITY};
    UNROLL for (int j = 0; j < TILE / 8; ++j)
      UNROLL for (int e = 0; e < 4; ++e) {
        const int row = e < 2 ? row_a : row_b, col = s0 + 8 * j + 2 * c + (e & 1);
        const bool seen = col < S && (!causal || col <= row + shift) && row < T;
        s[j][e] = seen ? s[j][e] * scale +
                             mask_at(mask, mask_batches, mask_sb, mask_sh, S, b, h, row, col)
                       : -INFINITY;
        tile_max[e >> 1] = fmax(tile_max[e >> 1], s[j][e]);
      }
    float base[2], correction[2];
    UNROLL for (int r = 0; r < 2; ++r) {
      tile_max[r] = fmax(tile_max[r], lane_xor(tile_max[r], 1, EXCHANGE_ARGS));
      tile_max[r] = fmax(tile_max[r], lane_xor(tile_max[r], 2, EXCHANGE_ARGS));
      const float m_new = fmax(m[r], tile_max[r]);
      // Every score so far -inf: exponents against 0 give the zeros wanted.
      base[r] = m_new == -INFINITY ? 0.f : m_new;
      correction[r] = exp(m[r] - base[r]);
      m[r] = m_new;
      l[r] *= correction[r];
    }
    UNROLL for (int j = 0; j < DV / 8; ++j)
      UNROLL for (int e = 0; e < 4; ++e) acc[j][e] *= correction[e >> 1];
    UNROLL for (int j = 0; j < TILE / 8; ++j)
      UNROLL for (int e = 0; e < 4; ++e) {
        s[j][e] = exp(s[j][e] - base[e >> 1]);
        l[e >> 1] += s[j][e];
      }
    ACCUMULATE_PRODUCT(acc, s, v_tile, DVS, DV);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float inverse[2];
  UNROLL for (int r = 0; r < 2; ++r) {
    l[r] += lane_xor(l[r], 1, EXCHANGE_ARGS);
    l[r] += lane_xor(l[r], 2, EXCHANGE_ARGS);
    inverse[r] = l[r] > 0.f ? 1.f / l[r] : 0.f;
  }
#define ROW_INVERSE(r) inverse[r]
  STORE_BLOCK(acc, DV, out, b, h, q0 + warp * 16, T, o_sb, o_sh, o_st, ROW_INVERSE);
  if (c == 0) {
    // A row that saw no key: +inf makes every recomputed probability 0.
    if (row_a < T) lse[bh * T + row_a] = l[0] > 0.f ? m[0] + log(l[0]) : INFINITY;
    if (row_b < T) lse[bh * T + row_b] = l[1] > 0.f ? m[1] + log(l[1]) : INFINITY;
  }
}

// dQ = scale * dS K with dS = P o (dO V^T - delta), a group per 64 query
// rows, keys and values streamed as forward; with want_ds dS itself, the
// gradient of an additive mask, as attention.cl's attention_backward_dq.
__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1))) void attention_mma_backward_dq(
    int T, int S, int H, float scale, int causal,
    __global const ushort* q, int q_off, int q_sb, int q_sh, int q_st,
    __global const ushort* k, int k_off, int k_sb, int k_sh, int k_st,
    __global const ushort* v, int v_off, int v_sb, int v_sh, int v_st,
    __global const float* mask, int mask_batches, int mask_sb, int mask_sh,
    __global const ushort* dout, int o_off, int o_sb, int o_sh, int o_st,
    __global const float* lse, __global const float* delta,
    __global ushort* dq, int want_dq, __global float* ds_out, int want_ds) {
  // Each tensor from its offset in its buffer (a packed Q, K, V).
  q += q_off; k += k_off; v += v_off; dout += o_off; dq += q_off;
  __local uint4 k_tiles_[STAGES * TILE * DKS / 8];  // Q's rows first
  __local uint4 v_tiles_[STAGES * TILE * DVS / 8];  // dO's rows first
  __local ushort* k_tiles = (__local ushort*)k_tiles_;
  __local ushort* v_tiles = (__local ushort*)v_tiles_;
  LOCAL_EXCHANGE
  GROUP_COORDINATES;
  const int q0 = get_group_id(0) * BLOCK;
  const int row_a = q0 + warp * 16 + g, row_b = row_a + 8;

  uint qf[DK / 16][4], dof[DV / 16][4];
  fetch_tile(k_tiles, q, b, h, q0, min(BLOCK, T - q0), q_sb, q_sh, q_st, DK, lid);
  fetch_tile(v_tiles, dout, b, h, q0, min(BLOCK, T - q0), o_sb, o_sh, o_st, DV, lid);
  ALL_FETCHED();
  LOAD_FRAGMENTS(qf, k_tiles, DKS, DK, warp * 16);
  LOAD_FRAGMENTS(dof, v_tiles, DVS, DV, warp * 16);
  barrier(CLK_LOCAL_MEM_FENCE);
  const float row_lse[2] = {row_a < T ? lse[bh * T + row_a] : INFINITY,
                            row_b < T ? lse[bh * T + row_b] : INFINITY};
  const float row_delta[2] = {row_a < T ? delta[bh * T + row_a] : 0.f,
                              row_b < T ? delta[bh * T + row_b] : 0.f};

  float grad[DK / 8][4];
  UNROLL for (int j = 0; j < DK / 8; ++j)
    UNROLL for (int e = 0; e < 4; ++e) grad[j][e] = 0.f;
  const int group_last = min(T - 1, q0 + BLOCK - 1);
  const int s_end = causal ? clamp(group_last + shift + 1, 0, S) : S;
  const int tiles = (s_end + TILE - 1) / TILE;
  for (int i = 0; i < tiles; ++i) {
    const int s0 = i * TILE;
    BEGIN_TILE(i, tiles, FETCH_KV);
    __local ushort* k_tile = k_tiles + (i % STAGES) * TILE * DKS;
    __local ushort* v_tile = v_tiles + (i % STAGES) * TILE * DVS;
    float p[TILE / 8][4], dp[TILE / 8][4];
    SCORES(p, qf, k_tile, DKS, DK);
    SCORES(dp, dof, v_tile, DVS, DV);  // dO V^T: V's rows are its columns, as K's
    UNROLL for (int j = 0; j < TILE / 8; ++j)
      UNROLL for (int e = 0; e < 4; ++e) {
        const int row = e < 2 ? row_a : row_b, col = s0 + 8 * j + 2 * c + (e & 1);
        const bool seen = col < S && (!causal || col <= row + shift) && row < T;
        const float prob =
            seen ? exp(p[j][e] * scale +
                       mask_at(mask, mask_batches, mask_sb, mask_sh, S, b, h, row, col) -
                       row_lse[e >> 1])
                 : 0.f;
        p[j][e] = prob * (dp[j][e] - row_delta[e >> 1]);  // dS
        if (want_ds && row < T && col < S) ds_out[((size_t)bh * T + row) * S + col] = p[j][e];
      }
    ACCUMULATE_PRODUCT(grad, p, k_tile, DKS, DK);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
#define SCALE_ALL(r) scale
  if (want_dq) STORE_BLOCK(grad, DK, dq, b, h, q0 + warp * 16, T, q_sb, q_sh, q_st, SCALE_ALL);
}

// dV = P^T dO and dK = scale * dS^T Q, a group per 64 key rows, queries (Q,
// dO, their log-sum-exps and deltas) streamed in tiles.
__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1))) void attention_mma_backward_dkv(
    int T, int S, int H, float scale, int causal,
    __global const ushort* q, int q_off, int q_sb, int q_sh, int q_st,
    __global const ushort* k, int k_off, int k_sb, int k_sh, int k_st,
    __global const ushort* v, int v_off, int v_sb, int v_sh, int v_st,
    __global const float* mask, int mask_batches, int mask_sb, int mask_sh,
    __global const ushort* dout, int o_off, int o_sb, int o_sh, int o_st,
    __global const float* lse, __global const float* delta,
    __global ushort* dk, __global ushort* dv, int want_dk, int want_dv) {
  // Each tensor from its offset in its buffer (a packed Q, K, V).
  q += q_off; k += k_off; v += v_off; dout += o_off; dk += k_off; dv += v_off;
  __local uint4 q_tiles_[STAGES * TILE * DKS / 8];   // K's rows first
  __local uint4 do_tiles_[STAGES * TILE * DVS / 8];  // V's rows first
  __local ushort* q_tiles = (__local ushort*)q_tiles_;
  __local ushort* do_tiles = (__local ushort*)do_tiles_;
  __local float lse_tiles[STAGES * TILE], delta_tiles[STAGES * TILE];
  LOCAL_EXCHANGE
  GROUP_COORDINATES;
  const int k0 = get_group_id(0) * BLOCK;
  const int key_a = k0 + warp * 16 + g, key_b = key_a + 8;

  uint kf[DK / 16][4], vf[DV / 16][4];
  fetch_tile(q_tiles, k, b, h, k0, min(BLOCK, S - k0), k_sb, k_sh, k_st, DK, lid);
  fetch_tile(do_tiles, v, b, h, k0, min(BLOCK, S - k0), v_sb, v_sh, v_st, DV, lid);
  ALL_FETCHED();
  LOAD_FRAGMENTS(kf, q_tiles, DKS, DK, warp * 16);
  LOAD_FRAGMENTS(vf, do_tiles, DVS, DV, warp * 16);
  barrier(CLK_LOCAL_MEM_FENCE);

  float grad_k[DK / 8][4], grad_v[DV / 8][4];
  UNROLL for (int j = 0; j < DK / 8; ++j)
    UNROLL for (int e = 0; e < 4; ++e) grad_k[j][e] = 0.f;
  UNROLL for (int j = 0; j < DV / 8; ++j)
    UNROLL for (int e = 0; e < 4; ++e) grad_v[j][e] = 0.f;
  // Causal: key s is seen by the queries t >= s - shift.
  const int t_begin = causal ? clamp(k0 - shift, 0, T) : 0;
  // Query tiles from the first that sees the group's first key.
  const int first_tile = t_begin / TILE, tiles = (T + TILE - 1) / TILE - first_tile;
#define FETCH_QUERIES(tile, stage)                                                            \
  do {                                                                                        \
    const int t0_ = (first_tile + (tile)) * TILE, n_ = min(TILE, T - t0_);                    \
    fetch_tile(q_tiles + (stage) * TILE * DKS, q, b, h, t0_, n_, q_sb, q_sh, q_st, DK, lid);  \
    fetch_tile(do_tiles + (stage) * TILE * DVS, dout, b, h, t0_, n_, o_sb, o_sh, o_st, DV,    \
               lid);                                                                          \
    commit_fetches();                                                                         \
    for (int r_ = lid; r_ < TILE; r_ += THREADS) {                                            \
      lse_tiles[(stage) * TILE + r_] = r_ < n_ ? lse[bh * T + t0_ + r_] : INFINITY;           \
      delta_tiles[(stage) * TILE + r_] = r_ < n_ ? delta[bh * T + t0_ + r_] : 0.f;            \
    }                                                                                         \
  } while (0)
  for (int tile = 0; tile < tiles; ++tile) {
    const int t0 = (first_tile + tile) * TILE;
    BEGIN_TILE(tile, tiles, FETCH_QUERIES);
    __local ushort* q_tile = q_tiles + (tile % STAGES) * TILE * DKS;
    __local ushort* do_tile = do_tiles + (tile % STAGES) * TILE * DVS;
    __local float* lse_tile = lse_tiles + (tile % STAGES) * TILE;
    __local float* delta_tile = delta_tiles + (tile % STAGES) * TILE;
    // Transposed scores: rows are this warp's keys, columns the tile's queries.
    float p[TILE / 8][4], dp[TILE / 8][4];
    SCORES(p, kf, q_tile, DKS, DK);
    SCORES(dp, vf, do_tile, DVS, DV);  // V dO^T
    float ds[TILE / 8][4];
    UNROLL for (int j = 0; j < TILE / 8; ++j)
      UNROLL for (int e = 0; e < 4; ++e) {
        const int key = e < 2 ? key_a : key_b, i = 8 * j + 2 * c + (e & 1), t = t0 + i;
        const bool seen = t < T && key < S && (!causal || key <= t + shift);
        const float prob =
            seen ? exp(p[j][e] * scale + mask_at(mask, mask_batches, mask_sb, mask_sh, S, b, h, t, key) -
                       lse_tile[i])
                 : 0.f;
        p[j][e] = prob;
        ds[j][e] = prob * (dp[j][e] - delta_tile[i]);
      }
    ACCUMULATE_PRODUCT(grad_v, p, do_tile, DVS, DV);
    ACCUMULATE_PRODUCT(grad_k, ds, q_tile, DKS, DK);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (want_dk) STORE_BLOCK(grad_k, DK, dk, b, h, k0 + warp * 16, S, k_sb, k_sh, k_st, SCALE_ALL);
#define SCALE_ONE(r) 1.f
  if (want_dv) STORE_BLOCK(grad_v, DV, dv, b, h, k0 + warp * 16, S, v_sb, v_sh, v_st, SCALE_ONE);
}
