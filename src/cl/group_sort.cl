// Sorting (score, id) pairs by one work-group, in place in global or local memory
// (bitonic): scores descending, equal scores by id ascending. That is a
// total order for distinct ids, so every device and work-group size gives
// the same result, and it is Caffe's stable sort of scores listed by id.
// Every work-item of the group must call it with the same arguments. The
// arrays must hold next_pow2(count) pairs: the tail is padded with pairs that
// sort last (score -INFINITY, id INT_MAX). A NaN score orders arbitrarily.

inline bool pair_precedes(float score_a, int id_a, float score_b, int id_b) {
  return score_a > score_b || (score_a == score_b && id_a < id_b);
}

inline int next_pow2(int n) {
  int p = 1;
  while (p < n) p <<= 1;
  return p;
}

// group_sort_pairs sorts arrays in global memory, group_sort_pairs_local in
// local memory (the same steps).
#define GROUP_SORT_PAIRS(NAME, SPACE, FENCE)                                       \
  void NAME(SPACE float* score, SPACE int* id, int count) {                        \
    const int lid = get_local_id(0), size = get_local_size(0);                     \
    const int n = next_pow2(count);                                                \
    for (int i = count + lid; i < n; i += size) {                                  \
      score[i] = -INFINITY;                                                        \
      id[i] = INT_MAX;                                                             \
    }                                                                              \
    barrier(FENCE);                                                                \
    for (int block = 2; block <= n; block <<= 1) {                                 \
      for (int stride = block >> 1; stride > 0; stride >>= 1) {                    \
        /* Pair t compares elements i and i + stride of its run of 2 * stride. */  \
        for (int t = lid; t < n / 2; t += size) {                                  \
          const int i = 2 * stride * (t / stride) + t % stride, j = i + stride;    \
          const float si = score[i], sj = score[j];                                \
          const int ii = id[i], ij = id[j];                                        \
          /* Runs alternate direction so that each block becomes bitonic. */       \
          const bool in_order = (i & block) == 0 ? !pair_precedes(sj, ij, si, ii)  \
                                                  : !pair_precedes(si, ii, sj, ij); \
          if (!in_order) {                                                         \
            score[i] = sj, score[j] = si;                                          \
            id[i] = ij, id[j] = ii;                                                \
          }                                                                        \
        }                                                                          \
        barrier(FENCE);                                                            \
      }                                                                            \
    }                                                                              \
  }

GROUP_SORT_PAIRS(group_sort_pairs, __global, CLK_GLOBAL_MEM_FENCE)
GROUP_SORT_PAIRS(group_sort_pairs_local, __local, CLK_LOCAL_MEM_FENCE)
