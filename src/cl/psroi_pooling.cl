// R-FCN's position-sensitive region pooling (src/layers/psroi_pooling.cpp).
// Bin (ph, pw) of output channel k averages input channel (k * G + ph) * G
// + pw over the bin's cells, the bins laid out as R-FCN's kernel lays them,
// in float: corners rounded then scaled, the region at least 0.1 cells each
// way, bin edges floor(p * bin + start) and ceil((p + 1) * bin + start),
// clipped to the map.
//
// No contraction into fma and division correctly rounded where the device
// can (the layer's build option): a bin edge often lands on a whole number
// (integer corners times 1/16), and a fused or inexact product moves it by a
// cell on one device and not on another.
#pragma OPENCL FP_CONTRACT OFF

typedef struct {
  int batch, hstart, hend, wstart, wend;
} PsBin;

inline PsBin ps_bin(__global const float* roi, float spatial_scale, int ph, int pw, int group,
                    int height, int width) {
  PsBin b;
  b.batch = (int)roi[0];
  const float start_w = round(roi[1]) * spatial_scale, start_h = round(roi[2]) * spatial_scale;
  const float end_w = (round(roi[3]) + 1.f) * spatial_scale;
  const float end_h = (round(roi[4]) + 1.f) * spatial_scale;
  const float roi_w = fmax(end_w - start_w, 0.1f), roi_h = fmax(end_h - start_h, 0.1f);
  const float bin_h = roi_h / (float)group, bin_w = roi_w / (float)group;
  const float ph_at = (float)ph * bin_h, pw_at = (float)pw * bin_w;
  const float ph_end = (float)(ph + 1) * bin_h, pw_end = (float)(pw + 1) * bin_w;
  b.hstart = clamp((int)floor(ph_at + start_h), 0, height);
  b.wstart = clamp((int)floor(pw_at + start_w), 0, width);
  b.hend = clamp((int)ceil(ph_end + start_h), 0, height);
  b.wend = clamp((int)ceil(pw_end + start_w), 0, width);
  return b;
}

// One work-item per top element (r, k, ph, pw). An empty bin gives 0; a
// region whose batch index is outside the input NaN.
__kernel void psroi_pool_forward(int count, int output_dim, int group, int height, int width,
                                 float spatial_scale, int batches, __global const float* bottom,
                                 __global const float* rois, __global float* top) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int pw = i % group, ph = (i / group) % group;
  const int k = (i / (group * group)) % output_dim, r = i / (group * group * output_dim);
  const PsBin b = ps_bin(rois + 5 * r, spatial_scale, ph, pw, group, height, width);
  if (b.batch < 0 || b.batch >= batches) {
    top[i] = NAN;
    return;
  }
  if (b.hend <= b.hstart || b.wend <= b.wstart) {
    top[i] = 0.f;
    return;
  }
  const int c = (k * group + ph) * group + pw;
  __global const float* plane =
      bottom + ((size_t)b.batch * output_dim * group * group + c) * height * width;
  float sum = 0.f;
  for (int h = b.hstart; h < b.hend; ++h)
    for (int w = b.wstart; w < b.wend; ++w) sum += plane[h * width + w];
  top[i] = sum / (float)((b.hend - b.hstart) * (b.wend - b.wstart));
}

// One work-item per bottom element (n, c, h, w): channel c feeds one bin
// (ph, pw) of one output channel; the sum, over the regions of batch n
// whose bin covers (h, w), of the bin's top diff over its area (no atomics).
__kernel void psroi_pool_backward(int count, int output_dim, int group, int height, int width,
                                  float spatial_scale, int regions,
                                  __global const float* top_diff, __global const float* rois,
                                  __global float* bottom_diff) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int channels = output_dim * group * group;
  const int w = i % width, h = (i / width) % height;
  const int c = (i / (width * height)) % channels, n = i / (width * height * channels);
  const int k = c / (group * group), ph = (c / group) % group, pw = c % group;
  float sum = 0.f;
  for (int r = 0; r < regions; ++r) {
    const PsBin b = ps_bin(rois + 5 * r, spatial_scale, ph, pw, group, height, width);
    if (b.batch != n || h < b.hstart || h >= b.hend || w < b.wstart || w >= b.wend) continue;
    const float area = (float)((b.hend - b.hstart) * (b.wend - b.wstart));
    sum += top_diff[(((size_t)r * output_dim + k) * group + ph) * group + pw] / area;
  }
  bottom_diff[i] = sum;
}
