// Caffe SSD's DetectionOutput (src/layers/detection_output.cpp): decoding,
// per-class selection and NMS, and each image's keep_top_k, on the device.
// No contraction into fma, and division correctly rounded where the device
// can (the layer's build option): overlaps and encodings as the host's
// IEEE arithmetic gives them, so that matches and suppressions at equal or
// threshold overlaps are decided as on the CPU, on every device.
#pragma OPENCL FP_CONTRACT OFF
#include "group_sort.cl"
#include "group_nms.cl"

// PriorBoxParameter.CodeType
#define CODE_CORNER 1
#define CODE_CENTER_SIZE 2
#define CODE_CORNER_SIZE 3

// One work-item per (image n, location class l, prior p): the prior's box
// moved by its prediction (loc: N x P x L x 4; priors: P x 4 boxes, then P x
// 4 variances) into boxes (N x L x P x 4), as Caffe SSD's DecodeBBox writes
// it (the same operations in the same order).
__kernel void detection_decode(int count, int priors, int loc_classes, int code_type,
                               int variance_in_target, __global const float* loc,
                               __global const float* prior, __global float* boxes) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int p = i % priors, l = (i / priors) % loc_classes, n = i / (priors * loc_classes);
  const float4 d = vload4(((size_t)n * priors + p) * loc_classes + l, loc);
  const float4 b = vload4(p, prior);
  const float4 v = variance_in_target ? (float4)(1.f) : vload4(p, prior + 4 * (size_t)priors);
  const float width = b.z - b.x, height = b.w - b.y;
  float4 out;
  if (code_type == CODE_CORNER) {
    out = variance_in_target ? b + d : (float4)(b.x + v.x * d.x, b.y + v.y * d.y, b.z + v.z * d.z, b.w + v.w * d.w);
  } else if (code_type == CODE_CENTER_SIZE) {
    const float center_x = (b.x + b.z) / 2.f, center_y = (b.y + b.w) / 2.f;
    float cx, cy, w, h;
    if (variance_in_target) {
      cx = d.x * width + center_x;
      cy = d.y * height + center_y;
      w = exp(d.z) * width;
      h = exp(d.w) * height;
    } else {
      cx = v.x * d.x * width + center_x;
      cy = v.y * d.y * height + center_y;
      w = exp(v.z * d.z) * width;
      h = exp(v.w * d.w) * height;
    }
    out = (float4)(cx - w / 2.f, cy - h / 2.f, cx + w / 2.f, cy + h / 2.f);
  } else {  // CODE_CORNER_SIZE
    out = variance_in_target
              ? (float4)(b.x + d.x * width, b.y + d.y * height, b.z + d.z * width, b.w + d.w * height)
              : (float4)(b.x + v.x * d.x * width, b.y + v.y * d.y * height, b.z + v.z * d.z * width,
                         b.w + v.w * d.w * height);
  }
  vstore4(out, i, boxes);
}

