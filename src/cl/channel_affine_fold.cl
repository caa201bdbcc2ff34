// The per-channel affine of an inference BatchNorm (+ Scale) with the bias of
// the layer before it folded in (src/core/channel_affine_fold.hpp). As the
// BatchNorm layer: statistics are the stored sums divided by the factor (0
// when the factor is 0), stdev = sqrt(var + eps).
__kernel void fold_channel_affine(const int channels, const float eps,
                                  __global const float* mean_sum,
                                  __global const float* var_sum,
                                  __global const float* factor,
                                  __global const float* gamma, const int has_gamma,
                                  __global const float* beta, const int has_beta,
                                  __global const float* bias, const int has_bias,
                                  __global float* scale, __global float* shift) {
  const int c = GLOBAL_INDEX;
  if (c >= channels) return;
  const float f = factor[0] == 0.f ? 0.f : 1.f / factor[0];
  const float s = (has_gamma ? gamma[c] : 1.f) / sqrt(f * var_sum[c] + eps);
  scale[c] = s;
  shift[c] = s * ((has_bias ? bias[c] : 0.f) - f * mean_sum[c]) + (has_beta ? beta[c] : 0.f);
}
