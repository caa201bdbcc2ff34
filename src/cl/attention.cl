// Fused attention (src/layers/attention.cpp): out = softmax(Q K^T * scale +
// mask) V for each (batch item, head), in tiles, never storing the T x S
// scores (the flash-attention scheme):
//  - forward: a work-item per query row; the work-group loads KEYS keys and
//    values at a time into local memory; each row keeps a running maximum,
//    sum and weighted sum of values (the online softmax), and stores its
//    log-sum-exp for backward;
//  - backward recomputes the probabilities from the log-sum-exp: one pass per
//    query row for dQ, one per key row for dK and dV (no atomics: each
//    work-item owns the rows it writes).
//
// Compile-time: DK, DV (head sizes), ROWS (work-group size), KEYS (keys or
// queries per tile). Tensors are addressed as base + b * sb + h * sh + t * st
// + d (base: the buffer moved by the tensor's offset), which covers (B, H, T,
// D), heads side by side in (B, T, H*D) or (T, B, H*D), and Q, K, V packed
// in one buffer.
//
// Q, K, V, the output and their gradients are stored as DATA_TYPE
// (common.cl; 16-bit in mixed precision, read and written through
// DATA_LOAD / DATA_STORE); the mask, the log-sum-exps, delta and all the
// arithmetic are float.
//
// Tiles in local memory are rows of float4 (head sizes padded with zeros to
// DKP, DVP): a work-item reads four features per load, aligned, while all
// the group reads the same row (a broadcast), so the loads no longer bound
// the multiply-adds; rows held in registers are padded likewise.

#define DKP ((DK + 3) / 4 * 4)
#define DVP ((DV + 3) / 4 * 4)

inline int RowOffset(int b, int h, int t, int sb, int sh, int st) {
  return b * sb + h * sh + t * st;
}

// Rows [r0, r0 + n) of a tensor (head size D) into `tile` (rows of DP floats,
// the padding zero), scaled by `scale`, by the group's ROWS work-items.
inline void LoadTile(__local float4* tile, __global const DATA_ELEM* x, int b, int h, int r0, int n,
                     int sb, int sh, int st, int D, int DP, float scale, int lid) {
  __local float* flat = (__local float*)tile;
  for (int i = lid; i < n * DP; i += ROWS) {
    const int row = i / DP, d = i % DP;
    flat[i] = d < D ? DATA_LOAD(x, RowOffset(b, h, r0 + row, sb, sh, st) + d) * scale : 0.f;
  }
}

// A row held in registers (DP floats) times a tile's row of float4s.
inline float DotTileRow(const float* x, __local const float4* row, int DP) {
  float sum = 0.f;
#pragma unroll
  for (int d4 = 0; d4 < DP / 4; ++d4) {
    const float4 y = row[d4];
    sum += x[4 * d4] * y.x + x[4 * d4 + 1] * y.y + x[4 * d4 + 2] * y.z + x[4 * d4 + 3] * y.w;
  }
  return sum;
}

// acc += a * a tile's row of float4s.
inline void AddScaledTileRow(float* acc, float a, __local const float4* row, int DP) {
#pragma unroll
  for (int d4 = 0; d4 < DP / 4; ++d4) {
    const float4 y = row[d4];
    acc[4 * d4] += a * y.x;
    acc[4 * d4 + 1] += a * y.y;
    acc[4 * d4 + 2] += a * y.z;
    acc[4 * d4 + 3] += a * y.w;
  }
}

// A row of a tensor into registers (DP floats, the padding zero); zeros for
// a row past the end.
inline void LoadRow(float* row, __global const DATA_ELEM* x, int offset, int D, int DP, float scale,
                    bool valid) {
#pragma unroll
  for (int d = 0; d < DP; ++d) row[d] = valid && d < D ? DATA_LOAD(x, offset + d) * scale : 0.f;
}

// The additive mask at (b, h, t, s), 0 without one (mask_batches 0). A mask
// of mask_batches batch items gives batch item b its item b % mask_batches
// (1: one for all; B: its own; swin's windows: the window's).
inline float MaskAt(__global const float* mask, int mask_batches, int mask_sb, int mask_sh, int S,
                    int b, int h, int t, int s) {
  return mask_batches ? mask[(b % mask_batches) * mask_sb + h * mask_sh + t * S + s] : 0.f;
}

