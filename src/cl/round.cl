// Round (src/layers/round.cpp). MODE: 0 floor, 1 ceil, 2 halves to even
// (OpenCL's rint in the default rounding mode), 3 toward zero.

__kernel void round_forward(const int n, const int mode, __global const float* x,
                            __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const float v = x[i];
  y[i] = mode == 0 ? floor(v) : mode == 1 ? ceil(v) : mode == 2 ? rint(v) : trunc(v);
}
