// NonMaxSuppression (src/layers/non_max_suppression.cpp), ONNX's semantics
// in torchvision's arithmetic: a box is dropped when inter / (area_kept +
// area_box - inter) > threshold, in IEEE float (no contraction) as PyTorch's
// CPU kernel computes it; boxes that do not meet, and empty ones, overlap 0.
#pragma OPENCL FP_CONTRACT OFF
#include "group_sort.cl"

// Box i as (min0, min1, max0, max1): corners in either diagonal order, or
// (centre0, centre1, extent0, extent1) where `center`.
inline float4 nms_box(__global const float* boxes, int i, int center) {
  const float4 b = vload4(i, boxes);
  if (center)
    return (float4)(b.x - b.z / 2.f, b.y - b.w / 2.f, b.x + b.z / 2.f, b.y + b.w / 2.f);
  return (float4)(fmin(b.x, b.z), fmin(b.y, b.w), fmax(b.x, b.z), fmax(b.y, b.w));
}

inline float nms_area(float4 b) { return (b.z - b.x) * (b.w - b.y); }

inline bool nms_suppresses(float4 kept, float4 box, float threshold) {
  const float w = fmax(0.f, fmin(kept.z, box.z) - fmax(kept.x, box.x));
  const float h = fmax(0.f, fmin(kept.w, box.w) - fmax(kept.y, box.y));
  const float inter = w * h;
  // Boxes that do not meet (most pairs: torchvision moves each class's boxes
  // apart) skip the division, which is slow where it is correctly rounded;
  // 0 / union is 0 (0 / 0 is NaN: neither exceeds a threshold >= 0).
  if (inter == 0.f && threshold >= 0.f) return false;
  return inter / (nms_area(kept) + nms_area(box) - inter) > threshold;
}

// One work-group per (batch entry b, class c): the candidates (score above
// the threshold, where there is one) sorted by falling score, ties by box
// index; then greedy suppression a block of work-group size at a time: each
// work-item tests its candidate against the boxes kept before the block and
// against the block's earlier candidates (a row of bits), and work-item 0
// settles the block in order from those bits. Writes the kept boxes'
// indices to kept[g * max_kept ...] and their number to kept_count[g].
// Local memory: alive[size], block_box[size], bits[size * words] with words =
// size / 32 (rounded up), shared_count[1].
__kernel void nms_select(const int classes, const int n, const int center,
                         const float iou_threshold, const int has_score_threshold,
                         const float score_threshold, const int max_kept, const int capacity,
                         __global const float* boxes, __global const float* scores,
                         __global float* key, __global int* id, __global float* kept_box,
                         __global int* kept, __global int* kept_count, __local int* alive,
                         __local float4* block_box, __local uint* bits,
                         __local int* shared_count) {
  const int g = get_group_id(0), lid = get_local_id(0), size = get_local_size(0);
  const int words = (size + 31) / 32;
  const int b = g / classes;
  __global const float* box_of = boxes + (size_t)b * n * 4;
  __global const float* score_of = scores + (size_t)g * n;
  __global float* g_key = key + (size_t)g * capacity;
  __global int* g_id = id + (size_t)g * capacity;
  __global float* g_kept_box = kept_box + (size_t)g * 4 * max(max_kept, 1);
  __global int* g_kept = kept + (size_t)g * max(max_kept, 1);
  if (lid == 0) *shared_count = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  // Candidates first; the others sort last (-inf, the largest index).
  for (int j = lid; j < n; j += size) {
    const float s = score_of[j];
    const bool candidate = !has_score_threshold || s > score_threshold;
    g_key[j] = candidate ? s : -INFINITY;
    g_id[j] = candidate ? j : INT_MAX;
    if (candidate) atomic_inc(shared_count);
  }
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  const int candidates = *shared_count;
  group_sort_pairs(g_key, g_id, n);
  int kept_n = 0;  // the same in every work-item
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int start = 0; start < candidates && kept_n < max_kept; start += size) {
    const int i = start + lid;
    int live = i < candidates;
    float4 box = (float4)(0.f);
    if (live) {
      box = nms_box(box_of, g_id[i], center);
      for (int k = 0; k < kept_n && live; ++k)
        if (nms_suppresses(vload4(k, g_kept_box), box, iou_threshold)) live = 0;
    }
    alive[lid] = live;
    block_box[lid] = box;
    barrier(CLK_LOCAL_MEM_FENCE);
    // Row lid: bit j set where the block's earlier candidate j would drop it.
    for (int w = 0; w < words; ++w) {
      uint row = 0;
      for (int j = w * 32; j < min(lid, (w + 1) * 32); ++j)
        if (live && alive[j] && nms_suppresses(block_box[j], box, iou_threshold)) row |= 1u << (j - w * 32);
      bits[lid * words + w] = row;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
      // Work-item 0 settles the block: kept ones accumulate in `chosen`.
      uint chosen[8];
      for (int w = 0; w < words; ++w) chosen[w] = 0;
      int count = kept_n;
      const int block = min(size, candidates - start);
      for (int t = 0; t < block && count < max_kept; ++t) {
        if (!alive[t]) continue;
        bool keep = true;
        for (int w = 0; w < words && keep; ++w) keep = (bits[t * words + w] & chosen[w]) == 0;
        if (!keep) continue;
        chosen[t / 32] |= 1u << (t % 32);
        vstore4(block_box[t], count, g_kept_box);
        g_kept[count++] = g_id[start + t];
      }
      *shared_count = count;
    }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    kept_n = *shared_count;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) kept_count[g] = kept_n;
}

// Work-group g writes its kept boxes as rows (b, c, index) from row
// offset[g] of the S x 3 top.
__kernel void nms_rows(const int classes, const int max_kept, __global const int* kept,
                       __global const int* kept_count, __global const int* offset,
                       __global float* rows) {
  const int g = get_group_id(0), lid = get_local_id(0), size = get_local_size(0);
  __global const int* g_kept = kept + (size_t)g * max(max_kept, 1);
  for (int k = lid; k < kept_count[g]; k += size) {
    __global float* row = rows + (size_t)(offset[g] + k) * 3;
    row[0] = (float)(g / classes);
    row[1] = (float)(g % classes);
    row[2] = (float)g_kept[k];
  }
}
