// Copies between a dense blob and a strided view of another buffer
// (core/strided_copy.hpp): dense element i, at row-major coordinates c of
// view.size, is strided element view.base + sum_d c_d * view.stride[d].
// RANK: the number of axes (1 to 8), so that the index loop unrolls.
// DATA_TYPE (common.cl's storage codes): 16-bit elements move as their bits.
// VECTOR (2 to 8; the host checks that the view allows it): each ELEM is
// that many consecutive elements, the view counted in such vectors.
#if DATA_TYPE != 0
#define SCALAR ushort
#else
#define SCALAR float
#endif
#ifdef VECTOR
#define VECTOR_OF(t, n) t##n
#define VECTOR_TYPE(t, n) VECTOR_OF(t, n)
#define ELEM VECTOR_TYPE(SCALAR, VECTOR)
#else
#define ELEM SCALAR
#endif

#ifndef RANK
#define RANK 1
#endif

typedef struct {
  int size[8];
  int stride[8];
  int base;
} strided_view;

inline int strided_place(int i, const strided_view* view) {
  int place = view->base;
#pragma unroll
  for (int d = RANK - 1; d > 0; --d) {
    const int c = i % view->size[d];
    i /= view->size[d];
    place += c * view->stride[d];
  }
  return place + i * view->stride[0];
}

// dense[i] = strided[place(i)]
__kernel void strided_gather(const int n, const strided_view view,
                             __global const ELEM* strided, __global ELEM* dense) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  dense[i] = strided[strided_place(i, &view)];
}

// strided[place(i)] = dense[i]
__kernel void strided_scatter(const int n, const strided_view view,
                              __global const ELEM* dense, __global ELEM* strided) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  strided[strided_place(i, &view)] = dense[i];
}
