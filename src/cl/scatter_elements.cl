// ScatterElements (src/layers/scatter_elements.cpp): `geometry` holds, per
// axis, the updates' extent, then the data's (as gather_elements.cl's).
// An index outside [-extent, extent) of the data's axis writes nothing.

#define UPDATE_EXTENT(d) geometry[d]
#define DATA_EXTENT(d) geometry[rank + (d)]

// The data offset update i goes to, or -1.
inline int scatter_target(int i, int rank, int axis, __global const int* geometry,
                          __global const float* index) {
  const int data_axis = DATA_EXTENT(axis);
  int k = (int)index[i];
  if (k < 0) k += data_axis;
  if (k < 0 || k >= data_axis) return -1;
  int rest = i, offset = 0, stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    const int c = rest % UPDATE_EXTENT(d);
    rest /= UPDATE_EXTENT(d);
    offset += (d == axis ? k : c) * stride;
    stride *= DATA_EXTENT(d);
  }
  return offset;
}

// y already holds the data: each update overwrites its target.
__kernel void scatter_elements_forward(const int n, const int rank, const int axis,
                                       __global const int* geometry,
                                       __global const float* index,
                                       __global const float* updates, __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const int target = scatter_target(i, rank, axis, geometry, index);
  if (target >= 0) y[target] = updates[i];
}

// d_updates[i] = dy at its target (0 when out of range); with
// zero_targets, d_data (a copy of dy) gets 0 where an update went.
__kernel void scatter_elements_backward(const int n, const int rank, const int axis,
                                        __global const int* geometry,
                                        __global const float* index, __global const float* dy,
                                        __global float* d_updates, const int zero_targets,
                                        __global float* d_data) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const int target = scatter_target(i, rank, axis, geometry, index);
  if (d_updates) d_updates[i] = target >= 0 ? dy[target] : 0.f;
  if (zero_targets && target >= 0) d_data[target] = 0.f;
}
