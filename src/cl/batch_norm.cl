// Batch normalization (Caffe's BatchNorm) of an N x C x S blob per channel c:
// y = (x - mean_c) / sqrt(var_c + eps). Statistics are either those of the
// batch (and then folded into the running sums) or the running sums divided
// by the running scale factor, read here on the device.
//
// The elementwise passes come in two shapes (CPU_SHAPE, channel_sums.hpp's
// LaunchElementwise): a work-item per value (0, GPU), or a work-item per
// chunk of `chunk` values swept row by row in float16 vectors (1, CPU).
#ifndef CPU_SHAPE
#define CPU_SHAPE 0
#endif

// Batch statistics from the per-channel sums of d = x - shift_c and d^2
// (channel_sums.cl, kind moments; shift_c = x[c * spatial], the channel's
// first value): mean = shift + sum(d) / m, biased variance = sum(d^2) / m -
// (sum(d) / m)^2, m = num * spatial. One work-item per channel. The running
// sums become
//   mean_sum = mean + f * mean_sum, var_sum = m/(m-1) * var + f * var_sum,
//   factor = f * factor + 1 (once, by channel 0),
// with f = moving_average_fraction.
__kernel void batch_norm_stats_from_sums(const int channels, const int m, const int spatial,
                                         const float fraction, const float eps,
                                         __global const float* x, __global const float* sums,
                                         __global float* mean, __global float* stdev,
                                         __global float* mean_sum, __global float* var_sum,
                                         __global float* factor) {
  const int c = GLOBAL_INDEX;
  if (c >= channels) return;
  const float shifted_mean = sums[c] / m;
  const float mu = x[c * spatial] + shifted_mean;
  const float var = fmax(sums[channels + c] / m - shifted_mean * shifted_mean, 0.f);
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

// For the CPU shape: the values [begin, end) of chunk `get_global_id(0)`
// (empty past the count).
#define BN_CHUNK(count, chunk)                                  \
  const int begin = (int)get_global_id(0) * (chunk);            \
  const int end = min((count), begin + (chunk));

// y and x_norm (the copy backward reads) = (x - mean) / stdev; y may alias x.
__kernel void batch_norm_normalize(const int count, const int chunk, const int channels,
                                   const int spatial, __global const float* x,
                                   __global const float* mean, __global const float* stdev,
                                   __global float* y, __global float* x_norm) {
#if CPU_SHAPE
  BN_CHUNK(count, chunk)
  for (int i = begin; i < end;) {  // one row (image, channel) at a time
    const int row = i / spatial, row_end = min(end, (row + 1) * spatial);
    const int c = row % channels;
    const float mu = mean[c], sd = stdev[c];
    for (; i + 16 <= row_end; i += 16) {
      const float16 v = (vload16(0, x + i) - mu) / sd;
      vstore16(v, 0, y + i);
      vstore16(v, 0, x_norm + i);
    }
    for (; i < row_end; ++i) {
      const float v = (x[i] - mu) / sd;
      y[i] = v;
      x_norm[i] = v;
    }
  }
#else
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  const int c = (i / spatial) % channels;
  const float v = (x[i] - mean[c]) / stdev[c];
  y[i] = v;
  x_norm[i] = v;
#endif
}

// Batch statistics: dx = (dy - mean(dy) - mean(dy * y) * y) / stdev, the
// means from the per-channel sums of dy and dy * y (channel_sums.cl, kind
// products) over m values. dx may alias dy.
__kernel void batch_norm_backward_from_sums(const int count, const int chunk,
                                            const int channels, const int spatial,
                                            const int m, __global const float* x_norm,
                                            __global const float* dy,
                                            __global const float* sums,
                                            __global const float* stdev, __global float* dx) {
#if CPU_SHAPE
  BN_CHUNK(count, chunk)
  for (int i = begin; i < end;) {
    const int row = i / spatial, row_end = min(end, (row + 1) * spatial);
    const int c = row % channels;
    const float mean_dy = sums[c] / m, mean_dy_y = sums[channels + c] / m, sd = stdev[c];
    for (; i + 16 <= row_end; i += 16)
      vstore16((vload16(0, dy + i) - mean_dy - mean_dy_y * vload16(0, x_norm + i)) / sd, 0,
               dx + i);
    for (; i < row_end; ++i) dx[i] = (dy[i] - mean_dy - mean_dy_y * x_norm[i]) / sd;
  }
#else
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  const int c = (i / spatial) % channels;
  dx[i] = (dy[i] - sums[c] / m - sums[channels + c] / m * x_norm[i]) / stdev[c];
#endif
}

// Global statistics are constants: dx = dy / stdev.
__kernel void batch_norm_backward_global(const int count, const int chunk, const int channels,
                                         const int spatial, __global const float* dy,
                                         __global const float* stdev, __global float* dx) {
#if CPU_SHAPE
  BN_CHUNK(count, chunk)
  for (int i = begin; i < end;) {
    const int row = i / spatial, row_end = min(end, (row + 1) * spatial);
    const float sd = stdev[row % channels];
    for (; i + 16 <= row_end; i += 16) vstore16(vload16(0, dy + i) / sd, 0, dx + i);
    for (; i < row_end; ++i) dx[i] = dy[i] / sd;
  }
#else
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  dx[i] = dy[i] / stdev[(i / spatial) % channels];
#endif
}
