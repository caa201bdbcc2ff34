// Reduction over the trailing axes: each of `rows` rows of `dim` floats
// becomes one value. REDUCTION_OP: 1 SUM (also MEAN, via coeff), 2 ASUM,
// 3 SUMSQ (Caffe's ReductionParameter numbering).

#if REDUCTION_OP == 2
#define TERM(v) fabs(v)
#elif REDUCTION_OP == 3
#define TERM(v) ((v) * (v))
#else
#define TERM(v) (v)
#endif

// One work-group per row: its work-items stride over the row, then combine
// their partial sums in local memory (the group size is a power of two; a
// group of 1 sums a short row serially).
__kernel void reduction_forward(const int dim, const float coeff, __global const float* x,
                                __global float* y, __local float* partial) {
  const int row = get_group_id(0);
  const int lid = get_local_id(0);
  const int lsize = get_local_size(0);
  __global const float* xr = x + (size_t)row * dim;
  float acc = 0.f;
  for (int j = lid; j < dim; j += lsize) acc += TERM(xr[j]);
  partial[lid] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = lsize / 2; s > 0; s >>= 1) {
    if (lid < s) partial[lid] += partial[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) y[row] = coeff * partial[0];
}

// dx = coeff * dy[row] * d(term)/dx: 1 for SUM/MEAN, sign(x) for ASUM (0 at
// 0, as Caffe), 2x for SUMSQ.
__kernel void reduction_backward(const int n, const int dim, const float coeff,
                                 __global const float* x, __global const float* dy,
                                 __global float* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const float g = coeff * dy[i / dim];
#if REDUCTION_OP == 2
  dx[i] = sign(x[i]) * g;
#elif REDUCTION_OP == 3
  dx[i] = 2.f * x[i] * g;
#else
  dx[i] = g;
#endif
}
