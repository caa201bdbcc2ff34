// Hinge loss (Caffe's HingeLoss) of scores x (num x dim) and labels:
// with t = -1 for the label's column and +1 elsewhere, m = max(0, 1 + t x),
// loss = 1/num sum m (L1) or 1/num sum m^2 (L2). DATA_TYPE (common.cl;
// float by default): how x and its gradient are stored; the labels and the
// loss are float.

#define LOSS_GROUP 128

// One work-group writes the 0-d loss. A label outside [0, dim) makes the loss
// NaN and is recorded in label_error = {position, label bits} unless one is
// recorded already (the host resets it to -1).
__kernel __attribute__((reqd_work_group_size(LOSS_GROUP, 1, 1)))
void hinge_loss_forward(const int num, const int dim, const int squared,
                        __global const DATA_ELEM* x, __global const float* label,
                        __global float* loss, __global int* label_error) {
  __local float loss_part[LOSS_GROUP];
  __local int bad_part[LOSS_GROUP];
  const int lid = get_local_id(0);
  const int count = num * dim;
  float sum = 0.f;
  int bad = INT_MAX;
  for (int i = lid; i < count; i += LOSS_GROUP) {
    const int n = i / dim;
    const int l = (int)label[n];
    if (l < 0 || l >= dim) {
      bad = min(bad, n);
      continue;
    }
    const float t = (i - n * dim) == l ? -1.f : 1.f;
    const float m = fmax(0.f, 1.f + t * DATA_LOAD(x, i));
    sum += squared ? m * m : m;
  }
  loss_part[lid] = sum;
  bad_part[lid] = bad;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int span = LOSS_GROUP / 2; span > 0; span >>= 1) {
    if (lid < span) {
      loss_part[lid] += loss_part[lid + span];
      bad_part[lid] = min(bad_part[lid], bad_part[lid + span]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid != 0) return;
  write_label_loss(bad_part[0], loss_part[0] / num, label, loss, label_error);
}

// d loss / d x = t * [m > 0] (L1) or 2 t m (L2), times loss_weight / num;
// the loss weight is top_diff[0]. Rows with a bad label get zero.
__kernel void hinge_loss_backward(const int count, const int dim, const int num,
                                  const int squared, __global const DATA_ELEM* x,
                                  __global const float* label, __global const float* top_diff,
                                  __global DATA_ELEM* bottom_diff) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  const int n = i / dim;
  const int l = (int)label[n];
  float g = 0.f;
  if (l >= 0 && l < dim) {
    const float t = (i - n * dim) == l ? -1.f : 1.f;
    const float m = fmax(0.f, 1.f + t * DATA_LOAD(x, i));
    g = squared ? 2.f * t * m : (m > 0.f ? t : 0.f);
  }
  DATA_STORE(bottom_diff, i, g * (top_diff[0] / num));
}
