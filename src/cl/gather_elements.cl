// GatherElements (torch.gather): the top, with the index blob's shape, holds
// x[c with c[axis] = index[c]] for each of its coordinates c. `geometry`
// holds, for each of the `rank` axes, the top's extent, then the data's.
// An index outside [-extent, extent) of the data's axis yields NaN (visible
// downstream, never silently plausible) and passes no gradient.

#define TOP_EXTENT(d) geometry[d]
#define DATA_EXTENT(d) geometry[rank + (d)]

__kernel void gather_elements_forward(const int n, const int rank, const int axis,
                                      __global const int* geometry,
                                      __global const float* index, __global const float* x,
                                      __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const int data_axis = DATA_EXTENT(axis);
  int k = (int)index[i];
  if (k < 0) k += data_axis;
  if (k < 0 || k >= data_axis) {
    y[i] = NAN;
    return;
  }
  // The top's coordinates, last axis first; the data's offset from them.
  int rest = i, offset = 0, stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    const int c = rest % TOP_EXTENT(d);
    rest /= TOP_EXTENT(d);
    offset += (d == axis ? k : c) * stride;
    stride *= DATA_EXTENT(d);
  }
  y[i] = x[offset];
}

// dx at data coordinates c: the sum of dy over the top elements with c's
// coordinates off the axis whose index names c[axis] (one work-item per
// data element scans the axis: a gather, no atomics, a fixed order).
__kernel void gather_elements_backward(const int n, const int rank, const int axis,
                                       __global const int* geometry,
                                       __global const float* index, __global const float* dy,
                                       __global float* dx) {
  const int j = GLOBAL_INDEX;
  if (j >= n) return;
  const int data_axis = DATA_EXTENT(axis);
  int rest = j, top_offset = 0, stride = 1, k = 0, axis_stride = 1;
  bool inside = true;
  for (int d = rank - 1; d >= 0; --d) {
    const int c = rest % DATA_EXTENT(d);
    rest /= DATA_EXTENT(d);
    if (d == axis) {
      k = c;
      axis_stride = stride;
    } else {
      inside = inside && c < TOP_EXTENT(d);
      top_offset += c * stride;
    }
    stride *= TOP_EXTENT(d);
  }
  float sum = 0.f;
  if (inside)
    for (int t = 0; t < TOP_EXTENT(axis); ++t) {
      const int i = top_offset + t * axis_stride;
      int index_k = (int)index[i];
      if (index_k < 0) index_k += data_axis;
      if (index_k == k) sum += dy[i];
    }
  dx[j] = sum;
}
