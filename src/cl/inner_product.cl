// Bias helpers of the InnerProduct layer; the products themselves go through
// Gemm(). The output is M x N row-major, the bias has N entries.

// top[m][n] += bias[n]
__kernel void add_bias(const int count, const int N, __global const float* bias,
                       __global float* top) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  top[i] += bias[i % N];
}

// bias_diff[n] += sum over m of top_diff[m][n]: one work-item per column, so
// each bias entry has a single writer.
__kernel void accumulate_bias_gradient(const int M, const int N,
                                       __global const float* top_diff,
                                       __global float* bias_diff) {
  const int n = GLOBAL_INDEX;
  if (n >= N) return;
  float sum = 0.f;
  for (int m = 0; m < M; ++m) sum += top_diff[m * N + n];
  bias_diff[n] += sum;
}
