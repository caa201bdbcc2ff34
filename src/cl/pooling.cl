// Max, average and stochastic pooling over N x C x H x W blobs, as Caffe's
// PoolingLayer. One work-item per output element in forward and per input
// element in backward: backward gathers from the windows that cover an input
// element, so no two work-items write the same place and no atomics are needed.
//
// HAS_TOP_MASK (0/1): max pooling also writes the argmax as floats to a
// second top (Caffe's mask top).
// EXCLUDE_PAD (0/1): average pooling divides by the number of input elements
// in the window (ONNX AveragePool's count_include_pad = 0) instead of Caffe's
// window clipped to the padded input.
// DATA_TYPE (common.cl's storage codes; float by default): how the data and
// diffs are stored. Values are widened to float on load and rounded once on
// store; the argmax and the mask top stay int and float.

#ifndef HAS_TOP_MASK
#define HAS_TOP_MASK 0
#endif
#ifndef EXCLUDE_PAD
#define EXCLUDE_PAD 0
#endif

// Geometry arguments shared by every kernel here.
#define POOL_GEOMETRY                                                        \
  const int height, const int width, const int pooled_h, const int pooled_w, \
      const int kernel_h, const int kernel_w, const int stride_h,            \
      const int stride_w, const int pad_h, const int pad_w

// Max over the window clipped to the input; argmax is the offset h * width + w
// inside the (n, c) plane, -1 for a window that covers no input.
__kernel void max_pool_forward(const int n, __global const DATA_ELEM* bottom,
                               POOL_GEOMETRY, __global DATA_ELEM* top,
                               __global int* argmax
#if HAS_TOP_MASK
                               , __global float* top_mask
#endif
                               ) {
  const int index = GLOBAL_INDEX;
  if (index >= n) return;
  const int pw = index % pooled_w;
  const int ph = (index / pooled_w) % pooled_h;
  const int plane = index / (pooled_w * pooled_h);
  int hstart = ph * stride_h - pad_h;
  int wstart = pw * stride_w - pad_w;
  const int hend = min(hstart + kernel_h, height);
  const int wend = min(wstart + kernel_w, width);
  hstart = max(hstart, 0);
  wstart = max(wstart, 0);
  __global const DATA_ELEM* slice = bottom + plane * height * width;
  float maxval = -FLT_MAX;
  int maxidx = -1;
  for (int h = hstart; h < hend; ++h) {
    for (int w = wstart; w < wend; ++w) {
      const float v = DATA_LOAD(slice, h * width + w);
      if (v > maxval) {
        maxval = v;
        maxidx = h * width + w;
      }
    }
  }
  DATA_STORE(top, index, maxval);
  argmax[index] = maxidx;
#if HAS_TOP_MASK
  top_mask[index] = (float)maxidx;
#endif
}

// Each input element sums the top diffs of the windows whose argmax it is.
__kernel void max_pool_backward(const int n, __global const DATA_ELEM* top_diff,
                                __global const int* argmax, POOL_GEOMETRY,
                                __global DATA_ELEM* bottom_diff) {
  const int index = GLOBAL_INDEX;
  if (index >= n) return;
  const int w = index % width;
  const int h = (index / width) % height;
  const int plane = index / (width * height);
  // Windows ph with ph * stride_h - pad_h <= h < ph * stride_h - pad_h + kernel_h.
  const int phstart = (h + pad_h < kernel_h) ? 0 : (h + pad_h - kernel_h) / stride_h + 1;
  const int phend = min((h + pad_h) / stride_h + 1, pooled_h);
  const int pwstart = (w + pad_w < kernel_w) ? 0 : (w + pad_w - kernel_w) / stride_w + 1;
  const int pwend = min((w + pad_w) / stride_w + 1, pooled_w);
  const int offset = plane * pooled_h * pooled_w;
  const int self = h * width + w;
  float gradient = 0.f;
  for (int ph = phstart; ph < phend; ++ph) {
    for (int pw = pwstart; pw < pwend; ++pw) {
      const int t = offset + ph * pooled_w + pw;
      if (argmax[t] == self) gradient += DATA_LOAD(top_diff, t);
    }
  }
  DATA_STORE(bottom_diff, index, gradient);
}

// Average over the window; the divisor is the window clipped to the padded
// input (padding counts, the part beyond the padding does not), as in Caffe,
// or with EXCLUDE_PAD the window clipped to the input itself.

// The divisor of the window starting at (hstart, wstart) of the unpadded
// input (negative inside the padding). EXCLUDE_PAD: the input elements it
// covers, at least 1 (a window past the input, which Caffe's output size can
// give when stride > kernel, averages nothing to 0).
inline float ave_pool_divisor(const int hstart, const int wstart, const int height,
                              const int width, const int kernel_h, const int kernel_w,
                              const int pad_h, const int pad_w) {
#if EXCLUDE_PAD
  const int rows = min(hstart + kernel_h, height) - max(hstart, 0);
  const int cols = min(wstart + kernel_w, width) - max(wstart, 0);
  return (float)max(rows * cols, 1);
#else
  const int hend = min(hstart + kernel_h, height + pad_h);
  const int wend = min(wstart + kernel_w, width + pad_w);
  return (float)((hend - hstart) * (wend - wstart));
#endif
}

