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
// + d, which covers (B, H, T, D) and heads side by side in (B, T, H*D).

inline int RowOffset(int b, int h, int t, int sb, int sh, int st) {
  return b * sb + h * sh + t * st;
}

// The additive mask at (b, h, t, s), 0 without one.
inline float MaskAt(__global const float* mask, int has_mask, int mask_sb, int mask_sh, int S,
                    int b, int h, int t, int s) {
  return has_mask ? mask[b * mask_sb + h * mask_sh + t * S + s] : 0.f;
}

__kernel void attention_forward(
    int T, int S, int H, float scale, int causal,
    __global const float* q, int q_sb, int q_sh, int q_st,
    __global const float* k, int k_sb, int k_sh, int k_st,
    __global const float* v, int v_sb, int v_sh, int v_st,
    __global const float* mask, int has_mask, int mask_sb, int mask_sh,
    __global float* out, int o_sb, int o_sh, int o_st,
    __global float* lse) {
  __local float k_tile[KEYS * DK];
  __local float v_tile[KEYS * DV];
  const int lid = get_local_id(0);
  const int t = get_global_id(0);
  const int bh = get_global_id(1);
  const int b = bh / H, h = bh % H;
  const bool valid = t < T;
  const int shift = S - T;  // query t sees keys s <= t + shift when causal

  float qv[DK];
  float acc[DV];
  for (int d = 0; d < DK; ++d)
    qv[d] = valid ? q[RowOffset(b, h, t, q_sb, q_sh, q_st) + d] * scale : 0.f;
  for (int d = 0; d < DV; ++d) acc[d] = 0.f;
  float m = -INFINITY, l = 0.f;

  // The group's last row bounds the keys any of its rows sees.
  const int group_last = min(T - 1, (int)(get_group_id(0) * ROWS + ROWS - 1));
  const int s_end = causal ? clamp(group_last + shift + 1, 0, S) : S;
  for (int s0 = 0; s0 < s_end; s0 += KEYS) {
    const int n = min(KEYS, S - s0);
    for (int i = lid; i < n * DK; i += ROWS)
      k_tile[i] = k[RowOffset(b, h, s0 + i / DK, k_sb, k_sh, k_st) + i % DK];
    for (int i = lid; i < n * DV; i += ROWS)
      v_tile[i] = v[RowOffset(b, h, s0 + i / DV, v_sb, v_sh, v_st) + i % DV];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (valid) {
      const int visible = causal ? clamp(t + shift + 1 - s0, 0, n) : n;
      float scores[KEYS];
      float tile_max = -INFINITY;
      for (int j = 0; j < visible; ++j) {
        float dot = 0.f;
        for (int d = 0; d < DK; ++d) dot += qv[d] * k_tile[j * DK + d];
        scores[j] = dot + MaskAt(mask, has_mask, mask_sb, mask_sh, S, b, h, t, s0 + j);
        tile_max = fmax(tile_max, scores[j]);
      }
      const float m_new = fmax(m, tile_max);
      if (m_new > -INFINITY) {  // else every score so far is -inf: nothing to add
        const float correction = exp(m - m_new);
        l *= correction;
        for (int d = 0; d < DV; ++d) acc[d] *= correction;
        for (int j = 0; j < visible; ++j) {
          const float p = exp(scores[j] - m_new);
          l += p;
          for (int d = 0; d < DV; ++d) acc[d] += p * v_tile[j * DV + d];
        }
        m = m_new;
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (!valid) return;
  const float inv = l > 0.f ? 1.f / l : 0.f;
  const int o = RowOffset(b, h, t, o_sb, o_sh, o_st);
  for (int d = 0; d < DV; ++d) out[o + d] = acc[d] * inv;
  // A row that saw no key: +inf makes every recomputed probability 0.
  lse[bh * T + t] = l > 0.f ? m + log(l) : INFINITY;
}

// delta[row] = sum_d dO[row, d] * O[row, d], a term of the softmax's gradient.
__kernel void attention_backward_delta(
    int T, int H, int rows,
    __global const float* out, int o_sb, int o_sh, int o_st,
    __global const float* dout, __global float* delta) {
  const int row = get_global_id(0);
  if (row >= rows) return;
  const int t = row % T, bh = row / T;
  const int o = RowOffset(bh / H, bh % H, t, o_sb, o_sh, o_st);
  float sum = 0.f;
  for (int d = 0; d < DV; ++d) sum += dout[o + d] * out[o + d];
  delta[row] = sum;
}

// dQ[t] = scale * sum_s p[t,s] (dO[t] . V[s] - delta[t]) K[s], a work-item
// per query row, keys and values in tiles as forward.
__kernel void attention_backward_dq(
    int T, int S, int H, float scale, int causal,
    __global const float* q, int q_sb, int q_sh, int q_st,
    __global const float* k, int k_sb, int k_sh, int k_st,
    __global const float* v, int v_sb, int v_sh, int v_st,
    __global const float* mask, int has_mask, int mask_sb, int mask_sh,
    __global const float* dout, int o_sb, int o_sh, int o_st,
    __global const float* lse, __global const float* delta,
    __global float* dq) {
  __local float k_tile[KEYS * DK];
  __local float v_tile[KEYS * DV];
  const int lid = get_local_id(0);
  const int t = get_global_id(0);
  const int bh = get_global_id(1);
  const int b = bh / H, h = bh % H;
  const bool valid = t < T;
  const int shift = S - T;

  float qv[DK], dov[DV], grad[DK];
  for (int d = 0; d < DK; ++d) {
    qv[d] = valid ? q[RowOffset(b, h, t, q_sb, q_sh, q_st) + d] * scale : 0.f;
    grad[d] = 0.f;
  }
  for (int d = 0; d < DV; ++d) dov[d] = valid ? dout[RowOffset(b, h, t, o_sb, o_sh, o_st) + d] : 0.f;
  const float row_lse = valid ? lse[bh * T + t] : INFINITY;
  const float row_delta = valid ? delta[bh * T + t] : 0.f;

  const int group_last = min(T - 1, (int)(get_group_id(0) * ROWS + ROWS - 1));
  const int s_end = causal ? clamp(group_last + shift + 1, 0, S) : S;
  for (int s0 = 0; s0 < s_end; s0 += KEYS) {
    const int n = min(KEYS, S - s0);
    for (int i = lid; i < n * DK; i += ROWS)
      k_tile[i] = k[RowOffset(b, h, s0 + i / DK, k_sb, k_sh, k_st) + i % DK];
    for (int i = lid; i < n * DV; i += ROWS)
      v_tile[i] = v[RowOffset(b, h, s0 + i / DV, v_sb, v_sh, v_st) + i % DV];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (valid) {
      const int visible = causal ? clamp(t + shift + 1 - s0, 0, n) : n;
      for (int j = 0; j < visible; ++j) {
        float dot = 0.f, dp = 0.f;
        for (int d = 0; d < DK; ++d) dot += qv[d] * k_tile[j * DK + d];
        for (int d = 0; d < DV; ++d) dp += dov[d] * v_tile[j * DV + d];
        const float score = dot + MaskAt(mask, has_mask, mask_sb, mask_sh, S, b, h, t, s0 + j);
        const float ds = exp(score - row_lse) * (dp - row_delta);
        for (int d = 0; d < DK; ++d) grad[d] += ds * k_tile[j * DK + d];
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (!valid) return;
  const int o = RowOffset(b, h, t, q_sb, q_sh, q_st);
  for (int d = 0; d < DK; ++d) dq[o + d] = grad[d] * scale;
}

// dV[s] = sum_t p[t,s] dO[t] and dK[s] = scale * sum_t p[t,s] (dO[t] . V[s] -
// delta[t]) Q[t]: a work-item per key row, queries (Q, dO, lse, delta) in
// tiles of KEYS rows.
__kernel void attention_backward_dkv(
    int T, int S, int H, float scale, int causal,
    __global const float* q, int q_sb, int q_sh, int q_st,
    __global const float* k, int k_sb, int k_sh, int k_st,
    __global const float* v, int v_sb, int v_sh, int v_st,
    __global const float* mask, int has_mask, int mask_sb, int mask_sh,
    __global const float* dout, int o_sb, int o_sh, int o_st,
    __global const float* lse, __global const float* delta,
    __global float* dk, __global float* dv, int want_dk, int want_dv) {
  __local float q_tile[KEYS * DK];
  __local float do_tile[KEYS * DV];
  __local float lse_tile[KEYS];
  __local float delta_tile[KEYS];
  const int lid = get_local_id(0);
  const int s = get_global_id(0);
  const int bh = get_global_id(1);
  const int b = bh / H, h = bh % H;
  const bool valid = s < S;
  const int shift = S - T;

  float kv[DK], vv[DV], grad_k[DK], grad_v[DV];
  for (int d = 0; d < DK; ++d) {
    kv[d] = valid ? k[RowOffset(b, h, s, k_sb, k_sh, k_st) + d] : 0.f;
    grad_k[d] = 0.f;
  }
  for (int d = 0; d < DV; ++d) {
    vv[d] = valid ? v[RowOffset(b, h, s, v_sb, v_sh, v_st) + d] : 0.f;
    grad_v[d] = 0.f;
  }
  // Causal: key s is seen by the queries t >= s - shift; the group's first
  // key bounds where its queries start.
  const int group_first = get_group_id(0) * ROWS;
  const int t_begin = causal ? clamp(group_first - shift, 0, T) : 0;
  for (int t0 = t_begin - t_begin % KEYS; t0 < T; t0 += KEYS) {
    const int n = min(KEYS, T - t0);
    for (int i = lid; i < n * DK; i += ROWS)
      q_tile[i] = q[RowOffset(b, h, t0 + i / DK, q_sb, q_sh, q_st) + i % DK] * scale;
    for (int i = lid; i < n * DV; i += ROWS)
      do_tile[i] = dout[RowOffset(b, h, t0 + i / DV, o_sb, o_sh, o_st) + i % DV];
    for (int i = lid; i < n; i += ROWS) {
      lse_tile[i] = lse[bh * T + t0 + i];
      delta_tile[i] = delta[bh * T + t0 + i];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (valid) {
      for (int i = 0; i < n; ++i) {
        const int t = t0 + i;
        if (causal && s > t + shift) continue;
        float dot = 0.f, dp = 0.f;
        for (int d = 0; d < DK; ++d) dot += q_tile[i * DK + d] * kv[d];
        for (int d = 0; d < DV; ++d) dp += do_tile[i * DV + d] * vv[d];
        const float score = dot + MaskAt(mask, has_mask, mask_sb, mask_sh, S, b, h, t, s);
        const float p = exp(score - lse_tile[i]);
        const float ds = p * (dp - delta_tile[i]);
        for (int d = 0; d < DV; ++d) grad_v[d] += p * do_tile[i * DV + d];
        // q_tile holds Q * scale: ds * (scale * Q) is dK's term.
        for (int d = 0; d < DK; ++d) grad_k[d] += ds * q_tile[i * DK + d];
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (!valid) return;
  if (want_dk) {
    const int o = RowOffset(b, h, s, k_sb, k_sh, k_st);
    for (int d = 0; d < DK; ++d) dk[o + d] = grad_k[d];
  }
  if (want_dv) {
    const int o = RowOffset(b, h, s, v_sb, v_sh, v_st);
    for (int d = 0; d < DV; ++d) dv[o + d] = grad_v[d];
  }
}

// Incremental decoding: copies the new positions' keys or values (slices of
// `rows` rows of `width` floats) into a cache of `capacity` rows per slice,
// from row `position` on.
__kernel void attention_cache_append(int count, int rows, int width, int capacity, int position,
                                     __global const float* src, __global float* cache) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int w = i % width;
  const int row = (i / width) % rows;
  const int slice = i / (width * rows);
  cache[((size_t)slice * capacity + position + row) * width + w] = src[i];
}
