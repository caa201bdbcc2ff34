// EuclideanLoss: E = sum((a - b)^2) / (2 N). DATA_TYPE (common.cl; float
// by default): how a, b and their gradients are stored; diff, the squares
// and the loss are float.

// diff = a - b; sq = diff^2 (summed afterwards into the loss).
__kernel void euclidean_diff(const int n, __global const DATA_ELEM* a,
                             __global const DATA_ELEM* b, __global float* diff,
                             __global float* sq) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const float d = DATA_LOAD(a, i) - DATA_LOAD(b, i);
  diff[i] = d;
  sq[i] = d * d;
}

// dE/da = sign * loss_weight * diff / N; the loss weight is the top's diff,
// read on the device.
__kernel void euclidean_backward(const int n, const float sign_over_num,
                                 __global const float* top_diff,
                                 __global const float* diff, __global DATA_ELEM* bottom_diff) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  DATA_STORE(bottom_diff, i, sign_over_num * top_diff[0] * diff[i]);
}
