// Pad (src/layers/pad.cpp): per-axis index tables, computed on the host,
// carry the padding mode, so the kernels only look them up. RANK: the
// number of axes (1 to 8).
//
// The table holds, per axis d:
//   at forward[d]: one int per top coordinate, the bottom coordinate it
//     copies, or -1 for the constant;
//   at offsets[d]: one int per bottom coordinate i and one more, the range
//     [offsets[i], offsets[i + 1]) of entries that list the top coordinates
//     copying bottom coordinate i;
//   at entries[d]: those top coordinates.

#ifndef RANK
#define RANK 1
#endif

typedef struct {
  int size[8];     // the blob the work-items run over
  int stride[8];   // the other blob's strides
  int forward[8];
  int offsets[8];
  int entries[8];
} pad_geometry;

// One work-item per top element: the bottom element its coordinates map to,
// or `value`.
__kernel void pad_forward(const int n, const pad_geometry g, __global const int* table,
                          const float value, __global const float* x, __global float* y) {
  const int index = GLOBAL_INDEX;
  if (index >= n) return;
  int rest = index, place = 0;
  bool inside = true;
#pragma unroll
  for (int d = RANK - 1; d >= 0; --d) {
    const int c = rest % g.size[d];
    rest /= g.size[d];
    const int from = table[g.forward[d] + c];
    inside = inside && from >= 0;
    place += from * g.stride[d];
  }
  y[index] = inside ? x[place] : value;
}

// One work-item per bottom element: the sum of the top diff over every top
// element that copies it (the product of each axis's list).
__kernel void pad_backward(const int n, const pad_geometry g, __global const int* table,
                           __global const float* dy, __global float* dx) {
  const int index = GLOBAL_INDEX;
  if (index >= n) return;
  int first[RANK], count[RANK], k[RANK];
  int rest = index;
  bool any = true;
#pragma unroll
  for (int d = RANK - 1; d >= 0; --d) {
    const int c = rest % g.size[d];
    rest /= g.size[d];
    first[d] = table[g.offsets[d] + c];
    count[d] = table[g.offsets[d] + c + 1] - first[d];
    k[d] = 0;
    any = any && count[d] > 0;
  }
  float sum = 0.f;
  while (any) {
    int place = 0;
#pragma unroll
    for (int d = 0; d < RANK; ++d) place += table[g.entries[d] + first[d] + k[d]] * g.stride[d];
    sum += dy[place];
    // The next combination, last axis fastest.
    int d = RANK - 1;
    for (; d >= 0; --d) {
      if (++k[d] < count[d]) break;
      k[d] = 0;
    }
    any = d >= 0;
  }
  dx[index] = sum;
}
