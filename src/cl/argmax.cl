// ArgMax: the top_k largest values of each group of `dim` elements, and their
// indices within the group. Group i's element j sits at
// (i / stride * dim + j) * stride + i % stride (stride = 1 without an axis).
// Order as Caffe's std::partial_sort with std::greater<pair<value, index>>:
// larger value first, and on equal values the larger index first.
// OUT_MODE 0: indices at the axis positions; 1: values at the axis positions
// (out_max_val with an axis); 2: per group, top_k indices then top_k values
// (out_max_val without an axis).

#ifndef OUT_MODE
#define OUT_MODE 0
#endif

// (va, ja) ranks before (vb, jb)
#define RANKS_BEFORE(va, ja, vb, jb) ((va) > (vb) || ((va) == (vb) && (ja) > (jb)))

__kernel void argmax_forward(const int groups, const int dim, const int stride,
                             const int top_k, __global const float* x, __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= groups) return;
  const int base = i / stride * dim * stride + i % stride;
  const int out_base = i / stride * top_k * stride + i % stride;
  float prev_v = 0.f;
  int prev_j = -1;
  for (int k = 0; k < top_k; ++k) {
    // The best element ranking after the (k-1)-th.
    float best_v = 0.f;
    int best_j = -1;
    for (int j = 0; j < dim; ++j) {
      const float v = x[base + j * stride];
      if (k > 0 && !RANKS_BEFORE(prev_v, prev_j, v, j)) continue;
      if (best_j < 0 || RANKS_BEFORE(v, j, best_v, best_j)) {
        best_v = v;
        best_j = j;
      }
    }
    prev_v = best_v;
    prev_j = best_j;
#if OUT_MODE == 2
    y[2 * i * top_k + k] = (float)best_j;
    y[2 * i * top_k + top_k + k] = best_v;
#elif OUT_MODE == 1
    y[out_base + k * stride] = best_v;
#else
    y[out_base + k * stride] = (float)best_j;
#endif
  }
}
