// Sigmoid cross-entropy loss (Caffe's SigmoidCrossEntropyLoss) of scores x
// and targets t in [0, 1], both of `count` values (outer = the batch size):
// loss = -1/normalizer sum [x (t - [x >= 0]) - log(1 + exp(x - 2 x [x >= 0]))],
// Caffe's overflow-free form of -[t log s(x) + (1 - t) log(1 - s(x))].
// DATA_TYPE (common.cl; float by default): how x and its gradient are
// stored; the targets and the loss are float.

#define LOSS_GROUP 128

// One work-group writes the 0-d loss and the normalizer for backward.
// Targets whose integer part is ignore_label are skipped.
__kernel __attribute__((reqd_work_group_size(LOSS_GROUP, 1, 1)))
void sigmoid_cross_entropy_loss_forward(const int count, const int outer,
                                        __global const DATA_ELEM* x,
                                        __global const float* target,
                                        const int has_ignore_label, const int ignore_label,
                                        const int normalization, __global float* loss,
                                        __global float* normalizer) {
  __local float loss_part[LOSS_GROUP];
  __local int valid_part[LOSS_GROUP];
  const int lid = get_local_id(0);
  float sum = 0.f;
  int valid = 0;
  for (int i = lid; i < count; i += LOSS_GROUP) {
    const float t = target[i];
    if (has_ignore_label && (int)t == ignore_label) continue;
    const float v = DATA_LOAD(x, i);
    const float positive = v >= 0.f ? 1.f : 0.f;
    sum -= v * (t - positive) - log(1.f + exp(v - 2.f * v * positive));
    ++valid;
  }
  loss_part[lid] = sum;
  valid_part[lid] = valid;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int span = LOSS_GROUP / 2; span > 0; span >>= 1) {
    if (lid < span) {
      loss_part[lid] += loss_part[lid + span];
      valid_part[lid] += valid_part[lid + span];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid != 0) return;
  const float norm = loss_normalizer(normalization, count, valid_part[0], outer);
  normalizer[0] = norm;
  loss[0] = loss_part[0] / norm;
}

// d loss / d x = (sigmoid(x) - t) * loss_weight / normalizer, zero for
// ignored targets; the loss weight is top_diff[0].
__kernel void sigmoid_cross_entropy_loss_backward(const int count, __global const DATA_ELEM* x,
                                                  __global const float* target,
                                                  const int has_ignore_label,
                                                  const int ignore_label,
                                                  __global const float* top_diff,
                                                  __global const float* normalizer,
                                                  __global DATA_ELEM* bottom_diff) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  const float t = target[i];
  float g = 0.f;
  if (!(has_ignore_label && (int)t == ignore_label)) g = 1.f / (1.f + exp(-DATA_LOAD(x, i))) - t;
  DATA_STORE(bottom_diff, i, g * (top_diff[0] / normalizer[0]));
}
