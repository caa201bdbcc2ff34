// Fast R-CNN's region pooling (src/layers/roi_pooling.cpp). A region's
// geometry: its batch index, its first row and column in the map and its
// size in cells. Bin p of a region of `size` cells in `bins` bins spans
// floor(p * size / bins) to ceil((p + 1) * size / bins), in integers: Fast
// R-CNN writes it with a float bin size, whose rounding (and OpenCL's
// division, not correctly rounded on every device) can move a bound by one
// where the exact quotient is a whole number.

typedef struct {
  int batch, start_h, start_w, size_h, size_w;
} RoiGeometry;

inline RoiGeometry roi_geometry(__global const float* roi, float spatial_scale) {
  RoiGeometry g;
  g.batch = (int)roi[0];
  g.start_w = (int)round(roi[1] * spatial_scale);
  g.start_h = (int)round(roi[2] * spatial_scale);
  g.size_w = max((int)round(roi[3] * spatial_scale) - g.start_w + 1, 1);
  g.size_h = max((int)round(roi[4] * spatial_scale) - g.start_h + 1, 1);
  return g;
}

inline int bin_start(int p, int size, int bins) { return p * size / bins; }
inline int bin_end(int p, int size, int bins) { return ((p + 1) * size + bins - 1) / bins; }

// One work-item per top element (r, c, ph, pw): the bin's max and where it
// lies in the (n, c) plane (-1 for none). An empty bin gives 0, a region
// whose batch index is outside the input NaN (the indices are not read on
// the host, which would stall the queue).
__kernel void roi_pool_forward(int count, int channels, int height, int width, int pooled_h,
                               int pooled_w, float spatial_scale, int batches,
                               __global const float* bottom, __global const float* rois,
                               __global float* top, __global int* argmax) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int pw = i % pooled_w, ph = (i / pooled_w) % pooled_h;
  const int c = (i / (pooled_w * pooled_h)) % channels, r = i / (pooled_w * pooled_h * channels);
  const RoiGeometry g = roi_geometry(rois + 5 * r, spatial_scale);
  const int hstart = clamp(bin_start(ph, g.size_h, pooled_h) + g.start_h, 0, height);
  const int hend = clamp(bin_end(ph, g.size_h, pooled_h) + g.start_h, 0, height);
  const int wstart = clamp(bin_start(pw, g.size_w, pooled_w) + g.start_w, 0, width);
  const int wend = clamp(bin_end(pw, g.size_w, pooled_w) + g.start_w, 0, width);
  float best = g.batch >= 0 && g.batch < batches ? 0.f : NAN;
  int where = -1;
  if (g.batch >= 0 && g.batch < batches && hend > hstart && wend > wstart) {
    __global const float* plane = bottom + ((size_t)g.batch * channels + c) * height * width;
    best = -INFINITY;
    for (int h = hstart; h < hend; ++h)
      for (int w = wstart; w < wend; ++w)
        if (plane[h * width + w] > best) {
          best = plane[h * width + w];
          where = h * width + w;
        }
  }
  top[i] = best;
  argmax[i] = where;
}

// One work-item per bottom element (n, c, h, w): the sum of the top diffs of
// the bins whose max it was, over the regions of batch n (the bins that
// can cover it only: no atomics).
__kernel void roi_pool_backward(int count, int channels, int height, int width, int pooled_h,
                                int pooled_w, float spatial_scale, int regions,
                                __global const float* top_diff, __global const float* rois,
                                __global const int* argmax, __global float* bottom_diff) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int w = i % width, h = (i / width) % height;
  const int c = (i / (width * height)) % channels, n = i / (width * height * channels);
  float sum = 0.f;
  for (int r = 0; r < regions; ++r) {
    const RoiGeometry g = roi_geometry(rois + 5 * r, spatial_scale);
    if (g.batch != n) continue;
    // The bins whose rows hold row d of the region: floor(p * S / B) <= d <
    // ceil((p + 1) * S / B), that is floor(d * B / S) <= p <
    // ceil((d + 1) * B / S); likewise the columns. Clipping to the map only
    // shrinks bins; the argmax decides.
    const int dh = h - g.start_h, dw = w - g.start_w;
    if (dh < 0 || dw < 0 || dh >= g.size_h || dw >= g.size_w) continue;
    const int ph_start = dh * pooled_h / g.size_h;
    const int ph_end = min(((dh + 1) * pooled_h + g.size_h - 1) / g.size_h, pooled_h);
    const int pw_start = dw * pooled_w / g.size_w;
    const int pw_end = min(((dw + 1) * pooled_w + g.size_w - 1) / g.size_w, pooled_w);
    const size_t base = ((size_t)r * channels + c) * pooled_h * pooled_w;
    for (int ph = ph_start; ph < ph_end; ++ph)
      for (int pw = pw_start; pw < pw_end; ++pw)
        if (argmax[base + ph * pooled_w + pw] == h * width + w) sum += top_diff[base + ph * pooled_w + pw];
  }
  bottom_diff[i] = sum;
}
