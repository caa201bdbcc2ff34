// Gather (src/layers/gather.cpp): the data seen as outer x axis x inner, the
// top as outer x indices x inner. An index outside [-axis, axis) yields NaN
// and passes no gradient.

inline int gather_index(float value, int axis_size) {
  int k = (int)value;
  if (k < 0) k += axis_size;
  return k >= 0 && k < axis_size ? k : -1;
}

__kernel void gather_forward(const int count, const int axis_size, const int picks,
                             const int inner, __global const float* index,
                             __global const float* x, __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  const int in = i % inner, j = i / inner % picks, outer = i / inner / picks;
  const int k = gather_index(index[j], axis_size);
  y[i] = k < 0 ? NAN : x[((size_t)outer * axis_size + k) * inner + in];
}

// dx at (outer, a, inner): the sum of dy over the picks of a, in pick order
// (one work-item per data element: no atomics, a fixed order).
__kernel void gather_backward(const int count, const int axis_size, const int picks,
                              const int inner, __global const float* index,
                              __global const float* dy, __global float* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  const int in = i % inner, a = i / inner % axis_size, outer = i / inner / axis_size;
  float sum = 0.f;
  for (int j = 0; j < picks; ++j)
    if (gather_index(index[j], axis_size) == a) sum += dy[((size_t)outer * picks + j) * inner + in];
  dx[i] = sum;
}
