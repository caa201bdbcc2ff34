// Crop: top element i <-> bottom element at the same multi-index shifted by
// the per-axis offsets. `layout` holds 3 * num_axes ints: the top's shape,
// the bottom's strides (in floats) and the offsets (0 on uncropped axes).

inline int crop_bottom_index(int i, const int num_axes, __global const int* layout) {
  int index = 0;
  for (int d = num_axes - 1; d >= 0; --d) {
    const int extent = layout[d];
    const int q = i / extent;
    index += (i - q * extent + layout[2 * num_axes + d]) * layout[num_axes + d];
    i = q;
  }
  return index;
}

__kernel void crop_forward(const int count, const int num_axes,
                           __global const int* layout, __global const float* x,
                           __global float* y) {
  const int i = get_global_id(0);
  if (i >= count) return;
  y[i] = x[crop_bottom_index(i, num_axes, layout)];
}

// Scatters the top diff into a bottom diff zeroed beforehand; each top
// element has its own bottom element, so there are no races.
__kernel void crop_backward(const int count, const int num_axes,
                            __global const int* layout, __global const float* dy,
                            __global float* dx) {
  const int i = get_global_id(0);
  if (i >= count) return;
  dx[crop_bottom_index(i, num_axes, layout)] = dy[i];
}
