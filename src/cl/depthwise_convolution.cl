// Depthwise 2-D convolution (group == channels == num_output): each channel
// is convolved with its own kh x kw filter. Direct kernels instead of im2col +
// one tiny GEMM per channel. Geometry comes as -D defines (C, H, W, HO, WO,
// KH, KW, SH, SW, PH, PW, DH, DW), so index arithmetic is by constants.

// One work-item per output element: y = bias + sum_k w[c, k] * x[c, at k].
__kernel void depthwise_forward(const int count, __global const float* x,
                                __global const float* w, __global const float* bias,
                                const int has_bias, __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  const int ow = i % WO;
  const int oh = (i / WO) % HO;
  const int plane = i / (WO * HO);  // n * C + c
  const int c = plane % C;
  __global const float* xp = x + plane * H * W;
  __global const float* wc = w + c * KH * KW;
  float sum = has_bias ? bias[c] : 0.f;
  for (int kh = 0; kh < KH; ++kh) {
    const int h = oh * SH - PH + kh * DH;
    if (h < 0 || h >= H) continue;
    for (int kw = 0; kw < KW; ++kw) {
      const int ww = ow * SW - PW + kw * DW;
      if (ww >= 0 && ww < W) sum += wc[kh * KW + kw] * xp[h * W + ww];
    }
  }
  y[i] = sum;
}

// One work-item per input element: gathers the outputs whose window covers it.
__kernel void depthwise_backward_data(const int count, __global const float* dy,
                                      __global const float* w, __global float* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  const int iw = i % W;
  const int ih = (i / W) % H;
  const int plane = i / (W * H);
  const int c = plane % C;
  __global const float* dyp = dy + plane * HO * WO;
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
      if (ow < WO) sum += wc[kh * KW + kw] * dyp[oh * WO + ow];
    }
  }
  dx[i] = sum;
}

// One work-group per weight (c, kh, kw): w_diff += sum over images and output
// positions of dy * x. Launch with global = C*KH*KW * local.
__kernel void depthwise_backward_weight(const int num, __global const float* x,
                                        __global const float* dy, __global float* w_diff,
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
      sum += dy[(n * C + c) * per_image + j % per_image] * x[((n * C + c) * H + h) * W + ww];
  }
  scratch[lid] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = lsize / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] += scratch[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) w_diff[weight] += scratch[0];
}
