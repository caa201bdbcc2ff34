// NonZero (src/layers/non_zero.cpp). non_zero_compact: one work-group walks
// the input in chunks of its size, and writes the flat index of every
// element that is not 0 (NaN counts as not 0) in order, then the count.
// non_zero_coordinates: one work-item per found element writes its
// coordinates, axis d in row d of the rank x count top.

__kernel void non_zero_compact(const int n, __global const float* x, __global int* found,
                               __global int* count, __local int* scan) {
  const int lid = get_local_id(0), size = get_local_size(0);
  int base = 0;  // the same in every work-item
  for (int start = 0; start < n; start += size) {
    const int i = start + lid;
    const int flag = i < n && x[i] != 0.f;
    scan[lid] = flag;
    barrier(CLK_LOCAL_MEM_FENCE);
    // Inclusive prefix sum (Hillis-Steele).
    for (int offset = 1; offset < size; offset <<= 1) {
      const int add = lid >= offset ? scan[lid - offset] : 0;
      barrier(CLK_LOCAL_MEM_FENCE);
      scan[lid] += add;
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (flag) found[base + scan[lid] - 1] = i;
    base += scan[size - 1];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) *count = base;
}

__kernel void non_zero_coordinates(const int count, const int rank, __global const int* dims,
                                   __global const int* found, __global float* y) {
  const int k = GLOBAL_INDEX;
  if (k >= count) return;
  int rest = found[k];
  for (int d = rank - 1; d >= 0; --d) {
    y[d * count + k] = (float)(rest % dims[d]);
    rest /= dims[d];
  }
}
