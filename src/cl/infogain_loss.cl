// Infogain loss (Caffe's InfogainLoss, master semantics) of softmax
// probabilities prob (outer x L x inner) and labels (outer x inner), with the
// L x L matrix H: loss = -1/normalizer sum over positions with label l of
// sum_j H[l, j] log(max(prob[j], 1e-20)). DATA_TYPE (common.cl; float by
// default): how prob and the bottom gradient are stored; the labels, H and
// the loss are float.

#include "label_loss_group.cl"
#define LOG_THRESHOLD 1e-20f  // Caffe's kLOG_THRESHOLD

// One work-group writes the 0-d loss and the normalizer for backward. A
// label outside [0, L) (and not ignored) makes the loss NaN and is recorded
// in label_error = {position, label bits} unless one is recorded already.
__kernel __attribute__((reqd_work_group_size(LOSS_GROUP, 1, 1)))
void infogain_loss_forward(const int outer, const int num_labels, const int inner,
                           __global const DATA_ELEM* prob, __global const float* label,
                           __global const float* H, const int has_ignore_label,
                           const int ignore_label, const int normalization,
                           __global float* loss, __global float* normalizer,
                           __global int* label_error) {
  __local float loss_part[LOSS_GROUP];
  __local int valid_part[LOSS_GROUP];
  __local int bad_part[LOSS_GROUP];
  const int lid = get_local_id(0);
  const int positions = outer * inner;
  float sum = 0.f;
  int valid = 0;
  int bad = INT_MAX;
  for (int i = lid; i < positions; i += LOSS_GROUP) {
    const int l = (int)label[i];
    if (has_ignore_label && l == ignore_label) continue;
    if (l < 0 || l >= num_labels) {
      bad = min(bad, i);
      continue;
    }
    const int o = i / inner, s = i - o * inner;
    const size_t p = (size_t)o * num_labels * inner + s;
    for (int j = 0; j < num_labels; ++j)
      sum -= H[l * num_labels + j] * log(fmax(DATA_LOAD(prob, p + j * inner), LOG_THRESHOLD));
    ++valid;
  }
  finish_label_loss(sum, valid, bad, loss_part, valid_part, bad_part, normalization, positions,
                    outer, label, loss, normalizer, label_error);
}

// sum_rows[l] = sum_j H[l, j].
__kernel void infogain_sum_rows(const int num_labels, __global const float* H,
                                __global float* sum_rows) {
  const int l = GLOBAL_INDEX;
  if (l >= num_labels) return;
  float sum = 0.f;
  for (int j = 0; j < num_labels; ++j) sum += H[l * num_labels + j];
  sum_rows[l] = sum;
}

// Through the softmax: d loss / d x_j = prob_j * sum_rows[l] - H[l, j], times
// loss_weight / normalizer (loss weight = top_diff[0]); zero at ignored (or
// bad) positions.
__kernel void infogain_loss_backward(const int count, const int num_labels, const int inner,
                                     __global const DATA_ELEM* prob,
                                     __global const float* label, __global const float* H,
                                     __global const float* sum_rows,
                                     const int has_ignore_label, const int ignore_label,
                                     __global const float* top_diff,
                                     __global const float* normalizer,
                                     __global DATA_ELEM* bottom_diff) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  const int s = i % inner;
  const int j = (i / inner) % num_labels;
  const int o = i / (inner * num_labels);
  const int l = (int)label[o * inner + s];
  float g = 0.f;
  if (!(has_ignore_label && l == ignore_label) && l >= 0 && l < num_labels)
    g = DATA_LOAD(prob, i) * sum_rows[l] - H[l * num_labels + j];
  DATA_STORE(bottom_diff, i, g * (top_diff[0] / normalizer[0]));
}