// One work-group per (class c, image n): the priors scoring above the
// threshold, best first, the first top_k of them through NMS. Leaves the
// kept ones' scores and priors, best first, in kept_score / kept_prior (N x
// C x kept_capacity) and their number in kept_count (N x C). sort_score /
// sort_prior: N x C x sort_capacity (next_pow2(priors)) of scratch.
__kernel void detection_nms(int classes, int priors, int loc_classes, int background,
                            float confidence_threshold, int top_k, float nms_threshold, float eta,
                            int sort_capacity, int kept_capacity, __global const float* conf,
                            __global const float* boxes, __global float* sort_score,
                            __global int* sort_prior, __global float* kept_score,
                            __global int* kept_prior, __global int* kept_count) {
  __local int found, flag;
  const int c = get_group_id(0), n = get_group_id(1), lid = get_local_id(0);
  const size_t nc = (size_t)n * classes + c;
  if (c == background) {
    if (lid == 0) kept_count[nc] = 0;
    return;
  }
  __global float* score = sort_score + nc * sort_capacity;
  __global int* prior = sort_prior + nc * sort_capacity;
  if (lid == 0) found = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int p = lid; p < priors; p += get_local_size(0)) {
    const float s = conf[((size_t)n * priors + p) * classes + c];
    if (s > confidence_threshold) {
      const int at = atomic_inc(&found);
      score[at] = s;
      prior[at] = p;
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  const int candidates = found;
  group_sort_pairs(score, prior, candidates);
  __global const float* class_boxes =
      boxes + ((size_t)n * loc_classes + (loc_classes == 1 ? 0 : c)) * priors * 4;
  __global int* kept = kept_prior + nc * kept_capacity;
  const int count = group_nms(class_boxes, prior, top_k >= 0 ? min(candidates, top_k) : candidates,
                              nms_threshold, eta, 0.f, -1, kept, &flag);
  // Positions into the sorted list, to scores and priors (kept[k] >= k: each
  // work-item reads and writes its own slots).
  for (int k = lid; k < count; k += get_local_size(0)) {
    const int at = kept[k];
    kept_score[nc * kept_capacity + k] = score[at];
    kept[k] = prior[at];
  }
  if (lid == 0) kept_count[nc] = count;
}

// One work-group per image n: keep_top_k over all classes (when more are
// kept), then the image's rows (n, label, score, box) into rows (N x
// row_capacity x 7), by label, best first; image_rows[n] = their number.
// class_offset (N x (C + 1)), selected (N x C) and sort_score / sort_id (N x
// top_capacity, next_pow2 of C x kept_capacity) are scratch.
__kernel void detection_gather(int classes, int priors, int loc_classes, int keep_top_k,
                               int kept_capacity, int row_capacity, int top_capacity,
                               __global const float* kept_score, __global const int* kept_prior,
                               __global const int* kept_count, __global const float* boxes,
                               __global int* class_offset, __global int* selected,
                               __global float* sort_score, __global int* sort_id,
                               __global float* rows, __global int* image_rows) {
  const int n = get_group_id(0), lid = get_local_id(0), size = get_local_size(0);
  __global const int* count = kept_count + (size_t)n * classes;
  __global const float* scores = kept_score + (size_t)n * classes * kept_capacity;
  __global const int* kept = kept_prior + (size_t)n * classes * kept_capacity;
  __global int* offset = class_offset + (size_t)n * (classes + 1);
  __global int* chosen = selected + (size_t)n * classes;
  if (lid == 0) {
    int total = 0;
    for (int c = 0; c < classes; ++c) offset[c] = total, total += count[c];
    offset[classes] = total;
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
  const int total = offset[classes];
  if (keep_top_k >= 0 && total > keep_top_k) {
    // The image's best keep_top_k by (score, label, rank): within a label
    // they are a prefix of its kept list, which is best first.
    __global float* s = sort_score + (size_t)n * top_capacity;
    __global int* d = sort_id + (size_t)n * top_capacity;
    for (int c = 0; c < classes; ++c)
      for (int r = lid; r < count[c]; r += size) {
        s[offset[c] + r] = scores[c * kept_capacity + r];
        d[offset[c] + r] = c * kept_capacity + r;
      }
    barrier(CLK_GLOBAL_MEM_FENCE);
    group_sort_pairs(s, d, total);
    const float cut_score = keep_top_k > 0 ? s[keep_top_k - 1] : INFINITY;
    const int cut_id = keep_top_k > 0 ? d[keep_top_k - 1] : -1;
    for (int c = lid; c < classes; c += size) {
      int r = 0;
      while (r < count[c] &&
             !pair_precedes(cut_score, cut_id, scores[c * kept_capacity + r], c * kept_capacity + r))
        ++r;
      chosen[c] = r;
    }
  } else {
    for (int c = lid; c < classes; c += size) chosen[c] = count[c];
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
  if (lid == 0) {
    int rows_so_far = 0;
    for (int c = 0; c < classes; ++c) offset[c] = rows_so_far, rows_so_far += chosen[c];
    image_rows[n] = rows_so_far;
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
  for (int c = 0; c < classes; ++c)
    for (int r = lid; r < chosen[c]; r += size) {
      __global float* row = rows + ((size_t)n * row_capacity + offset[c] + r) * 7;
      const int p = kept[c * kept_capacity + r];
      const float4 box =
          vload4(((size_t)n * loc_classes + (loc_classes == 1 ? 0 : c)) * priors + p, boxes);
      row[0] = n;
      row[1] = c;
      row[2] = scores[c * kept_capacity + r];
      vstore4(box, 0, row + 3);
    }
}
