// Faster R-CNN's region proposals (src/layers/proposal.cpp), one work-group
// per image: every anchor at every position moved by its deltas, clipped,
// filtered by size; the best pre_nms_topn through NMS; the first
// post_nms_topn kept become the image's regions.
#include "group_sort.cl"
#include "group_nms.cl"

// scores: N x 2A x H x W (the foreground probabilities are channels A..2A-1);
// deltas: N x 4A x H x W; anchors: A x 4 at position (0, 0); im_info: the
// image's height, width and scale (one row per image, or one for all:
// info_stride 0). Scratch: boxes (N x H*W*A x 4), sort_score / sort_id (N x
// sort_capacity), kept_scratch (N x row_capacity). Out: rows (N x
// row_capacity x 5: image, x1, y1, x2, y2), row_scores (N x row_capacity),
// image_rows[n] (the image's count).
__kernel void proposal_regions(int anchors_per_cell, int height, int width, float feat_stride,
                               float min_size, int pre_nms_topn, int post_nms_topn,
                               float nms_thresh, int sort_capacity, int row_capacity,
                               int info_stride, __global const float* scores,
                               __global const float* deltas, __global const float* anchors,
                               __global const float* im_info, __global float* boxes,
                               __global float* sort_score, __global int* sort_id,
                               __global int* kept_scratch, __global float* rows,
                               __global float* row_scores, __global int* image_rows) {
  __local int found, flag;
  const int n = get_group_id(0), lid = get_local_id(0), size = get_local_size(0);
  const int A = anchors_per_cell, plane = height * width, count = plane * A;
  __global const float* info = im_info + (size_t)n * info_stride;
  const float im_h = info[0], im_w = info[1], least = min_size * info[2];
  __global float* image_boxes = boxes + (size_t)n * count * 4;
  __global float* s = sort_score + (size_t)n * sort_capacity;
  __global int* d = sort_id + (size_t)n * sort_capacity;
  if (lid == 0) found = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  // Proposal i = (h * W + w) * A + a, py-faster-rcnn's order.
  for (int i = lid; i < count; i += size) {
    const int a = i % A, cell = i / A, h = cell / width, w = cell % width;
    const float4 shift = (float4)(w * feat_stride, h * feat_stride, w * feat_stride, h * feat_stride);
    const float4 anchor = vload4(a, anchors) + shift;
    __global const float* delta = deltas + ((size_t)n * 4 * A + 4 * a) * plane + cell;
    // bbox_transform_inv: sides count both end pixels.
    const float aw = anchor.z - anchor.x + 1.f, ah = anchor.w - anchor.y + 1.f;
    const float cx = anchor.x + 0.5f * aw, cy = anchor.y + 0.5f * ah;
    const float pcx = delta[0] * aw + cx, pcy = delta[plane] * ah + cy;
    const float pw = exp(delta[2 * plane]) * aw, ph = exp(delta[3 * plane]) * ah;
    // clip_boxes, then _filter_boxes.
    const float4 box = (float4)(fmax(fmin(pcx - 0.5f * pw, im_w - 1.f), 0.f),
                                fmax(fmin(pcy - 0.5f * ph, im_h - 1.f), 0.f),
                                fmax(fmin(pcx + 0.5f * pw, im_w - 1.f), 0.f),
                                fmax(fmin(pcy + 0.5f * ph, im_h - 1.f), 0.f));
    vstore4(box, i, image_boxes);
    if (box.z - box.x + 1.f >= least && box.w - box.y + 1.f >= least) {
      const int at = atomic_inc(&found);
      s[at] = scores[((size_t)n * 2 * A + A + a) * plane + cell];
      d[at] = i;
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  const int candidates = found;
  group_sort_pairs(s, d, candidates);
  __global int* kept = kept_scratch + (size_t)n * row_capacity;
  const int taken = pre_nms_topn > 0 ? min(candidates, pre_nms_topn) : candidates;
  const int count_kept = group_nms(image_boxes, d, taken, nms_thresh, 1.f, 1.f,
                                   post_nms_topn > 0 ? post_nms_topn : -1, kept, &flag);
  for (int k = lid; k < count_kept; k += size) {
    const int at = kept[k];  // a position in the sorted list
    __global float* row = rows + ((size_t)n * row_capacity + k) * 5;
    row[0] = n;
    vstore4(vload4(d[at], image_boxes), 0, row + 1);
    row_scores[(size_t)n * row_capacity + k] = s[at];
  }
  if (lid == 0) image_rows[n] = count_kept;
}
