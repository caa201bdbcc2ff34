// Depthwise 2-D convolution (group == channels == num_output): each channel
// is convolved with its own kh x kw filter. Direct kernels instead of im2col +
// one tiny GEMM per channel. Geometry comes as -D defines (C, H, W, HO, WO,
// KH, KW, SH, SW, PH, PW, DH, DW), so index arithmetic is by constants.
//
// Two shapes of the same work (-DPLANES, as in im2col.cl), same kernel names
// and arguments:
//   PLANES=0 (GPU): one work-item per output element (forward), per input
//     element (backward data), one work-group per weight (backward weight).
//   PLANES=1 (CPU): one work-item (work-group size 1) per (image, channel)
//     plane (forward, backward data) or per channel (backward weight), walking
//     whole rows. Output columns whose every tap lies inside the input row
//     are done 16 or 8 at a time with explicit vectors (PoCL does not
//     vectorise loops itself); the few edge columns one at a time with checks.
//
// The GPU shape reads and writes the images as DATA_TYPE (common.cl; 16-bit
// convolutions take it on every device); weights, bias and sums are float.
#ifndef PLANES
#define PLANES 0
#endif

#if PLANES
#if DATA_TYPE != 0
#error "the planes shape of depthwise_convolution.cl reads float images only"
#endif

#define KK (KH * KW)
// Output columns [OW_LO, OW_HI) read only inside the input row for every kw:
// ow * SW - PW >= 0 and ow * SW - PW + (KW - 1) * DW <= W - 1.
#define OW_FIRST ((PW + SW - 1) / SW)
#define OW_END ((W - 1 + PW - (KW - 1) * DW) >= 0 ? (W - 1 + PW - (KW - 1) * DW) / SW + 1 : 0)
#define OW_LO min(OW_FIRST, WO)
#define OW_HI max(OW_LO, min(OW_END, WO))

// 16 / 8 input values p[0], p[SW], p[2 * SW], ... (reads nothing past the last).
inline float16 load16(__global const float* p) {
#if SW == 1
  return vload16(0, p);
#elif SW == 2
  return (float16)(vload16(0, p).even, vload16(0, p + 15).odd);
#else
  float t[16];
  for (int j = 0; j < 16; ++j) t[j] = p[j * SW];
  return vload16(0, t);
#endif
}
inline float8 load8(__global const float* p) {
#if SW == 1
  return vload8(0, p);
#elif SW == 2
  return (float8)(vload8(0, p).even, vload8(0, p + 7).odd);
#else
  float t[8];
  for (int j = 0; j < 8; ++j) t[j] = p[j * SW];
  return vload8(0, t);
#endif
}

