// Caffe SSD's MultiBoxLoss (src/layers/multibox_loss.cpp) on the device:
// matching priors to the ground truth, the confidence loss of every prior,
// hard negative mining, the summed loss and its gradient. Images: N; priors:
// P; classes: C; ground-truth rows: G (AnnotatedData's image, label,
// instance, xmin, ymin, xmax, ymax, difficult).
// No contraction into fma, and division correctly rounded where the device
// can (the layer's build option): overlaps and encodings as the host's
// IEEE arithmetic gives them, so that matches and suppressions at equal or
// threshold overlaps are decided as on the CPU, on every device.
#pragma OPENCL FP_CONTRACT OFF
#include "group_nms.cl"

#define MB_GROUP 128

// PriorBoxParameter.CodeType
#define CODE_CORNER 1
#define CODE_CENTER_SIZE 2
#define CODE_CORNER_SIZE 3

// MultiBoxLossParameter's types
#define LOC_L2 0
#define CONF_SOFTMAX 0
#define MINING_NONE 0

// Whether pair (overlap a, prior pa, box ka) goes before (b, pb, kb) in Caffe
// SSD's bipartite matching: the larger overlap, then the first prior, then
// the first box (its loops' order, with a strict comparison).
inline bool match_precedes(float a, int pa, int ka, float b, int pb, int kb) {
  return a > b || (a == b && (pa < pb || (pa == pb && ka < kb)));
}

inline float4 row_box(__global const float* gt, int row) {
  return vload4(0, gt + (size_t)row * 8 + 3);
}

// A box any of whose coordinates is outside the image [0, 1].
inline bool crosses_boundary(float4 b) {
  return any(b < (float4)(0.f)) || any(b > (float4)(1.f));
}

