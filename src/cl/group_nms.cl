// Greedy non-maximum suppression by one work-group, as Caffe SSD's
// ApplyNMSFast (and OpenCV's): the candidates in order (candidate i's box,
// xmin ymin xmax ymax, at boxes + 4 * id[i]); one is kept unless it overlaps a
// box kept before it by more than the threshold (an overlap that is not <=
// the threshold, NaN included, drops it). With eta < 1 the threshold shrinks
// by eta after each keep while it is above 0.5 (adaptive NMS). At most
// max_kept are kept (< 0: no limit). Writes the kept candidates' positions
// (i) to kept and returns their number. Every work-item of the group must
// call it with the same arguments; `flag` is a __local int of the kernel's.
//
// pixel = 0 for normalized boxes; 1 for boxes in pixels whose sides count
// both ends (width x2 - x1 + 1: Caffe SSD's unnormalized sizes, Faster
// R-CNN's).

inline float box_area(float4 b, float pixel) {
  return b.z < b.x || b.w < b.y ? 0.f : (b.z - b.x + pixel) * (b.w - b.y + pixel);
}

// Intersection over union, 0 for boxes that do not meet (Caffe SSD's
// JaccardOverlap).
inline float box_overlap(float4 a, float4 b, float pixel) {
  if (b.x > a.z || b.z < a.x || b.y > a.w || b.w < a.y) return 0.f;
  const float inter = (min(a.z, b.z) - max(a.x, b.x) + pixel) * (min(a.w, b.w) - max(a.y, b.y) + pixel);
  return inter / (box_area(a, pixel) + box_area(b, pixel) - inter);
}

int group_nms(__global const float* boxes, __global const int* id, int candidates,
              float threshold, float eta, float pixel, int max_kept, __global int* kept,
              __local int* flag) {
  const int lid = get_local_id(0), size = get_local_size(0);
  int kept_count = 0;  // the same in every work-item, as the threshold
  for (int i = 0; i < candidates && kept_count != max_kept; ++i) {
    const float4 box = vload4(id[i], boxes);
    if (lid == 0) *flag = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = lid; k < kept_count; k += size)
      if (!(box_overlap(box, vload4(id[kept[k]], boxes), pixel) <= threshold)) atomic_or(flag, 1);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (*flag == 0) {
      if (lid == 0) kept[kept_count] = i;
      ++kept_count;
      if (eta < 1.f && threshold > 0.5f) threshold *= eta;
    }
    // kept[] as lid 0 wrote it, and flag read by all before it is reset.
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  }
  return kept_count;
}
