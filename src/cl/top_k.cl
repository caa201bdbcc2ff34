// TopK (src/layers/top_k.cpp): one work-group per slice (the axis at fixed
// outer and inner coordinates) copies the slice's values as sort keys
// (negated for the smallest), sorts them with group_sort.cl (keys falling,
// equal keys by index: ONNX's order for ties) and writes the first k.
#include "group_sort.cl"

__kernel void top_k_select(const int n, const int inner, const int k, const int largest,
                           const int capacity, __global const float* x, __global float* key,
                           __global int* id, __global float* values, __global float* indices) {
  const int slice = get_group_id(0), lid = get_local_id(0), size = get_local_size(0);
  const int outer = slice / inner, in = slice % inner;
  __global float* slice_key = key + (size_t)slice * capacity;
  __global int* slice_id = id + (size_t)slice * capacity;
  for (int j = lid; j < n; j += size) {
    const float v = x[((size_t)outer * n + j) * inner + in];
    slice_key[j] = largest ? v : -v;
    slice_id[j] = j;
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
  group_sort_pairs(slice_key, slice_id, n);
  for (int j = lid; j < k; j += size) {
    const size_t at = ((size_t)outer * k + j) * inner + in;
    values[at] = largest ? slice_key[j] : -slice_key[j];
    indices[at] = (float)slice_id[j];
  }
}

// dx is zero but at the picked elements, which are distinct within a slice:
// one work-item per top element writes its own.
__kernel void top_k_backward(const int count, const int n, const int inner, const int k,
                             __global const float* indices, __global const float* dy,
                             __global float* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  const int in = i % inner, outer = i / inner / k;
  dx[((size_t)outer * n + (int)indices[i]) * inner + in] = dy[i];
}