// p[j * SW] += v[j] for j < 16 / 8 (touches nothing past the last target).
inline void add16(__global float* p, const float16 v) {
#if SW == 1
  vstore16(vload16(0, p) + v, 0, p);
#elif SW == 2
  const float8 z = (float8)0.f;
  const uint16 mix = (uint16)(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
  vstore16(vload16(0, p) + shuffle2(v.lo, z, mix), 0, p);            // p[0..14] even
  vstore16(vload16(0, p + 15) + shuffle2(z, v.hi, mix), 0, p + 15);  // p[16..30] even
#else
  float t[16];
  vstore16(v, 0, t);
  for (int j = 0; j < 16; ++j) p[j * SW] += t[j];
#endif
}
inline void add8(__global float* p, const float8 v) {
#if SW == 1
  vstore8(vload8(0, p) + v, 0, p);
#elif SW == 2
  const float4 z = (float4)0.f;
  const uint8 mix = (uint8)(0, 4, 1, 5, 2, 6, 3, 7);
  vstore8(vload8(0, p) + shuffle2(v.lo, z, mix), 0, p);
  vstore8(vload8(0, p + 7) + shuffle2(z, v.hi, mix), 0, p + 7);
#else
  float t[8];
  vstore8(v, 0, t);
  for (int j = 0; j < 8; ++j) p[j * SW] += t[j];
#endif
}

inline float sum16(const float16 v) {
  const float8 a = v.lo + v.hi;
  const float4 b = a.lo + a.hi;
  const float2 d = b.lo + b.hi;
  return d.x + d.y;
}

// One output (edge columns): taps outside the input are skipped.
inline float output_at(__global const float* xp, const float* wk, const float bias,
                       const int oh, const int ow) {
  float sum = bias;
  for (int kh = 0; kh < KH; ++kh) {
    const int h = oh * SH - PH + kh * DH;
    if (h < 0 || h >= H) continue;
    for (int kw = 0; kw < KW; ++kw) {
      const int ww = ow * SW - PW + kw * DW;
      if (ww >= 0 && ww < W) sum = fma(wk[kh * KW + kw], xp[h * W + ww], sum);
    }
  }
  return sum;
}

// The work-item owns plane (n, c) = get_global_id(0) of count planes.
__kernel void depthwise_forward(const int count, __global const float* x,
                                __global const float* w, __global const float* bias,
                                const int has_bias, __global float* y) {
  const int plane = get_global_id(0);
  if (plane >= count) return;
  const int c = plane % C;
  __global const float* xp = x + plane * H * W;
  __global float* yp = y + plane * HO * WO;
  float wk[KK];
  for (int k = 0; k < KK; ++k) wk[k] = w[c * KK + k];
  const float b = has_bias ? bias[c] : 0.f;
  for (int oh = 0; oh < HO; ++oh) {
    __global float* yr = yp + oh * WO;
    int ow = 0;
    for (; ow < OW_LO; ++ow) yr[ow] = output_at(xp, wk, b, oh, ow);
    for (; ow + 16 <= OW_HI; ow += 16) {
      float16 acc = (float16)b;
      for (int kh = 0; kh < KH; ++kh) {
        const int h = oh * SH - PH + kh * DH;
        if (h < 0 || h >= H) continue;
        __global const float* xr = xp + h * W + ow * SW - PW;
        for (int kw = 0; kw < KW; ++kw)
          acc = fma((float16)wk[kh * KW + kw], load16(xr + kw * DW), acc);
      }
      vstore16(acc, 0, yr + ow);
    }
    for (; ow + 8 <= OW_HI; ow += 8) {
      float8 acc = (float8)b;
      for (int kh = 0; kh < KH; ++kh) {
        const int h = oh * SH - PH + kh * DH;
        if (h < 0 || h >= H) continue;
        __global const float* xr = xp + h * W + ow * SW - PW;
        for (int kw = 0; kw < KW; ++kw)
          acc = fma((float8)wk[kh * KW + kw], load8(xr + kw * DW), acc);
      }
      vstore8(acc, 0, yr + ow);
    }
    for (; ow < WO; ++ow) yr[ow] = output_at(xp, wk, b, oh, ow);
  }
}

#if SW <= 2
// Input columns [IW_LO, IW_HI) gather only from inside the output row for
// every kw: iw + PW - (KW - 1) * DW >= 0 and (iw + PW) / SW <= WO - 1.
#define IW_LO min(max((KW - 1) * DW - PW, 0), W)
#define IW_HI max(IW_LO, min(SW * WO - PW, W))

// The output row whose window row kh covers input row ih, or -1.
inline int covering_row(const int ih, const int kh) {
  const int th = ih + PH - kh * DH;  // = oh * SH
  if (th < 0 || th % SH != 0) return -1;
  return th / SH < HO ? th / SH : -1;
}

// One input diff (edge columns): the outputs whose window covers it.
inline float input_diff_at(__global const float* dyp, const float* wk, const int ih,
                           const int iw) {
  float sum = 0.f;
  for (int kh = 0; kh < KH; ++kh) {
    const int oh = covering_row(ih, kh);
    if (oh < 0) continue;
    for (int kw = 0; kw < KW; ++kw) {
      const int tw = iw + PW - kw * DW;  // = ow * SW
      if (tw < 0 || tw % SW != 0 || tw / SW >= WO) continue;
      sum = fma(wk[kh * KW + kw], dyp[oh * WO + tw / SW], sum);
    }
  }
  return sum;
}

// Input diffs iw .. iw + N - 1 (all inside [IW_LO, IW_HI)), N = 16 or 8
// (input_diffs16, input_diffs8: one body at two widths). Stride 2: the even
// and the odd columns each read a contiguous run of dy per tap (HALF wide),
// interleaved by MIX at the end. SW is a compile-time constant, so only one
// branch of each `SW == 1` test is compiled in.
#define DEFINE_INPUT_DIFFS(N, HALF, MIX)                                                    \
  inline float##N input_diffs##N(__global const float* dyp, const float* wk, const int ih, \
                                 const int iw) {                                           \
    float##N acc = (float##N)0.f;                                                          \
    float##HALF even = (float##HALF)0.f, odd = (float##HALF)0.f;                           \
    for (int kh = 0; kh < KH; ++kh) {                                                      \
      const int oh = covering_row(ih, kh);                                                 \
      if (oh < 0) continue;                                                                \
      __global const float* dyr = dyp + oh * WO;                                           \
      for (int kw = 0; kw < KW; ++kw) {                                                    \
        const int tw = iw + PW - kw * DW; /* >= 0 */                                       \
        const float t = wk[kh * KW + kw];                                                  \
        if (SW == 1)                                                                       \
          acc = fma((float##N)t, vload##N(0, dyr + tw), acc);                              \
        else if (tw % 2 == 0)                                                              \
          even = fma((float##HALF)t, vload##HALF(0, dyr + tw / 2), even);                  \
        else                                                                               \
          odd = fma((float##HALF)t, vload##HALF(0, dyr + (tw + 1) / 2), odd);              \
      }                                                                                    \
    }                                                                                      \
    return SW == 1 ? acc : shuffle2(even, odd, (uint##N)MIX);                              \
  }
DEFINE_INPUT_DIFFS(16, 8, (0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15))
DEFINE_INPUT_DIFFS(8, 4, (0, 4, 1, 5, 2, 6, 3, 7))
#endif  // SW <= 2

// The work-item owns input plane (n, c). Strides 1 and 2 across: a gather
// along each input row (the forward with the filter mirrored). Larger
// strides: it scatters each output's diff to the inputs under its window, kw
// by kw along the row (read-modify-writes of overlapping vectors back to back
// would stall the CPU's store forwarding).
__kernel void depthwise_backward_data(const int count, __global const float* dy,
                                      __global const float* w, __global float* dx) {
  const int plane = get_global_id(0);
  if (plane >= count) return;
  const int c = plane % C;
  __global const float* dyp = dy + plane * HO * WO;
  __global float* dxp = dx + plane * H * W;
  float wk[KK];
  for (int k = 0; k < KK; ++k) wk[k] = w[c * KK + k];
#if SW <= 2
  for (int ih = 0; ih < H; ++ih) {
    __global float* xr = dxp + ih * W;
    int iw = 0;
    for (; iw < IW_LO; ++iw) xr[iw] = input_diff_at(dyp, wk, ih, iw);
    for (; iw + 16 <= IW_HI; iw += 16) vstore16(input_diffs16(dyp, wk, ih, iw), 0, xr + iw);
    for (; iw + 8 <= IW_HI; iw += 8) vstore8(input_diffs8(dyp, wk, ih, iw), 0, xr + iw);
    for (; iw < W; ++iw) xr[iw] = input_diff_at(dyp, wk, ih, iw);
  }
#else
  int i = 0;
  for (; i + 16 <= H * W; i += 16) vstore16((float16)0.f, 0, dxp + i);
  for (; i < H * W; ++i) dxp[i] = 0.f;
  for (int oh = 0; oh < HO; ++oh) {
    __global const float* dyr = dyp + oh * WO;
    for (int kh = 0; kh < KH; ++kh) {
      const int h = oh * SH - PH + kh * DH;
      if (h < 0 || h >= H) continue;
      __global float* xr = dxp + h * W;  // the input row
      for (int kw = 0; kw < KW; ++kw) {
        const float wt = wk[kh * KW + kw];
        int ow = 0;
        for (; ow < OW_LO; ++ow) {
          const int ww = ow * SW - PW + kw * DW;
          if (ww >= 0 && ww < W) xr[ww] = fma(wt, dyr[ow], xr[ww]);
        }
        for (; ow + 16 <= OW_HI; ow += 16)
          add16(xr + ow * SW - PW + kw * DW, wt * vload16(0, dyr + ow));
        for (; ow + 8 <= OW_HI; ow += 8)
          add8(xr + ow * SW - PW + kw * DW, wt * vload8(0, dyr + ow));
        for (; ow < WO; ++ow) {
          const int ww = ow * SW - PW + kw * DW;
          if (ww >= 0 && ww < W) xr[ww] = fma(wt, dyr[ow], xr[ww]);
        }
      }
    }
  }
#endif
}

// The work-item owns channel c = get_global_id(0): w_diff[c] += sum over
// images and outputs of dy * x, one float16 of partial sums per tap.
__kernel void depthwise_backward_weight(const int num, __global const float* x,
                                        __global const float* dy, __global float* w_diff,
                                        __local float* scratch) {
  const int c = get_global_id(0);
  if (c >= C) return;
  float16 acc[KK];
  float edge[KK];
  for (int k = 0; k < KK; ++k) {
    acc[k] = (float16)0.f;
    edge[k] = 0.f;
  }
  for (int n = 0; n < num; ++n) {
    __global const float* xp = x + (n * C + c) * H * W;
    __global const float* dyp = dy + (n * C + c) * HO * WO;
    for (int oh = 0; oh < HO; ++oh) {
      __global const float* dyr = dyp + oh * WO;
      for (int kh = 0; kh < KH; ++kh) {
        const int h = oh * SH - PH + kh * DH;
        if (h < 0 || h >= H) continue;
        __global const float* xr = xp + h * W;
        int ow = 0;
        for (; ow < OW_LO; ++ow)
          for (int kw = 0; kw < KW; ++kw) {
            const int ww = ow * SW - PW + kw * DW;
            if (ww >= 0 && ww < W) edge[kh * KW + kw] = fma(dyr[ow], xr[ww], edge[kh * KW + kw]);
          }
        for (; ow + 16 <= OW_HI; ow += 16) {
          const float16 d = vload16(0, dyr + ow);
          for (int kw = 0; kw < KW; ++kw)
            acc[kh * KW + kw] =
                fma(d, load16(xr + ow * SW - PW + kw * DW), acc[kh * KW + kw]);
        }
        for (; ow + 8 <= OW_HI; ow += 8) {
          const float8 d = vload8(0, dyr + ow);
          for (int kw = 0; kw < KW; ++kw)
            acc[kh * KW + kw].lo =
                fma(d, load8(xr + ow * SW - PW + kw * DW), acc[kh * KW + kw].lo);
        }
        for (; ow < WO; ++ow)
          for (int kw = 0; kw < KW; ++kw) {
            const int ww = ow * SW - PW + kw * DW;
            if (ww >= 0 && ww < W) edge[kh * KW + kw] = fma(dyr[ow], xr[ww], edge[kh * KW + kw]);
          }
      }
    }
  }
  for (int k = 0; k < KK; ++k) w_diff[c * KK + k] += edge[k] + sum16(acc[k]);
}

#else  // PLANES == 0: GPU shape

// One work-item per output element: y = bias + sum_k w[c, k] * x[c, at k].
__kernel void depthwise_forward(const int count, __global const DATA_ELEM* x,
                                __global const float* w, __global const float* bias,
                                const int has_bias, __global DATA_ELEM* y) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  const int ow = i % WO;
  const int oh = (i / WO) % HO;
  const int plane = i / (WO * HO);  // n * C + c
  const int c = plane % C;
  __global const DATA_ELEM* xp = x + plane * H * W;
  __global const float* wc = w + c * KH * KW;
  float sum = has_bias ? bias[c] : 0.f;
  for (int kh = 0; kh < KH; ++kh) {
    const int h = oh * SH - PH + kh * DH;
    if (h < 0 || h >= H) continue;
    for (int kw = 0; kw < KW; ++kw) {
      const int ww = ow * SW - PW + kw * DW;
      if (ww >= 0 && ww < W) sum += wc[kh * KW + kw] * DATA_LOAD(xp, h * W + ww);
    }
  }
  DATA_STORE(y, i, sum);
}

// One work-item per input element: gathers the outputs whose window covers it.
__kernel void depthwise_backward_data(const int count, __global const DATA_ELEM* dy,
                                      __global const float* w, __global DATA_ELEM* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  const int iw = i % W;
  const int ih = (i / W) % H;
  const int plane = i / (W * H);
  const int c = plane % C;
  __global const DATA_ELEM* dyp = dy + plane * HO * WO;
  __global const float* wc = w + c * KH * KW;
  float sum = 0.f;
  for (int kh = 0; kh < KH; ++kh) {
    const int th = ih + PH - kh * DH;  // = oh * SH
    if (th < 0 || th % SH != 0) continue;
    const int oh = th / SH;
    if (oh >= HO) continue;
    for (int kw = 0; kw < KW; ++kw) {
      const int tw = iw + PW - kw * DW;
      if (tw < 0 || tw % SW != 0) continue;
      const int ow = tw / SW;
      if (ow < WO) sum += wc[kh * KW + kw] * DATA_LOAD(dyp, oh * WO + ow);
    }
  }
  DATA_STORE(dx, i, sum);
}

// One work-group per weight (c, kh, kw): w_diff += sum over images and output
// positions of dy * x. Launch with global = C*KH*KW * local.
__kernel void depthwise_backward_weight(const int num, __global const DATA_ELEM* x,
                                        __global const DATA_ELEM* dy, __global float* w_diff,
                                        __local float* scratch) {
  const int weight = get_group_id(0);
  const int c = weight / (KH * KW);
  const int kh = (weight / KW) % KH;
  const int kw = weight % KW;
  const int lid = get_local_id(0);
  const int lsize = get_local_size(0);
  float sum = 0.f;
  const int per_image = HO * WO;
  for (int j = lid; j < num * per_image; j += lsize) {
    const int n = j / per_image;
    const int oh = (j / WO) % HO;
    const int ow = j % WO;
    const int h = oh * SH - PH + kh * DH;
    const int ww = ow * SW - PW + kw * DW;
    if (h >= 0 && h < H && ww >= 0 && ww < W)
      sum += DATA_LOAD(dy, (n * C + c) * per_image + j % per_image) *
             DATA_LOAD(x, ((n * C + c) * H + h) * W + ww);
  }
  scratch[lid] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = lsize / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] += scratch[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) w_diff[weight] += scratch[0];
}

#endif  // PLANES
