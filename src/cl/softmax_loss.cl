// Multinomial logistic loss of softmax probabilities (Caffe's SoftmaxWithLoss).
// Probabilities are outer x channels x inner; labels are outer x inner.
// DATA_TYPE (common.cl's storage codes; float by default): how the
// probabilities and the bottom gradient are stored; labels and the loss are
// float.

#include "label_loss_group.cl"

// One work-group sums -log(prob of the label) over every position and writes
// the normalized loss, a 0-d top, without the host. It also writes the
// normalizer for backward, and records the first label out of range in
// label_error = {position, label bits} unless one is recorded already (the
// host resets it to -1); such a pass's loss is NaN.
__kernel __attribute__((reqd_work_group_size(LOSS_GROUP, 1, 1)))
void softmax_loss_forward(const int outer, const int channels, const int inner,
                          __global const DATA_ELEM* prob, __global const float* label,
                          const int has_ignore_label, const int ignore_label,
                          const int normalization, __global float* loss,
                          __global float* normalizer, __global int* label_error) {
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
    if (l < 0 || l >= channels) {
      bad = min(bad, i);
      continue;
    }
    const int o = i / inner, s = i - o * inner;
    // Clamped to [FLT_MIN, 1]: a probability rounded above 1 (OpenCL allows
    // an inexact divide in softmax) would give a negative term.
    sum -= log(clamp(DATA_LOAD(prob, (o * channels + l) * inner + s), FLT_MIN,
                     1.f));
    ++valid;
  }
  finish_label_loss(sum, valid, bad, loss_part, valid_part, bad_part, normalization, positions,
                    outer, label, loss, normalizer, label_error);
}

// d loss / d x = (prob - onehot(label)) * loss_weight / normalizer, zero at
// ignored positions. The loss weight is top_diff[0], read here on the device.
__kernel void softmax_loss_backward(const int count, const int channels, const int inner,
                                    __global const DATA_ELEM* prob,
                                    __global const float* label,
                                    const int has_ignore_label, const int ignore_label,
                                    __global const float* top_diff,
                                    __global const float* normalizer,
                                    __global DATA_ELEM* bottom_diff) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  const int s = i % inner;
  const int c = (i / inner) % channels;
  const int o = i / (inner * channels);
  const int l = (int)label[o * inner + s];
  float g = 0.f;
  if (!(has_ignore_label && l == ignore_label))
    g = DATA_LOAD(prob, i) - (c == l ? 1.f : 0.f);
  DATA_STORE(bottom_diff, i, g * (top_diff[0] / normalizer[0]));
}
