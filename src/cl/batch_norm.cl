// Batch normalization (Caffe's BatchNorm) of an N x C x S blob per channel c:
// y = (x - mean_c) / sqrt(var_c + eps). Statistics are either those of the
// batch (and then folded into the running sums: a generated reduction in
// src/layers/batch_norm.cpp) or the running sums divided by the running scale
// factor, read here on the device.
//
// The elementwise passes come in two shapes (CPU_SHAPE, channel_sums.hpp's
// LaunchElementwise): a work-item per value (0, GPU), or a work-item per
// chunk of `chunk` values swept row by row in float16 vectors (1, CPU).
#ifndef CPU_SHAPE
#define CPU_SHAPE 0
#endif

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

// x_norm (the copy backward reads) = (x - mean) / stdev, and y = x_norm, or
// with an absorbed Scale (gamma non-null) y = gamma * x_norm (+ beta when
// non-null); then clamped at 0 when relu (a fused ReLU). y may alias x.
inline float bn_output(const float v, const int c, __global const float* gamma,
                       __global const float* beta, const int relu) {
  float y = v;
  if (gamma) y = fma(gamma[c], v, beta ? beta[c] : 0.f);
  return relu ? fmax(y, 0.f) : y;
}

__kernel void batch_norm_normalize(const int count, const int chunk, const int channels,
                                   const int spatial, __global const float* x,
                                   __global const float* mean, __global const float* stdev,
                                   __global float* y, __global float* x_norm,
                                   __global const float* gamma, __global const float* beta,
                                   const int relu) {
#if CPU_SHAPE
  BN_CHUNK(count, chunk)
  for (int i = begin; i < end;) {  // one row (image, channel) at a time
    const int row = i / spatial, row_end = min(end, (row + 1) * spatial);
    const int c = row % channels;
    const float mu = mean[c], sd = stdev[c];
    const float g = gamma ? gamma[c] : 1.f, b = gamma && beta ? beta[c] : 0.f;
    const float floor = relu ? 0.f : -INFINITY;
    for (; i + 16 <= row_end; i += 16) {
      const float16 v = (vload16(0, x + i) - mu) / sd;
      vstore16(v, 0, x_norm + i);
      vstore16(fmax(fma((float16)g, v, (float16)b), (float16)floor), 0, y + i);
    }
    for (; i < row_end; ++i) {
      const float v = (x[i] - mu) / sd;
      x_norm[i] = v;
      y[i] = fmax(fma(g, v, b), floor);
    }
  }
#else
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  const int c = (i / spatial) % channels;
  const float v = (x[i] - mean[c]) / stdev[c];
  x_norm[i] = v;
  y[i] = bn_output(v, c, gamma, beta, relu);
#endif
}

// Batch statistics: dx = g * (dy - mean(dy) - mean(dy * y) * y) / stdev, the
// means from the per-channel sums of dy and dy * y (batch_norm.cpp's gradient
// sums) over m values; g = gamma[c] with an absorbed Scale (its factor:
// dy is then the Scale's top diff), else 1. dx may alias dy.
__kernel void batch_norm_backward_from_sums(const int count, const int chunk,
                                            const int channels, const int spatial,
                                            const int m, __global const float* x_norm,
                                            __global const float* dy,
                                            __global const float* sums,
                                            __global const float* stdev,
                                            __global const float* gamma, __global float* dx) {
#if CPU_SHAPE
  BN_CHUNK(count, chunk)
  for (int i = begin; i < end;) {
    const int row = i / spatial, row_end = min(end, (row + 1) * spatial);
    const int c = row % channels;
    const float mean_dy = sums[c] / m, mean_dy_y = sums[channels + c] / m;
    const float k = (gamma ? gamma[c] : 1.f) / stdev[c];
    for (; i + 16 <= row_end; i += 16)
      vstore16((vload16(0, dy + i) - mean_dy - mean_dy_y * vload16(0, x_norm + i)) * k, 0,
               dx + i);
    for (; i < row_end; ++i) dx[i] = (dy[i] - mean_dy - mean_dy_y * x_norm[i]) * k;
  }
#else
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  const int c = (i / spatial) % channels;
  dx[i] = (dy[i] - sums[c] / m - sums[channels + c] / m * x_norm[i]) *
          ((gamma ? gamma[c] : 1.f) / stdev[c]);
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
