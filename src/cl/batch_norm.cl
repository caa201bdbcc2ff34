// Batch normalization (Caffe's BatchNorm) of an N x C x S blob per channel c:
// y = (x - mean_c) / sqrt(var_c + eps). Statistics are either those of the
// batch (and then folded into the running sums: a generated reduction in
// src/layers/batch_norm.cpp) or the running sums divided by the running scale
// factor, read here on the device. The elementwise passes are generated
// (core/pointwise_kernel.hpp) in batch_norm.cpp.

// One work-item per channel: the stored statistics, scaled by 1/factor (0 when
// the factor is 0, as in Caffe).
__kernel void batch_norm_global_stats(const int channels, const float eps,
                                      __global const float* mean_sum,
                                      __global const float* var_sum,
                                      __global const float* factor, __global float* mean,
                                      __global float* stdev) {
  const int c = GLOBAL_INDEX;
  if (c >= channels) return;
  const float scale = factor[0] == 0.f ? 0.f : 1.f / factor[0];
  mean[c] = scale * mean_sum[c];
  stdev[c] = sqrt(scale * var_sum[c] + eps);
}
