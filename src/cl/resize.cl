// Resize (the "Resize" layer): nearest or separable (bi/tri)linear resampling
// of the last three axes of an (N * C) x D x H x W blob (fewer spatial axes
// are leading axes of size 1). The host computes, per axis, where each output
// index reads (core of the ONNX coordinate transform and rounding):
//
//   int table:   i0[out], i1[out] for D, then for H, then for W, followed by
//                begin[in], end[in] for D, then H, then W
//   float table: lambda[out] for D, then H, then W
//
// Output o along an axis is (1 - lambda) * in[i0] + lambda * in[i1] (nearest:
// i0 == i1, lambda 0). Backward is a gather: input j along an axis receives
// from the outputs [begin[j], end[j]) (contiguous, since i0 and i1 never
// decrease), each with weight (i0 == j ? 1 - lambda : 0) + (i1 == j ? lambda
// : 0), so no two work-items write one element and the sums have a fixed
// order (deterministic).
//
// Build options: LINEAR (0 or 1), SPATIAL (1, 2 or 3: the axes that may
// differ from 1; the others are skipped).

#define RESIZE_SIZES                                                                   \
  const int ID, const int IH, const int IW, const int OD, const int OH, const int OW

__kernel void resize_forward(const int count, RESIZE_SIZES, __global const float* x,
                             __global float* y, __global const int* itab,
                             __global const float* ftab) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int ow = i % OW;
  int t = i / OW;
  const int oh = t % OH;
  t /= OH;
  const int od = t % OD;
  const int nc = t / OD;
  __global const float* xc = x + (size_t)nc * ID * IH * IW;
  __global const int* tab_h = itab + 2 * OD;
  __global const int* tab_w = tab_h + 2 * OH;
  const int w0 = tab_w[ow];
#if SPATIAL >= 2
  const int h0 = tab_h[oh];
#else
  const int h0 = 0;
#endif
#if SPATIAL >= 3
  const int d0 = itab[od];
#else
  const int d0 = 0;
#endif
#if LINEAR
  const int w1 = tab_w[OW + ow];
  const float lw = ftab[OD + OH + ow];
#define RESIZE_ROW(d, h) \
  ((1.f - lw) * xc[((d) * IH + (h)) * IW + w0] + lw * xc[((d) * IH + (h)) * IW + w1])
#if SPATIAL >= 2
  const int h1 = tab_h[OH + oh];
  const float lh = ftab[OD + oh];
#define RESIZE_PLANE(d) ((1.f - lh) * RESIZE_ROW(d, h0) + lh * RESIZE_ROW(d, h1))
#else
#define RESIZE_PLANE(d) RESIZE_ROW(d, h0)
#endif
#if SPATIAL >= 3
  const int d1 = itab[OD + od];
  const float ld = ftab[od];
  y[i] = (1.f - ld) * RESIZE_PLANE(d0) + ld * RESIZE_PLANE(d1);
#else
  y[i] = RESIZE_PLANE(d0);
#endif
#else
  y[i] = xc[(d0 * IH + h0) * IW + w0];
#endif
}

// The weight with which output o (tables i0, i1, lambda of its axis) reads
// input j.
inline float resize_weight(__global const int* i0, __global const int* i1,
                           __global const float* lambda, const int o, const int j) {
  const float l = lambda[o];
  return (i0[o] == j ? 1.f - l : 0.f) + (i1[o] == j ? l : 0.f);
}

// dx (written, not added to) from dy, one work-item per input element.
__kernel void resize_backward(const int count, RESIZE_SIZES, __global const float* dy,
                              __global float* dx, __global const int* itab,
                              __global const float* ftab) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int iw = i % IW;
  int t = i / IW;
  const int ih = t % IH;
  t /= IH;
  const int id = t % ID;
  const int nc = t / ID;
  __global const float* dyc = dy + (size_t)nc * OD * OH * OW;
  __global const int* i0_d = itab;
  __global const int* i1_d = i0_d + OD;
  __global const int* i0_h = i1_d + OD;
  __global const int* i1_h = i0_h + OH;
  __global const int* i0_w = i1_h + OH;
  __global const int* i1_w = i0_w + OW;
  __global const int* range_d = i1_w + OW;  // begin[ID], end[ID]
  __global const int* range_h = range_d + 2 * ID;
  __global const int* range_w = range_h + 2 * IH;
  __global const float* lambda_d = ftab;
  __global const float* lambda_h = lambda_d + OD;
  __global const float* lambda_w = lambda_h + OH;
  float sum = 0.f;
  for (int od = range_d[id]; od < range_d[ID + id]; ++od) {
    const float wd = SPATIAL >= 3 ? resize_weight(i0_d, i1_d, lambda_d, od, id) : 1.f;
    for (int oh = range_h[ih]; oh < range_h[IH + ih]; ++oh) {
      const float wh = SPATIAL >= 2 ? resize_weight(i0_h, i1_h, lambda_h, oh, ih) : 1.f;
      __global const float* row = dyc + (od * OH + oh) * OW;
      float acc = 0.f;
      for (int ow = range_w[iw]; ow < range_w[IW + iw]; ++ow)
        acc += resize_weight(i0_w, i1_w, lambda_w, ow, iw) * row[ow];
      sum += wd * wh * acc;
    }
  }
  dx[i] = sum;
}
