// Threshold: y = x > threshold ? 1 : 0. It has no gradient (as in Caffe).

__kernel void threshold_forward(const int n, const float threshold, __global const float* x,
                                __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  y[i] = x[i] > threshold ? 1.f : 0.f;
}
