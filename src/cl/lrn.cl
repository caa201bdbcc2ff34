// Local response normalization (Caffe's LRN) of an N x C x H x W blob:
// y = x * scale^-beta (computed as exp(-beta * log(scale)): scale > 0, and
// the general pow() is several times slower on CPU devices), with
//   ACROSS_CHANNELS: scale = k + alpha/size * (sum of x^2 over `size` channels
//                    centred on c, zero outside [0, C))
//   WITHIN_CHANNEL:  scale = 1 + alpha/size^2 * (sum of x^2 over the size x
//                    size window centred on (h, w), zero outside the image)
// Element i has c = (i / spatial) % channels, spatial = H * W.
//
// x, y, dy and dx are stored as DATA_TYPE (common.cl; float unless a 16-bit
// layer asks); scale and ratio are the layer's own float buffers.

__kernel void lrn_across_scale(const int count, const int channels, const int spatial,
                               const int size, const float alpha_over_size, const float k,
                               __global const DATA_ELEM* x, __global float* scale) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  const int c = (i / spatial) % channels;
  const int pre = (size - 1) / 2;
  const int first = max(c - pre, 0);
  const int last = min(c - pre + size, channels);  // exclusive
  float sum = 0.f;
  for (int cc = first; cc < last; ++cc) {
    const float v = DATA_LOAD(x, i + (cc - c) * spatial);
    sum += v * v;
  }
  scale[i] = k + alpha_over_size * sum;
}

__kernel void lrn_within_scale(const int count, const int height, const int width,
                               const int size, const float alpha_over_area,
                               __global const DATA_ELEM* x, __global float* scale) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  const int w = i % width;
  const int h = (i / width) % height;
  const int plane = i - h * width - w;
  const int pre = (size - 1) / 2;
  const int h0 = max(h - pre, 0), h1 = min(h - pre + size, height);
  const int w0 = max(w - pre, 0), w1 = min(w - pre + size, width);
  float sum = 0.f;
  for (int hh = h0; hh < h1; ++hh)
    for (int ww = w0; ww < w1; ++ww) {
      const float v = DATA_LOAD(x, plane + hh * width + ww);
      sum += v * v;
    }
  scale[i] = 1.f + alpha_over_area * sum;
}

__kernel void lrn_output(const int count, const float beta, __global const DATA_ELEM* x,
                         __global const float* scale, __global DATA_ELEM* y) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  DATA_STORE(y, i, DATA_LOAD(x, i) * exp(-beta * log(scale[i])));
}

// ratio = dy * x * scale^(-beta - 1): what every window sum in backward adds.
__kernel void lrn_ratio(const int count, const float beta, __global const DATA_ELEM* x,
                        __global const float* scale, __global const DATA_ELEM* dy,
                        __global float* ratio) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  ratio[i] = DATA_LOAD(dy, i) * DATA_LOAD(x, i) * exp((-beta - 1.f) * log(scale[i]));
}

// dx = dy * scale^-beta - coeff * x * (sum of ratio over the windows that
// contain element i), coeff = 2 * beta * alpha / size. Element i lies in the
// window of channel cc when cc - pre <= c < cc - pre + size.
__kernel void lrn_across_backward(const int count, const int channels, const int spatial,
                                  const int size, const float beta, const float coeff,
                                  __global const DATA_ELEM* x, __global const float* scale,
                                  __global const DATA_ELEM* dy, __global const float* ratio,
                                  __global DATA_ELEM* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  const int c = (i / spatial) % channels;
  const int pre = (size - 1) / 2;
  const int first = max(c + pre - size + 1, 0);
  const int last = min(c + pre + 1, channels);  // exclusive
  float sum = 0.f;
  for (int cc = first; cc < last; ++cc) sum += ratio[i + (cc - c) * spatial];
  DATA_STORE(dx, i,
             DATA_LOAD(dy, i) * exp(-beta * log(scale[i])) - coeff * DATA_LOAD(x, i) * sum);
}

// The same within a channel: coeff = 2 * beta * alpha / size^2.
__kernel void lrn_within_backward(const int count, const int height, const int width,
                                  const int size, const float beta, const float coeff,
                                  __global const DATA_ELEM* x, __global const float* scale,
                                  __global const DATA_ELEM* dy, __global const float* ratio,
                                  __global DATA_ELEM* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  const int w = i % width;
  const int h = (i / width) % height;
  const int plane = i - h * width - w;
  const int pre = (size - 1) / 2;
  const int h0 = max(h + pre - size + 1, 0), h1 = min(h + pre + 1, height);
  const int w0 = max(w + pre - size + 1, 0), w1 = min(w + pre + 1, width);
  float sum = 0.f;
  for (int hh = h0; hh < h1; ++hh)
    for (int ww = w0; ww < w1; ++ww) sum += ratio[plane + hh * width + ww];
  DATA_STORE(dx, i,
             DATA_LOAD(dy, i) * exp(-beta * log(scale[i])) - coeff * DATA_LOAD(x, i) * sum);
}