__kernel void ave_pool_forward(const int n, __global const DATA_ELEM* bottom,
                               POOL_GEOMETRY, __global DATA_ELEM* top) {
  const int index = GLOBAL_INDEX;
  if (index >= n) return;
  const int pw = index % pooled_w;
  const int ph = (index / pooled_w) % pooled_h;
  const int plane = index / (pooled_w * pooled_h);
  const int h0 = ph * stride_h - pad_h;
  const int w0 = pw * stride_w - pad_w;
  const float pool_size =
      ave_pool_divisor(h0, w0, height, width, kernel_h, kernel_w, pad_h, pad_w);
  const int hstart = max(h0, 0), wstart = max(w0, 0);
  const int hend = min(h0 + kernel_h, height), wend = min(w0 + kernel_w, width);
  __global const DATA_ELEM* slice = bottom + plane * height * width;
  float sum = 0.f;
  for (int h = hstart; h < hend; ++h)
    for (int w = wstart; w < wend; ++w) sum += DATA_LOAD(slice, h * width + w);
  DATA_STORE(top, index, sum / pool_size);
}

__kernel void ave_pool_backward(const int n, __global const DATA_ELEM* top_diff,
                                POOL_GEOMETRY, __global DATA_ELEM* bottom_diff) {
  const int index = GLOBAL_INDEX;
  if (index >= n) return;
  // Coordinates in the padded input.
  const int w = index % width + pad_w;
  const int h = (index / width) % height + pad_h;
  const int plane = index / (width * height);
  const int phstart = (h < kernel_h) ? 0 : (h - kernel_h) / stride_h + 1;
  const int phend = min(h / stride_h + 1, pooled_h);
  const int pwstart = (w < kernel_w) ? 0 : (w - kernel_w) / stride_w + 1;
  const int pwend = min(w / stride_w + 1, pooled_w);
  __global const DATA_ELEM* slice = top_diff + plane * pooled_h * pooled_w;
  float gradient = 0.f;
  for (int ph = phstart; ph < phend; ++ph) {
    for (int pw = pwstart; pw < pwend; ++pw) {
      const float pool_size =
          ave_pool_divisor(ph * stride_h - pad_h, pw * stride_w - pad_w, height, width,
                           kernel_h, kernel_w, pad_h, pad_w);
      gradient += DATA_LOAD(slice, ph * pooled_w + pw) / pool_size;
    }
  }
  DATA_STORE(bottom_diff, index, gradient);
}

// Stochastic pooling (Zeiler & Fergus), as Caffe: in training, each window
// picks one input with probability proportional to its value (the inputs are
// expected non-negative, e.g. after ReLU) and records it in `chosen`, like
// argmax, so max_pool_backward routes its gradient; at test time the output is
// the probability-weighted average sum(x^2) / sum(x). Stochastic pooling has
// no padding, so the window is clipped to the input only.

// Random numbers: uniform_from_hash (common.cl).

__kernel void stochastic_pool_forward_train(const int n, __global const DATA_ELEM* bottom,
                                            POOL_GEOMETRY, const int seed,
                                            __global DATA_ELEM* top, __global int* chosen) {
  const int index = GLOBAL_INDEX;
  if (index >= n) return;
  const int pw = index % pooled_w;
  const int ph = (index / pooled_w) % pooled_h;
  const int plane = index / (pooled_w * pooled_h);
  const int hstart = ph * stride_h, wstart = pw * stride_w;
  const int hend = min(hstart + kernel_h, height);
  const int wend = min(wstart + kernel_w, width);
  __global const DATA_ELEM* slice = bottom + plane * height * width;
  float sum = 0.f;
  for (int h = hstart; h < hend; ++h)
    for (int w = wstart; w < wend; ++w) sum += DATA_LOAD(slice, h * width + w);
  const float threshold = uniform_from_hash((uint)seed, (uint)index) * sum;
  // The first element where the running sum reaches the threshold; the last
  // one if rounding keeps the running sum just below it.
  int pick = (hend - 1) * width + (wend - 1);
  float running = 0.f;
  bool found = false;
  for (int h = hstart; h < hend && !found; ++h) {
    for (int w = wstart; w < wend && !found; ++w) {
      running += DATA_LOAD(slice, h * width + w);
      if (running >= threshold) {
        pick = h * width + w;
        found = true;
      }
    }
  }
  DATA_STORE(top, index, DATA_LOAD(slice, pick));
  chosen[index] = pick;
}

__kernel void stochastic_pool_forward_test(const int n, __global const DATA_ELEM* bottom,
                                           POOL_GEOMETRY, __global DATA_ELEM* top) {
  const int index = GLOBAL_INDEX;
  if (index >= n) return;
  const int pw = index % pooled_w;
  const int ph = (index / pooled_w) % pooled_h;
  const int plane = index / (pooled_w * pooled_h);
  const int hstart = ph * stride_h, wstart = pw * stride_w;
  const int hend = min(hstart + kernel_h, height);
  const int wend = min(wstart + kernel_w, width);
  __global const DATA_ELEM* slice = bottom + plane * height * width;
  float sum = FLT_MIN, weighted = 0.f;  // FLT_MIN: an all-zero window gives 0
  for (int h = hstart; h < hend; ++h) {
    for (int w = wstart; w < wend; ++w) {
      const float v = DATA_LOAD(slice, h * width + w);
      sum += v;
      weighted += v * v;
    }
  }
  DATA_STORE(top, index, weighted / sum);
}

// When windows do not overlap (stride >= kernel on both axes) each input
// element belongs to at most one window, so every top element can write its
// diff to its argmax without races: a loop-free kernel over the (smaller) top,
// after the bottom diff is zeroed. Much faster on CPU devices than the gather.
__kernel void max_pool_backward_scatter(const int n, __global const DATA_ELEM* top_diff,
                                        __global const int* argmax, const int plane_in,
                                        const int plane_out, __global DATA_ELEM* bottom_diff) {
  const int index = GLOBAL_INDEX;
  if (index >= n) return;
  const int where = argmax[index];
  if (where >= 0)
    DATA_STORE(bottom_diff, (index / plane_out) * plane_in + where, DATA_LOAD(top_diff, index));
}
