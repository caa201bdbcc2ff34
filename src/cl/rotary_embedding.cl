// Rotary position embedding (the "RotaryEmbedding" layer) of rows of `dim`
// features; row r is at position r % seq + offset. Pair i of the first
// rotary_dim features turns by sign * t * base^(-2i / rotary_dim): sign 1
// forward, -1 backward (the inverse rotation of the top diff). The angle
// comes from exp2 of i * coef, coef = -2 log2(base) / rotary_dim from the
// host in double.
//
// Work-item j of a row of `items` (= pairs + pass) turns pair j for j < pairs,
// else copies feature rotary_dim + j - pairs (pass is 0 in place). y may alias
// x: each work-item reads its elements before writing them.
//
// Build option INTERLEAVED: pairs (2i, 2i + 1) if 1, else (i, i + pairs).

__kernel void rotary_embedding(const int n, const int items, const int pairs, const int dim,
                               const int rotary_dim, const int seq, const int offset,
                               const float coef, const float sign, __global const float* x,
                               __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const int r = i / items;
  const int j = i % items;
  const size_t base = (size_t)r * dim;
  if (j >= pairs) {
    const size_t e = base + rotary_dim + (j - pairs);
    y[e] = x[e];
    return;
  }
#if INTERLEAVED
  const size_t a = base + 2 * j, b = a + 1;
#else
  const size_t a = base + j, b = a + pairs;
#endif
  const float angle = (float)(r % seq + offset) * exp2((float)j * coef);
  const float c = cos(angle), s = sign * sin(angle);
  const float xa = x[a], xb = x[b];
  y[a] = xa * c - xb * s;
  y[b] = xb * c + xa * s;
}
