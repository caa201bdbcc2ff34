// AbsVal: y = |x|.

__kernel void absval_forward(const int n, __global const float* x, __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  y[i] = fabs(x[i]);
}

// dy/dx = sign(x), with sign(0) = 0 as Caffe's caffe_sign.
__kernel void absval_backward(const int n, __global const float* x, __global const float* dy,
                              __global float* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const float v = x[i];
  dx[i] = v > 0.f ? dy[i] : (v < 0.f ? -dy[i] : 0.f);
}
