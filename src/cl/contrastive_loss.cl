// Contrastive loss (Caffe's ContrastiveLoss) of feature pairs a, b (num x
// channels) and similarity labels y: with d^2 = |a - b|^2,
//   loss = 1/(2 num) sum [y ? d^2 : max(margin - d, 0)^2]
// (legacy_version: max(margin - d^2, 0) for dissimilar pairs). DATA_TYPE
// (common.cl; float by default): how a, b and their gradients are stored;
// the labels, d^2 and the loss are float.

#define LOSS_GROUP 128

// One work-group writes the 0-d loss and each pair's d^2 for backward.
__kernel __attribute__((reqd_work_group_size(LOSS_GROUP, 1, 1)))
void contrastive_loss_forward(const int num, const int channels, const float margin,
                              const int legacy, __global const DATA_ELEM* a,
                              __global const DATA_ELEM* b, __global const float* similar,
                              __global float* dist_sq, __global float* loss) {
  __local float loss_part[LOSS_GROUP];
  const int lid = get_local_id(0);
  float sum = 0.f;
  for (int n = lid; n < num; n += LOSS_GROUP) {
    float d2 = 0.f;
    for (int c = 0; c < channels; ++c) {
      const float d = DATA_LOAD(a, n * channels + c) - DATA_LOAD(b, n * channels + c);
      d2 += d * d;
    }
    dist_sq[n] = d2;
    if ((int)similar[n]) {
      sum += d2;
    } else if (legacy) {
      sum += fmax(margin - d2, 0.f);
    } else {
      const float gap = fmax(margin - sqrt(d2), 0.f);
      sum += gap * gap;
    }
  }
  loss_part[lid] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int span = LOSS_GROUP / 2; span > 0; span >>= 1) {
    if (lid < span) loss_part[lid] += loss_part[lid + span];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) loss[0] = loss_part[0] / num / 2.f;
}

// Gradient for a (sign 1) or b (sign -1), with alpha = sign * loss_weight /
// num (loss weight = top_diff[0]): similar pairs alpha (a - b); dissimilar
// ones beta (a - b) while the margin is not met, with beta = -alpha (legacy)
// or -alpha (margin - d) / (d + 1e-4), Caffe's guard against d = 0.
__kernel void contrastive_loss_backward(const int count, const int channels, const int num,
                                        const float margin, const int legacy, const float sign,
                                        __global const DATA_ELEM* a,
                                        __global const DATA_ELEM* b,
                                        __global const float* similar,
                                        __global const float* dist_sq,
                                        __global const float* top_diff,
                                        __global DATA_ELEM* bottom_diff) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  const int n = i / channels;
  const float alpha = sign * top_diff[0] / num;
  const float diff = DATA_LOAD(a, i) - DATA_LOAD(b, i);
  float g;
  if ((int)similar[n]) {
    g = alpha * diff;
  } else {
    const float d2 = dist_sq[n];
    float mdist, beta;
    if (legacy) {
      mdist = margin - d2;
      beta = -alpha;
    } else {
      const float d = sqrt(d2);
      mdist = margin - d;
      beta = -alpha * mdist / (d + 1e-4f);
    }
    g = mdist > 0.f ? beta * diff : 0.f;
  }
  DATA_STORE(bottom_diff, i, g);
}