__kernel void attention_forward(
    int T, int S, int H, float scale, int causal,
    __global const DATA_ELEM* q, int q_off, int q_sb, int q_sh, int q_st,
    __global const DATA_ELEM* k, int k_off, int k_sb, int k_sh, int k_st,
    __global const DATA_ELEM* v, int v_off, int v_sb, int v_sh, int v_st,
    __global const float* mask, int mask_batches, int mask_sb, int mask_sh,
    __global DATA_ELEM* out, int o_off, int o_sb, int o_sh, int o_st,
    __global float* lse) {
  // Each tensor from its offset in its buffer (a packed Q, K, V).
  q += q_off; k += k_off; v += v_off; out += o_off;
  __local float4 k_tile[KEYS * DKP / 4];
  __local float4 v_tile[KEYS * DVP / 4];
  const int lid = get_local_id(0);
  const int t = get_global_id(0);
  const int bh = get_global_id(1);
  const int b = bh / H, h = bh % H;
  const bool valid = t < T;
  const int shift = S - T;  // query t sees keys s <= t + shift when causal

  float qv[DKP];
  float acc[DVP];
  LoadRow(qv, q, RowOffset(b, h, t, q_sb, q_sh, q_st), DK, DKP, scale, valid);
  for (int d = 0; d < DVP; ++d) acc[d] = 0.f;
  float m = -INFINITY, l = 0.f;

  // The group's last row bounds the keys any of its rows sees.
  const int group_last = min(T - 1, (int)(get_group_id(0) * ROWS + ROWS - 1));
  const int s_end = causal ? clamp(group_last + shift + 1, 0, S) : S;
  for (int s0 = 0; s0 < s_end; s0 += KEYS) {
    const int n = min(KEYS, S - s0);
    LoadTile(k_tile, k, b, h, s0, n, k_sb, k_sh, k_st, DK, DKP, 1.f, lid);
    LoadTile(v_tile, v, b, h, s0, n, v_sb, v_sh, v_st, DV, DVP, 1.f, lid);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (valid) {
      const int visible = causal ? clamp(t + shift + 1 - s0, 0, n) : n;
      float scores[KEYS];
      float tile_max = -INFINITY;
      for (int j = 0; j < visible; ++j) {
        scores[j] = DotTileRow(qv, k_tile + j * (DKP / 4), DKP) +
                    MaskAt(mask, mask_batches, mask_sb, mask_sh, S, b, h, t, s0 + j);
        tile_max = fmax(tile_max, scores[j]);
      }
      const float m_new = fmax(m, tile_max);
      if (m_new > -INFINITY) {  // else every score so far is -inf: nothing to add
        const float correction = exp(m - m_new);
        l *= correction;
        for (int d = 0; d < DVP; ++d) acc[d] *= correction;
        for (int j = 0; j < visible; ++j) {
          const float p = exp(scores[j] - m_new);
          l += p;
          AddScaledTileRow(acc, p, v_tile + j * (DVP / 4), DVP);
        }
        m = m_new;
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (!valid) return;
  const float inv = l > 0.f ? 1.f / l : 0.f;
  const int o = RowOffset(b, h, t, o_sb, o_sh, o_st);
  for (int d = 0; d < DV; ++d) DATA_STORE(out, o + d, acc[d] * inv);
  // A row that saw no key: +inf makes every recomputed probability 0.
  lse[bh * T + t] = l > 0.f ? m + log(l) : INFINITY;
}

// delta[row] = sum_d dO[row, d] * O[row, d], a term of the softmax's gradient.
__kernel void attention_backward_delta(
    int T, int H, int rows,
    __global const DATA_ELEM* out, int o_off, int o_sb, int o_sh, int o_st,
    __global const DATA_ELEM* dout, __global float* delta) {
  out += o_off;
  dout += o_off;
  const int row = get_global_id(0);
  if (row >= rows) return;
  const int t = row % T, bh = row / T;
  const int o = RowOffset(bh / H, bh % H, t, o_sb, o_sh, o_st);
  float sum = 0.f;
  for (int d = 0; d < DV; ++d) sum += DATA_LOAD(dout, o + d) * DATA_LOAD(out, o + d);
  delta[row] = sum;
}

// dQ[t] = scale * sum_s p[t,s] (dO[t] . V[s] - delta[t]) K[s], a work-item
// per query row, keys and values in tiles as forward. With want_ds, each
// dS[t,s] = p[t,s] (dO[t] . V[s] - delta[t]) a query sees -- the gradient of
// an additive mask at (b, h, t, s) -- goes to ds_out[((b H + h) T + t) S +
// s] (the rest stays as the host filled it: 0).
__kernel void attention_backward_dq(
    int T, int S, int H, float scale, int causal,
    __global const DATA_ELEM* q, int q_off, int q_sb, int q_sh, int q_st,
    __global const DATA_ELEM* k, int k_off, int k_sb, int k_sh, int k_st,
    __global const DATA_ELEM* v, int v_off, int v_sb, int v_sh, int v_st,
    __global const float* mask, int mask_batches, int mask_sb, int mask_sh,
    __global const DATA_ELEM* dout, int o_off, int o_sb, int o_sh, int o_st,
    __global const float* lse, __global const float* delta,
    __global DATA_ELEM* dq, int want_dq, __global float* ds_out, int want_ds) {
  // Each tensor from its offset in its buffer (a packed Q, K, V).
  q += q_off; k += k_off; v += v_off; dout += o_off; dq += q_off;
  __local float4 k_tile[KEYS * DKP / 4];
  __local float4 v_tile[KEYS * DVP / 4];
  const int lid = get_local_id(0);
  const int t = get_global_id(0);
  const int bh = get_global_id(1);
  const int b = bh / H, h = bh % H;
  const bool valid = t < T;
  const int shift = S - T;

  float qv[DKP], dov[DVP], grad[DKP];
  LoadRow(qv, q, RowOffset(b, h, t, q_sb, q_sh, q_st), DK, DKP, scale, valid);
  LoadRow(dov, dout, RowOffset(b, h, t, o_sb, o_sh, o_st), DV, DVP, 1.f, valid);
  for (int d = 0; d < DKP; ++d) grad[d] = 0.f;
  const float row_lse = valid ? lse[bh * T + t] : INFINITY;
  const float row_delta = valid ? delta[bh * T + t] : 0.f;

  const int group_last = min(T - 1, (int)(get_group_id(0) * ROWS + ROWS - 1));
  const int s_end = causal ? clamp(group_last + shift + 1, 0, S) : S;
  for (int s0 = 0; s0 < s_end; s0 += KEYS) {
    const int n = min(KEYS, S - s0);
    LoadTile(k_tile, k, b, h, s0, n, k_sb, k_sh, k_st, DK, DKP, 1.f, lid);
    LoadTile(v_tile, v, b, h, s0, n, v_sb, v_sh, v_st, DV, DVP, 1.f, lid);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (valid) {
      const int visible = causal ? clamp(t + shift + 1 - s0, 0, n) : n;
      for (int j = 0; j < visible; ++j) {
        const float dot = DotTileRow(qv, k_tile + j * (DKP / 4), DKP);
        const float dp = DotTileRow(dov, v_tile + j * (DVP / 4), DVP);
        const float score = dot + MaskAt(mask, mask_batches, mask_sb, mask_sh, S, b, h, t, s0 + j);
        const float ds = exp(score - row_lse) * (dp - row_delta);
        AddScaledTileRow(grad, ds, k_tile + j * (DKP / 4), DKP);
        if (want_ds) ds_out[((size_t)bh * T + t) * S + s0 + j] = ds;
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (!valid || !want_dq) return;
  const int o = RowOffset(b, h, t, q_sb, q_sh, q_st);
  for (int d = 0; d < DK; ++d) DATA_STORE(dq, o + d, grad[d] * scale);
}

// The gradient of a mask of shape (mask_b, mask_h, T, S) -- mask_b dividing
// B (batch item b reads item b % mask_b), mask_h 1 or H, a (T, S) mask being
// (1, 1, T, S) -- from every (b, h)'s dS (attention_backward_dq's ds_out):
// the sum over the items and heads that read each element, in one fixed
// order.
__kernel void attention_mask_gradient(int count, int B, int H, int T, int S, int mask_b,
                                      int mask_h, __global const float* ds,
                                      __global float* dmask) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int ts = i % (T * S), mh = (i / (T * S)) % mask_h, mb = i / (T * S * mask_h);
  float sum = 0.f;
  for (int b = mb; b < B; b += mask_b)
    for (int h = mh; h < H; h += mask_h)
      sum += ds[(size_t)(b * H + h) * T * S + ts];
  dmask[i] = sum;
}

// dV[s] = sum_t p[t,s] dO[t] and dK[s] = scale * sum_t p[t,s] (dO[t] . V[s] -
// delta[t]) Q[t]: a work-item per key row, queries (Q, dO, lse, delta) in
// tiles of KEYS rows.
__kernel void attention_backward_dkv(
    int T, int S, int H, float scale, int causal,
    __global const DATA_ELEM* q, int q_off, int q_sb, int q_sh, int q_st,
    __global const DATA_ELEM* k, int k_off, int k_sb, int k_sh, int k_st,
    __global const DATA_ELEM* v, int v_off, int v_sb, int v_sh, int v_st,
    __global const float* mask, int mask_batches, int mask_sb, int mask_sh,
    __global const DATA_ELEM* dout, int o_off, int o_sb, int o_sh, int o_st,
    __global const float* lse, __global const float* delta,
    __global DATA_ELEM* dk, __global DATA_ELEM* dv, int want_dk, int want_dv) {
  // Each tensor from its offset in its buffer (a packed Q, K, V).
  q += q_off; k += k_off; v += v_off; dout += o_off; dk += k_off; dv += v_off;
  __local float4 q_tile[KEYS * DKP / 4];
  __local float4 do_tile[KEYS * DVP / 4];
  __local float lse_tile[KEYS];
  __local float delta_tile[KEYS];
  const int lid = get_local_id(0);
  const int s = get_global_id(0);
  const int bh = get_global_id(1);
  const int b = bh / H, h = bh % H;
  const bool valid = s < S;
  const int shift = S - T;

  float kv[DKP], vv[DVP], grad_k[DKP], grad_v[DVP];
  LoadRow(kv, k, RowOffset(b, h, s, k_sb, k_sh, k_st), DK, DKP, 1.f, valid);
  LoadRow(vv, v, RowOffset(b, h, s, v_sb, v_sh, v_st), DV, DVP, 1.f, valid);
  for (int d = 0; d < DKP; ++d) grad_k[d] = 0.f;
  for (int d = 0; d < DVP; ++d) grad_v[d] = 0.f;
  // Causal: key s is seen by the queries t >= s - shift; the group's first
  // key bounds where its queries start.
  const int group_first = get_group_id(0) * ROWS;
  const int t_begin = causal ? clamp(group_first - shift, 0, T) : 0;
  for (int t0 = t_begin - t_begin % KEYS; t0 < T; t0 += KEYS) {
    const int n = min(KEYS, T - t0);
    // Q * scale: ds * (scale * Q) is dK's term.
    LoadTile(q_tile, q, b, h, t0, n, q_sb, q_sh, q_st, DK, DKP, scale, lid);
    LoadTile(do_tile, dout, b, h, t0, n, o_sb, o_sh, o_st, DV, DVP, 1.f, lid);
    for (int i = lid; i < n; i += ROWS) {
      lse_tile[i] = lse[bh * T + t0 + i];
      delta_tile[i] = delta[bh * T + t0 + i];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (valid) {
      for (int i = causal ? clamp(s - shift - t0, 0, n) : 0; i < n; ++i) {
        const int t = t0 + i;
        const float dot = DotTileRow(kv, q_tile + i * (DKP / 4), DKP);
        const float dp = DotTileRow(vv, do_tile + i * (DVP / 4), DVP);
        const float score = dot + MaskAt(mask, mask_batches, mask_sb, mask_sh, S, b, h, t, s);
        const float p = exp(score - lse_tile[i]);
        const float ds = p * (dp - delta_tile[i]);
        AddScaledTileRow(grad_v, p, do_tile + i * (DVP / 4), DVP);
        AddScaledTileRow(grad_k, ds, q_tile + i * (DKP / 4), DKP);
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (!valid) return;
  if (want_dk) {
    const int o = RowOffset(b, h, s, k_sb, k_sh, k_st);
    for (int d = 0; d < DK; ++d) DATA_STORE(dk, o + d, grad_k[d]);
  }
  if (want_dv) {
    const int o = RowOffset(b, h, s, v_sb, v_sh, v_st);
    for (int d = 0; d < DV; ++d) DATA_STORE(dv, o + d, grad_v[d]);
  }
}

// Incremental decoding: copies the new positions' keys or values (slices of
// `rows` rows of `width` values; row r of slice l at src_off + l * src_sl +
// r * src_sr) into a cache of `capacity` rows per slice, from row `position`
// on.
__kernel void attention_cache_append(int count, int rows, int width, int capacity, int position,
                                     __global const DATA_ELEM* src, int src_off, int src_sl,
                                     int src_sr, __global DATA_ELEM* cache) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int w = i % width;
  const int row = (i / width) % rows;
  const int slice = i / (width * rows);
  DATA_STORE(cache, ((size_t)slice * capacity + position + row) * width + w,
             DATA_LOAD(src, src_off + slice * src_sl + row * src_sr + w));
}
