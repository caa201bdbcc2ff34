// Multinomial logistic loss of given probabilities (Caffe's
// MultinomialLogisticLoss): loss = -1/num sum_n log(max(p[n, label_n], 1e-20)).
// prob is num x dim, label has num values. DATA_TYPE (common.cl; float by
// default): how prob and its gradient are stored; the labels and the loss
// are float.

#define LOSS_GROUP 128
#define LOG_THRESHOLD 1e-20f  // Caffe's kLOG_THRESHOLD

// One work-group writes the 0-d loss. A label outside [0, dim) makes the loss
// NaN and is recorded in label_error = {position, label bits} unless one is
// recorded already (the host resets it to -1).
__kernel __attribute__((reqd_work_group_size(LOSS_GROUP, 1, 1)))
void multinomial_logistic_loss_forward(const int num, const int dim,
                                       __global const DATA_ELEM* prob,
                                       __global const float* label, __global float* loss,
                                       __global int* label_error) {
  __local float loss_part[LOSS_GROUP];
  __local int bad_part[LOSS_GROUP];
  const int lid = get_local_id(0);
  float sum = 0.f;
  int bad = INT_MAX;
  for (int n = lid; n < num; n += LOSS_GROUP) {
    const int l = (int)label[n];
    if (l < 0 || l >= dim) {
      bad = min(bad, n);
      continue;
    }
    sum -= log(fmax(DATA_LOAD(prob, n * dim + l), LOG_THRESHOLD));
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

// d loss / d p[n, label_n] = -loss_weight / num / max(p, 1e-20), zero
// elsewhere (and for bad labels). The loss weight is top_diff[0].
__kernel void multinomial_logistic_loss_backward(const int count, const int dim, const int num,
                                                 __global const DATA_ELEM* prob,
                                                 __global const float* label,
                                                 __global const float* top_diff,
                                                 __global DATA_ELEM* bottom_diff) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  const int n = i / dim;
  const int j = i - n * dim;
  DATA_STORE(bottom_diff, i,
             j == (int)label[n] ? -top_diff[0] / num / fmax(DATA_LOAD(prob, i), LOG_THRESHOLD)
                                : 0.f);
}
