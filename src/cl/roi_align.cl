// RoiAlign (src/layers/roi_align.cpp), torchvision's roi_align forward in
// its float arithmetic (no contraction): one work-item per output element.
#pragma OPENCL FP_CONTRACT OFF

inline float roi_align_sample(__global const float* x, int height, int width, float y, float xx) {
  if (y < -1.f || y > height || xx < -1.f || xx > width) return 0.f;
  if (y <= 0.f) y = 0.f;
  if (xx <= 0.f) xx = 0.f;
  int y_low = (int)y, x_low = (int)xx, y_high, x_high;
  if (y_low >= height - 1) {
    y_high = y_low = height - 1;
    y = (float)y_low;
  } else {
    y_high = y_low + 1;
  }
  if (x_low >= width - 1) {
    x_high = x_low = width - 1;
    xx = (float)x_low;
  } else {
    x_high = x_low + 1;
  }
  const float ly = y - y_low, lx = xx - x_low, hy = 1.f - ly, hx = 1.f - lx;
  const float v1 = x[y_low * width + x_low], v2 = x[y_low * width + x_high];
  const float v3 = x[y_high * width + x_low], v4 = x[y_high * width + x_high];
  const float w1 = hy * hx, w2 = hy * lx, w3 = ly * hx, w4 = ly * lx;
  return w1 * v1 + w2 * v2 + w3 * v3 + w4 * v4;
}

__kernel void roi_align_forward(const int n, const int channels, const int height,
                                const int width, const int images, const int pooled_h,
                                const int pooled_w, const float spatial_scale,
                                const int sampling_ratio, const int half_pixel,
                                __global const float* x, __global const float* rois,
                                __global const float* image_of, __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const int pw = i % pooled_w, ph = i / pooled_w % pooled_h;
  const int c = i / pooled_w / pooled_h % channels, r = i / pooled_w / pooled_h / channels;
  const int image = (int)image_of[r];
  if (image < 0 || image >= images) {
    y[i] = NAN;  // an image index out of range: visible, never plausible
    return;
  }
  __global const float* roi = rois + r * 4;
  const float offset = half_pixel ? 0.5f : 0.f;
  const float start_w = roi[0] * spatial_scale - offset, start_h = roi[1] * spatial_scale - offset;
  const float end_w = roi[2] * spatial_scale - offset, end_h = roi[3] * spatial_scale - offset;
  float roi_w = end_w - start_w, roi_h = end_h - start_h;
  if (!half_pixel) {
    roi_w = fmax(roi_w, 1.f);
    roi_h = fmax(roi_h, 1.f);
  }
  const float bin_h = roi_h / pooled_h, bin_w = roi_w / pooled_w;
  const int grid_h = sampling_ratio > 0 ? sampling_ratio : (int)ceil(roi_h / pooled_h);
  const int grid_w = sampling_ratio > 0 ? sampling_ratio : (int)ceil(roi_w / pooled_w);
  const float count = (float)max(grid_h * grid_w, 1);
  __global const float* plane = x + ((size_t)image * channels + c) * height * width;
  float sum = 0.f;
  for (int iy = 0; iy < grid_h; ++iy) {
    const float yy = start_h + ph * bin_h + (iy + .5f) * bin_h / grid_h;
    for (int ix = 0; ix < grid_w; ++ix) {
      const float xx = start_w + pw * bin_w + (ix + .5f) * bin_w / grid_w;
      sum += roi_align_sample(plane, height, width, yy, xx);
    }
  }
  y[i] = sum / count;
}
