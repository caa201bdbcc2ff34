// SSD's default boxes (src/layers/prior_box.cpp): a work-item per prior of a
// cell, its four corners and four variances.

__kernel void prior_box_forward(int cells, int priors, int width, float step_w, float step_h,
                                float offset, float img_w, float img_h, int clip,
                                __global const float* sizes,      // priors x (width, height)
                                __global const float* variances,  // 4
                                __global float* top) {
  const int i = get_global_id(0);
  if (i >= cells * priors) return;
  const int cell = i / priors, k = i % priors;
  const float cx = (cell % width + offset) * step_w, cy = (cell / width + offset) * step_h;
  const float half_w = sizes[2 * k] / 2, half_h = sizes[2 * k + 1] / 2;
  float box[4] = {(cx - half_w) / img_w, (cy - half_h) / img_h, (cx + half_w) / img_w,
                  (cy + half_h) / img_h};
  const int variance_start = cells * priors * 4;
  for (int c = 0; c < 4; ++c) {
    top[4 * i + c] = clip ? fmin(fmax(box[c], 0.f), 1.f) : box[c];
    top[variance_start + 4 * i + c] = variances[c];
  }
}