// One work-group per image n: the image's usable ground-truth rows (label in
// [0, C) and not the background; difficult ones only with use_difficult)
// into image_gt (N x G, in row order), then the matches of the image's boxes
// (the priors or, without use_prior_for_matching, the decoded predictions;
// boxes: N x P x 4 or the priors' P x 4): first bipartite, the best
// remaining (box, row) pair at a time; then, with per_prediction, each
// unmatched box to its best row at overlap >= threshold. match (N x P): the
// matched row, -1 none, -2 ignored (crossing the boundary, with
// ignore_cross); best_overlap (N x P): each box's largest overlap (0 when
// none above 1e-6); matches (N): how many matched. taken (N x G) is scratch.
__kernel __attribute__((reqd_work_group_size(MB_GROUP, 1, 1)))
void multibox_match(int priors, int rows, int classes, int background, int use_difficult,
                    int per_prediction, float threshold, int ignore_cross,
                    int boxes_per_image, __global const float* gt,
                    __global const float* boxes, __global int* image_gt,
                    __global int* taken, __global int* match, __global float* best_overlap,
                    __global int* matches) {
  __local int count;
  __local float red_o[MB_GROUP];
  __local int red_p[MB_GROUP], red_k[MB_GROUP];
  const int n = get_group_id(0), lid = get_local_id(0);
  __global int* own = image_gt + (size_t)n * rows;
  __global int* used = taken + (size_t)n * rows;
  __global int* m = match + (size_t)n * priors;
  __global float* best = best_overlap + (size_t)n * priors;
  __global const float* b = boxes + (boxes_per_image ? (size_t)n * priors * 4 : 0);
  if (lid == 0) {
    int k = 0;
    for (int r = 0; r < rows; ++r) {
      const int item = (int)gt[(size_t)r * 8], label = (int)gt[(size_t)r * 8 + 1];
      const bool difficult = gt[(size_t)r * 8 + 7] != 0.f;
      if (item != n || label < 0 || label >= classes || label == background) continue;
      if (difficult && !use_difficult) continue;
      used[k] = 0;
      own[k++] = r;
    }
    count = k;
  }
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  const int boxes_here = count;
  for (int p = lid; p < priors; p += MB_GROUP) {
    const float4 box = vload4(p, b);
    float most = 0.f;
    int state = -1;
    if (ignore_cross && crosses_boundary(box)) {
      state = -2;
    } else {
      for (int k = 0; k < boxes_here; ++k) {
        const float o = box_overlap(box, row_box(gt, own[k]), 0.f);
        if (o > 1e-6f) most = fmax(most, o);
      }
    }
    m[p] = state;
    best[p] = most;
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
  // Bipartite: at most one pair per box row.
  for (int round = 0; round < boxes_here; ++round) {
    float o_best = -1.f;
    int p_best = INT_MAX, k_best = INT_MAX;
    for (int p = lid; p < priors; p += MB_GROUP) {
      if (m[p] != -1) continue;
      const float4 box = vload4(p, b);
      for (int k = 0; k < boxes_here; ++k) {
        if (used[k]) continue;
        const float o = box_overlap(box, row_box(gt, own[k]), 0.f);
        if (o > 1e-6f && match_precedes(o, p, k, o_best, p_best, k_best))
          o_best = o, p_best = p, k_best = k;
      }
    }
    red_o[lid] = o_best, red_p[lid] = p_best, red_k[lid] = k_best;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int span = MB_GROUP / 2; span > 0; span >>= 1) {
      if (lid < span &&
          match_precedes(red_o[lid + span], red_p[lid + span], red_k[lid + span], red_o[lid],
                         red_p[lid], red_k[lid]))
        red_o[lid] = red_o[lid + span], red_p[lid] = red_p[lid + span],
        red_k[lid] = red_k[lid + span];
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    const int p_won = red_p[0], k_won = red_k[0];
    const bool none = red_o[0] < 0.f;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (none) break;
    if (lid == 0) {
      m[p_won] = own[k_won];
      used[k_won] = 1;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
  if (per_prediction) {
    for (int p = lid; p < priors; p += MB_GROUP) {
      if (m[p] != -1) continue;
      const float4 box = vload4(p, b);
      float o_best = -1.f;
      int row = -1;
      for (int k = 0; k < boxes_here; ++k) {
        const float o = box_overlap(box, row_box(gt, own[k]), 0.f);
        if (o > 1e-6f && o >= threshold && o > o_best) o_best = o, row = own[k];
      }
      if (row >= 0) m[p] = row;
    }
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
  int mine = 0;
  for (int p = lid; p < priors; p += MB_GROUP) mine += m[p] >= 0;
  red_p[lid] = mine;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int span = MB_GROUP / 2; span > 0; span >>= 1) {
    if (lid < span) red_p[lid] += red_p[lid + span];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) matches[n] = red_p[0];
}

// The label prior i's confidence is trained toward: its row's, or the first
// object class with map_object_to_agnostic; the background when unmatched.
inline int target_label(int row, __global const float* gt, int background, int agnostic) {
  if (row < 0) return background;
  return agnostic ? background + 1 : (int)gt[(size_t)row * 8 + 1];
}

// One work-item per (image, prior): the confidence loss toward its target
// label, softmax (-log p, p at least FLT_MIN) or logistic (summed over the
// classes), as Caffe SSD's ComputeConfLoss.
__kernel void multibox_conf_loss(int count, int classes, int background, int agnostic,
                                 int logistic, __global const float* conf,
                                 __global const float* gt, __global const int* match,
                                 __global float* conf_loss) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int label = target_label(match[i], gt, background, agnostic);
  __global const float* x = conf + (size_t)i * classes;
  float loss = 0.f;
  if (logistic) {
    for (int c = 0; c < classes; ++c) {
      const float v = x[c], positive = v >= 0.f ? 1.f : 0.f;
      loss -= v * ((c == label ? 1.f : 0.f) - positive) - log(1.f + exp(v - 2.f * v * positive));
    }
  } else {
    float most = x[0];
    for (int c = 1; c < classes; ++c) most = fmax(most, x[c]);
    float sum = 0.f;
    for (int c = 0; c < classes; ++c) sum += exp(x[c] - most);
    loss = -log(fmax(exp(x[label] - most) / sum, FLT_MIN));
  }
  // +0, not -0: the mining orders losses by their bits.
  conf_loss[i] = loss > 0.f ? loss : 0.f;
}

// Negative i's key in the mining's order: larger losses first, then the
// first prior (Caffe SSD's descending sort of (loss, prior) pairs, made a
// total order). Losses are >= +0, so their bits order as the floats do.
inline ulong mining_key(float loss, int prior) {
  return ((ulong)as_uint(loss) << 32) | (ulong)(0xFFFFFFFFu - (uint)prior);
}

// One work-group per image: which priors' confidences enter the loss, and
// toward what label (role, N x P; -1: not in the loss). The matched ones
// always. With MAX_NEGATIVE, of the unmatched priors whose best overlap is
// below neg_overlap, the (int)(matches * neg_pos_ratio) with the largest
// losses (at most all of them), found by fixing their smallest key a bit at
// a time; with NONE every prior, unmatched toward the background.
__kernel __attribute__((reqd_work_group_size(MB_GROUP, 1, 1)))
void multibox_mine(int priors, int mining, float neg_pos_ratio, float neg_overlap,
                   int background, int agnostic, __global const float* gt,
                   __global const int* match, __global const float* best_overlap,
                   __global const float* conf_loss, __global const int* matches,
                   __global int* role) {
  __local int red[MB_GROUP];
  const int n = get_group_id(0), lid = get_local_id(0);
  __global const int* m = match + (size_t)n * priors;
  __global const float* o = best_overlap + (size_t)n * priors;
  __global const float* loss = conf_loss + (size_t)n * priors;
  __global int* r = role + (size_t)n * priors;
  if (mining == MINING_NONE) {
    for (int p = lid; p < priors; p += MB_GROUP)
      r[p] = target_label(m[p], gt, background, agnostic);
    return;
  }
  int mine = 0;
  for (int p = lid; p < priors; p += MB_GROUP) mine += m[p] == -1 && o[p] < neg_overlap;
  red[lid] = mine;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int span = MB_GROUP / 2; span > 0; span >>= 1) {
    if (lid < span) red[lid] += red[lid + span];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const int candidates = red[0];
  const int wanted = min((int)(matches[n] * neg_pos_ratio), candidates);
  barrier(CLK_LOCAL_MEM_FENCE);
  // The largest cut with at least `wanted` keys at or above it: keys are
  // distinct, so exactly `wanted` are.
  ulong cut = 0;
  if (wanted > 0 && wanted < candidates) {
    for (int bit = 63; bit >= 0; --bit) {
      const ulong trial = cut | ((ulong)1 << bit);
      int above = 0;
      for (int p = lid; p < priors; p += MB_GROUP)
        above += m[p] == -1 && o[p] < neg_overlap && mining_key(loss[p], p) >= trial;
      red[lid] = above;
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int span = MB_GROUP / 2; span > 0; span >>= 1) {
        if (lid < span) red[lid] += red[lid + span];
        barrier(CLK_LOCAL_MEM_FENCE);
      }
      if (red[0] >= wanted) cut = trial;
      barrier(CLK_LOCAL_MEM_FENCE);
    }
  }
  for (int p = lid; p < priors; p += MB_GROUP) {
    int label = -1;
    if (m[p] >= 0)
      label = target_label(m[p], gt, background, agnostic);
    else if (wanted > 0 && m[p] == -1 && o[p] < neg_overlap && mining_key(loss[p], p) >= cut)
      label = background;
    r[p] = label;
  }
}

// Caffe SSD's EncodeBBox: the ground-truth box as the offsets a prior's
// prediction is trained toward (divided by the prior's variances unless
// they are encoded in the target).
inline float4 encode_box(float4 prior, float4 variance, int code_type, int variance_in_target,
                         float4 box) {
  const float4 v = variance_in_target ? (float4)(1.f) : variance;
  if (code_type == CODE_CORNER) return (box - prior) / v;
  const float pw = prior.z - prior.x, ph = prior.w - prior.y;
  if (code_type == CODE_CENTER_SIZE) {
    const float pcx = (prior.x + prior.z) / 2.f, pcy = (prior.y + prior.w) / 2.f;
    const float bw = box.z - box.x, bh = box.w - box.y;
    const float bcx = (box.x + box.z) / 2.f, bcy = (box.y + box.w) / 2.f;
    return (float4)((bcx - pcx) / pw, (bcy - pcy) / ph, log(bw / pw), log(bh / ph)) / v;
  }
  return (float4)((box.x - prior.x) / pw, (box.y - prior.y) / ph, (box.z - prior.z) / pw,
                  (box.w - prior.w) / ph) / v;
}

// The matched prior i's prediction minus its target.
inline float4 loc_difference(int i, int priors, __global const float* loc,
                             __global const float* prior, __global const float* gt, int row,
                             int code_type, int variance_in_target) {
  const int p = i % priors;
  const float4 target = encode_box(vload4(p, prior), vload4(priors + p, prior), code_type,
                                   variance_in_target, row_box(gt, row));
  return vload4(i, loc) - target;
}

inline float loc_loss(float d, int l2) {
  if (l2) return 0.5f * d * d;
  const float a = fabs(d);
  return a < 1.f ? 0.5f * d * d : a - 0.5f;
}

// One work-group: the loss, (loc_weight * the matched priors' location loss
// + the chosen priors' confidence loss) / the normalizer, written to loss[0]
// and the normalizer to normalizer[0] for backward. A ground-truth row of
// an image in the batch whose label is outside [0, C) or the background is
// recorded in label_error (the pass's loss is NaN).
__kernel __attribute__((reqd_work_group_size(MB_GROUP, 1, 1)))
void multibox_total(int images, int priors, int rows, int classes, int background,
                    int code_type, int variance_in_target, int l2, float loc_weight,
                    int normalization, __global const float* loc, __global const float* prior,
                    __global const float* gt, __global const int* match,
                    __global const int* role, __global const float* conf_loss,
                    __global float* loss, __global float* normalizer,
                    __global int* label_error) {
  __local float red_loc[MB_GROUP], red_conf[MB_GROUP];
  __local int red_count[MB_GROUP], red_bad[MB_GROUP];
  const int lid = get_local_id(0), count = images * priors;
  float loc_sum = 0.f, conf_sum = 0.f;
  int matched = 0, bad = INT_MAX;
  for (int i = lid; i < count; i += MB_GROUP) {
    const int row = match[i];
    if (row >= 0) {
      const float4 d = loc_difference(i, priors, loc, prior, gt, row, code_type,
                                      variance_in_target);
      loc_sum += loc_loss(d.x, l2) + loc_loss(d.y, l2) + loc_loss(d.z, l2) + loc_loss(d.w, l2);
      ++matched;
    }
    if (role[i] >= 0) conf_sum += conf_loss[i];
  }
  for (int r = lid; r < rows; r += MB_GROUP) {
    const int item = (int)gt[(size_t)r * 8], label = (int)gt[(size_t)r * 8 + 1];
    if (item >= 0 && item < images && (label < 0 || label >= classes || label == background))
      bad = min(bad, r * 8 + 1);
  }
  red_loc[lid] = loc_sum, red_conf[lid] = conf_sum, red_count[lid] = matched, red_bad[lid] = bad;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int span = MB_GROUP / 2; span > 0; span >>= 1) {
    if (lid < span) {
      red_loc[lid] += red_loc[lid + span];
      red_conf[lid] += red_conf[lid + span];
      red_count[lid] += red_count[lid + span];
      red_bad[lid] = min(red_bad[lid], red_bad[lid + span]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid != 0) return;
  const float norm = loss_normalizer(normalization, count, red_count[0], images);
  normalizer[0] = norm;
  write_label_loss(red_bad[0], loc_weight * red_loc[0] / norm + red_conf[0] / norm, gt, loss,
                   label_error);
}

// One work-item per (image, prior): the gradient of the loss, scaled by the
// top's diff / the normalizer. Locations: loc_weight times the location
// loss's derivative where matched; confidences: softmax minus one-hot (or
// sigmoid minus the target, logistic) where the role is a label; zero
// elsewhere.
__kernel void multibox_backward(int count, int priors, int classes, int code_type,
                                int variance_in_target, int l2, int logistic, float loc_weight,
                                int want_loc, int want_conf, __global const float* loc,
                                __global const float* conf, __global const float* prior,
                                __global const float* gt, __global const int* match,
                                __global const int* role, __global const float* top_diff,
                                __global const float* normalizer, __global float* loc_diff,
                                __global float* conf_diff) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const float scale = top_diff[0] / normalizer[0];
  if (want_loc) {
    float4 g = (float4)(0.f);
    const int row = match[i];
    if (row >= 0) {
      const float4 d = loc_difference(i, priors, loc, prior, gt, row, code_type,
                                      variance_in_target);
      g = l2 ? d : (float4)(fabs(d.x) < 1.f ? d.x : sign(d.x), fabs(d.y) < 1.f ? d.y : sign(d.y),
                            fabs(d.z) < 1.f ? d.z : sign(d.z), fabs(d.w) < 1.f ? d.w : sign(d.w));
      g *= loc_weight * scale;
    }
    vstore4(g, i, loc_diff);
  }
  if (want_conf) {
    __global const float* x = conf + (size_t)i * classes;
    __global float* dx = conf_diff + (size_t)i * classes;
    const int label = role[i];
    if (label < 0) {
      for (int c = 0; c < classes; ++c) dx[c] = 0.f;
    } else if (logistic) {
      for (int c = 0; c < classes; ++c)
        dx[c] = (1.f / (1.f + exp(-x[c])) - (c == label ? 1.f : 0.f)) * scale;
    } else {
      float most = x[0];
      for (int c = 1; c < classes; ++c) most = fmax(most, x[c]);
      float sum = 0.f;
      for (int c = 0; c < classes; ++c) sum += exp(x[c] - most);
      for (int c = 0; c < classes; ++c)
        dx[c] = (exp(x[c] - most) / sum - (c == label ? 1.f : 0.f)) * scale;
    }
  }
}
