// Bias (Caffe's Bias layer): y = x + b broadcast over the outer and inner
// dimensions: x is outer x bias_dim x inner, b has bias_dim values.

__kernel void bias_forward(const int count, const int bias_dim, const int inner,
                           __global const float* x, __global const float* bias,
                           __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  y[i] = x[i] + bias[(i / inner) % bias_dim];
}

// One work-group per bias element j: the sum of dy over outer x inner, added
// to (accumulate) or written into bias_diff[j]. The group size is a power of
// two, the size of `part`.
__kernel void bias_gradient(const int outer, const int bias_dim, const int inner,
                            const int accumulate, __global const float* dy,
                            __global float* bias_diff, __local float* part) {
  const int lid = get_local_id(0);
  const int group = get_local_size(0);
  const int j = get_group_id(0);
  const int m = outer * inner;
  float acc = 0.f;
  for (int t = lid; t < m; t += group) {
    const int o = t / inner;
    acc += dy[(o * bias_dim + j) * inner + (t - o * inner)];
  }
  part[lid] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int span = group / 2; span > 0; span >>= 1) {
    if (lid < span) part[lid] += part[lid + span];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) bias_diff[j] = accumulate ? bias_diff[j] + part[0] : part[0];
}
