// Gradient of the Split layer: the bottom diff is the sum of the top diffs.

// out = a + b (the first two tops; more are added with axpy)
__kernel void split_sum2(const int n, __global const float* a, __global const float* b,
                         __global float* out) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  out[i] = a[i] + b[i];
}
