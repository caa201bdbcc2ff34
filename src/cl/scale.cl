// Scale (Caffe's Scale layer): y = x * s broadcast over the outer and inner
// dimensions: x is outer x scale_dim x inner, s has scale_dim values.

// y = x * s (+ b, the bias term's blob, when has_bias), clamped at 0 when
// relu (a fused ReLU); y may alias x.
__kernel void scale_forward(const int count, const int scale_dim, const int inner,
                            __global const float* x, __global const float* scale,
                            const int has_bias, __global const float* bias,
                            const int relu, __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  const int j = (i / inner) % scale_dim;
  const float v = has_bias ? fma(x[i], scale[j], bias[j]) : x[i] * scale[j];
  y[i] = relu ? fmax(v, 0.f) : v;
}

// dx = dy * s; dx may alias dy.
__kernel void scale_bottom_backward(const int count, const int scale_dim, const int inner,
                                    __global const float* dy, __global const float* scale,
                                    __global float* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  dx[i] = dy[i] * scale[(i / inner) % scale_dim];
}
