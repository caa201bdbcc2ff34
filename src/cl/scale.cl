// Scale (Caffe's Scale layer): y = x * s broadcast over the outer and inner
// dimensions: x is outer x scale_dim x inner, s has scale_dim values.

__kernel void scale_forward(const int count, const int scale_dim, const int inner,
                            __global const float* x, __global const float* scale,
                            __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  y[i] = x[i] * scale[(i / inner) % scale_dim];
}

// dx = dy * s; dx may alias dy.
__kernel void scale_bottom_backward(const int count, const int scale_dim, const int inner,
                                    __global const float* dy, __global const float* scale,
                                    __global float* dx) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  dx[i] = dy[i] * scale[(i / inner) % scale_dim];
}

// One work-group per scale element j: the sum of dy * x over outer x inner,
// added to (accumulate) or written into scale_diff[j]. The group size is a
// power of two, the size of `part`.
__kernel void scale_gradient(const int outer, const int scale_dim, const int inner,
                             const int accumulate, __global const float* dy,
                             __global const float* x, __global float* scale_diff,
                             __local float* part) {
  const int lid = get_local_id(0);
  const int group = get_local_size(0);
  const int j = get_group_id(0);
  const int m = outer * inner;
  float acc = 0.f;
  for (int t = lid; t < m; t += group) {
    const int o = t / inner;
    const int i = (o * scale_dim + j) * inner + (t - o * inner);
    acc += dy[i] * x[i];
  }
  part[lid] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int span = group / 2; span > 0; span >>= 1) {
    if (lid < span) part[lid] += part[lid + span];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) scale_diff[j] = accumulate ? scale_diff[j] + part[0] : part[0];
}
