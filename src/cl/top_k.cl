// TopK (src/layers/top_k.cpp): one work-group per slice (the axis at fixed
// outer and inner coordinates) copies the slice's values as sort keys
// (negated for the smallest), sorts them with group_sort.cl (keys falling,
// equal keys by index: ONNX's order for ties) and writes the first k.
#include "group_sort.cl"

// The kernel's body for keys in global or local memory.
#define TOP_K_SELECT(SPACE, FENCE, SORT)                                 \
  const int slice = get_group_id(0), lid = get_local_id(0), size = get_local_size(0); \
  const int outer = slice / inner, in = slice % inner;                   \
  for (int j = lid; j < n; j += size) {                                  \
    const float v = x[((size_t)outer * n + j) * inner + in];             \
    slice_key[j] = largest ? v : -v;                                     \
    slice_id[j] = j;                                                     \
  }                                                                      \
  barrier(FENCE);                                                        \
  SORT(slice_key, slice_id, n);                                          \
  for (int j = lid; j < k; j += size) {                                  \
    const size_t at = ((size_t)outer * k + j) * inner + in;              \
    values[at] = largest ? slice_key[j] : -slice_key[j];                 \
    indices[at] = (float)slice_id[j];                                    \
  }

// Slices too long for local memory: scratch of `capacity` per slice.
__kernel void top_k_select(const int n, const int inner, const int k, const int largest,
                           const int capacity, __global const float* x, __global float* key,
                           __global int* id, __global float* values, __global float* indices) {
  __global float* slice_key = key + (size_t)get_group_id(0) * capacity;
  __global int* slice_id = id + (size_t)get_group_id(0) * capacity;
  TOP_K_SELECT(__global, CLK_GLOBAL_MEM_FENCE, group_sort_pairs)
}

// Slices that fit: the sort in local memory (next_pow2(n) pairs).
__kernel void top_k_select_local(const int n, const int inner, const int k, const int largest,
                                 __global const float* x, __local float* slice_key,
                                 __local int* slice_id, __global float* values,
                                 __global float* indices) {
  TOP_K_SELECT(__local, CLK_LOCAL_MEM_FENCE, group_sort_pairs_local)
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

// Long slices, small k: each work-group sorts one chunk of a slice in local
// memory and keeps its best k pairs (the padding pairs, -inf and the largest
// index, where the chunk has fewer); the best k of a slice are the best k
// of its chunks' best. Reads the slice from x (from_x: keys as in
// top_k_select) or from the pairs of the round before, `length` per slice.
__kernel void top_k_chunks(const int length, const int inner, const int k, const int largest,
                           const int from_x, __global const float* x,
                           __global const float* in_key, __global const int* in_id,
                           const int chunk, __global float* out_key, __global int* out_id,
                           __local float* key, __local int* id) {
  const int chunks = (length + chunk - 1) / chunk;
  const int slice = get_group_id(0) / chunks, c = get_group_id(0) % chunks;
  const int lid = get_local_id(0), size = get_local_size(0);
  const int outer = slice / inner, in = slice % inner;
  const int begin = c * chunk, count = min(chunk, length - begin);
  for (int j = lid; j < count; j += size) {
    if (from_x) {
      const float v = x[((size_t)outer * length + begin + j) * inner + in];
      key[j] = largest ? v : -v;
      id[j] = begin + j;
    } else {
      key[j] = in_key[(size_t)slice * length + begin + j];
      id[j] = in_id[(size_t)slice * length + begin + j];
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  group_sort_pairs_local(key, id, count);
  for (int j = lid; j < k; j += size) {
    const size_t at = ((size_t)slice * chunks + c) * k + j;
    out_key[at] = j < count ? key[j] : -INFINITY;
    out_id[at] = j < count ? id[j] : INT_MAX;
  }
}

// The last round: a slice's `length` pairs sorted in local memory, the best
// k written out as values and indices.
__kernel void top_k_pairs_select(const int length, const int inner, const int k,
                                 const int largest, __global const float* in_key,
                                 __global const int* in_id, __global float* values,
                                 __global float* indices, __local float* key, __local int* id) {
  const int slice = get_group_id(0), lid = get_local_id(0), size = get_local_size(0);
  const int outer = slice / inner, in = slice % inner;
  for (int j = lid; j < length; j += size) {
    key[j] = in_key[(size_t)slice * length + j];
    id[j] = in_id[(size_t)slice * length + j];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  group_sort_pairs_local(key, id, length);
  for (int j = lid; j < k; j += size) {
    const size_t at = ((size_t)outer * k + j) * inner + in;
    values[at] = largest ? key[j] : -key[j];
    indices[at] = (float)id[j];
  }
}
