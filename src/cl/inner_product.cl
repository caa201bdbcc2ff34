// Bias helpers of the InnerProduct layer; the products themselves go through
// Gemm(). The output is M x N row-major, the bias has N entries.

// top[m][n] += bias[n]
__kernel void add_bias(const int count, const int N, __global const float* bias,
                       __global float* top) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  top[i] += bias[i % N];
}

// bias_diff[n] += sum over m of top_diff[m][n], in two passes so that the
// work spreads over the rows as well as the columns (one work-item per
// column took 250 us a call on ConvNeXt's 50176-row products on an H100).
// First partial[g][n] = the sum of rows [g * rows, (g + 1) * rows) of column
// n (neighbouring work-items read neighbouring columns),
__kernel void bias_gradient_partials(const int M, const int N, const int rows,
                                     __global const float* top_diff,
                                     __global float* partial) {
  const int n = get_global_id(0), g = get_global_id(1);
  if (n >= N) return;
  const int end = min(M, (g + 1) * rows);
  float sum = 0.f;
  for (int m = g * rows; m < end; ++m) sum += top_diff[(size_t)m * N + n];
  partial[(size_t)g * N + n] = sum;
}

// then each column's `groups` partial sums added to its bias gradient.
__kernel void bias_gradient_finish(const int groups, const int N,
                                   __global const float* partial,
                                   __global float* bias_diff) {
  const int n = GLOBAL_INDEX;
  if (n >= N) return;
  float sum = 0.f;
  for (int g = 0; g < groups; ++g) sum += partial[(size_t)g * N + n];
  bias_diff[n] += sum;
}
