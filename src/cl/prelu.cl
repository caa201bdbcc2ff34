// PReLU: y = x > 0 ? x : slope[c] * x, with one slope per channel c (or one
// for all: channel_shared). The bottom is seen as num x channels x dim;
// channel c of element i is (i / dim) % channels, and its slope index
// c / div_factor (div_factor = channels when shared, else 1).

__kernel void prelu_forward(const int n, const int channels, const int dim,
                            const int div_factor, __global const float* x,
                            __global const float* slope, __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const int c = (i / dim) % channels / div_factor;
  const float v = x[i];
  y[i] = v > 0.f ? v : slope[c] * v;
}

// dx = dy for x > 0, else slope * dy (x = 0 counts as negative, as in Caffe).
__kernel void prelu_backward(const int n, const int channels, const int dim,
                             const int div_factor, __global const float* x,
                             __global const float* slope, __global const float* dy,
                             __global float* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const int c = (i / dim) % channels / div_factor;
  dx[i] = x[i] > 0.f ? dy[i] : slope[c] * dy[i];
}

// Slope gradient, step 1: one work-item per (sample, channel) row of `dim`
// elements sums dy * x over its x <= 0 elements into partial[row].
__kernel void prelu_slope_partial(const int rows, const int dim, __global const float* x,
                                  __global const float* dy, __global float* partial) {
  const int row = GLOBAL_INDEX;
  if (row >= rows) return;
  __global const float* xr = x + row * dim;
  __global const float* dyr = dy + row * dim;
  float sum = 0.f;
  for (int d = 0; d < dim; ++d) sum += xr[d] <= 0.f ? dyr[d] * xr[d] : 0.f;
  partial[row] = sum;
}

// Step 2: slope s owns channels [s * per, (s + 1) * per) of every sample
// (per = channels / num_slopes) and ADDS their partial sums to its gradient.
__kernel void prelu_slope_accumulate(const int num_slopes, const int num, const int channels,
                                     __global const float* partial,
                                     __global float* slope_diff) {
  const int s = GLOBAL_INDEX;
  if (s >= num_slopes) return;
  const int per = channels / num_slopes;
  float sum = 0.f;
  for (int n = 0; n < num; ++n)
    for (int c = s * per; c < (s + 1) * per; ++c) sum += partial[n * channels + c];
  slope_diff[s] += sum;
}
