// Batch normalization (Caffe's BatchNorm) of an N x C x S blob per channel c:
// y = (x - mean_c) / sqrt(var_c + eps). Statistics are either those of the
// batch (and then folded into the running sums) or the running sums divided
// by the running scale factor, read here on the device.

#define BN_GROUP 64

// Sum of v over the work-group; every work-item gets it (see mvn.cl).
float bn_group_sum(float v, __local float* part) {
  const int lid = get_local_id(0);
  part[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int span = BN_GROUP / 2; span > 0; span >>= 1) {
    if (lid < span) part[lid] += part[lid + span];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float sum = part[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return sum;
}

// Index of the j-th of the num * spatial values of channel c.
inline int bn_index(int j, int c, int channels, int spatial) {
  const int n = j / spatial;
  return (n * channels + c) * spatial + (j - n * spatial);
}

// One work-group per channel: the batch mean, then the (biased) variance as
// the mean of (x - mean)^2. The running sums become
//   mean_sum = mean + f * mean_sum, var_sum = m/(m-1) * var + f * var_sum,
//   factor = f * factor + 1 (once, by channel 0),
// with f = moving_average_fraction and m = num * spatial.
__kernel __attribute__((reqd_work_group_size(BN_GROUP, 1, 1)))
void batch_norm_batch_stats(const int num, const int channels, const int spatial,
                            const float fraction, const float eps, __global const float* x,
                            __global float* mean, __global float* stdev,
                            __global float* mean_sum, __global float* var_sum,
                            __global float* factor) {
  __local float part[BN_GROUP];
  const int lid = get_local_id(0);
  const int c = get_group_id(0);
  const int m = num * spatial;
  float acc = 0.f;
  for (int j = lid; j < m; j += BN_GROUP) acc += x[bn_index(j, c, channels, spatial)];
  const float mu = bn_group_sum(acc, part) / m;
  acc = 0.f;
  for (int j = lid; j < m; j += BN_GROUP) {
    const float d = x[bn_index(j, c, channels, spatial)] - mu;
    acc += d * d;
  }
  const float var = bn_group_sum(acc, part) / m;
  if (lid != 0) return;
  mean[c] = mu;
  stdev[c] = sqrt(var + eps);
  const float correction = m > 1 ? (float)m / (m - 1) : 1.f;
  mean_sum[c] = mu + fraction * mean_sum[c];
  var_sum[c] = correction * var + fraction * var_sum[c];
  if (c == 0) factor[0] = factor[0] * fraction + 1.f;
}

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

// y and x_norm (the copy backward reads) = (x - mean) / stdev; y may alias x.
__kernel void batch_norm_normalize(const int count, const int channels, const int spatial,
                                   __global const float* x, __global const float* mean,
                                   __global const float* stdev, __global float* y,
                                   __global float* x_norm) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  const int c = (i / spatial) % channels;
  const float v = (x[i] - mean[c]) / stdev[c];
  y[i] = v;
  x_norm[i] = v;
}

// Batch statistics, one work-group per channel:
// dx = (dy - mean(dy) - mean(dy * y) * y) / stdev. dx may alias dy.
__kernel __attribute__((reqd_work_group_size(BN_GROUP, 1, 1)))
void batch_norm_backward_batch(const int num, const int channels, const int spatial,
                               __global const float* x_norm, __global const float* dy,
                               __global const float* stdev, __global float* dx) {
  __local float part[BN_GROUP];
  const int lid = get_local_id(0);
  const int c = get_group_id(0);
  const int m = num * spatial;
  float acc_dy = 0.f, acc_dyy = 0.f;
  for (int j = lid; j < m; j += BN_GROUP) {
    const int i = bn_index(j, c, channels, spatial);
    acc_dy += dy[i];
    acc_dyy += dy[i] * x_norm[i];
  }
  const float mean_dy = bn_group_sum(acc_dy, part) / m;
  const float mean_dyy = bn_group_sum(acc_dyy, part) / m;
  const float s = stdev[c];
  for (int j = lid; j < m; j += BN_GROUP) {
    const int i = bn_index(j, c, channels, spatial);
    dx[i] = (dy[i] - mean_dy - mean_dyy * x_norm[i]) / s;
  }
}

// Global statistics are constants: dx = dy / stdev.
__kernel void batch_norm_backward_global(const int count, const int channels,
                                         const int spatial, __global const float* dy,
                                         __global const float* stdev, __global float* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  dx[i] = dy[i] / stdev[(i / spatial) % channels];
}
