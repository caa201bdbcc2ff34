// Level-1 helpers behind include/dlcaffe/math.hpp.

__kernel void axpy(const int n, const float a, __global const float* x,
                   const int x_off, __global float* y, const int y_off) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  y[y_off + i] += a * x[x_off + i];
}

__kernel void scale(const int n, const float a, __global float* x,
                    const int x_off) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  x[x_off + i] *= a;
}

__kernel void copy_floats(const int n, __global const float* x, const int x_off,
                          __global float* y, const int y_off) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  y[y_off + i] = x[x_off + i];
}

__kernel void set_floats(const int n, const float value, __global float* x,
                         const int x_off) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  x[x_off + i] = value;
}

// Partial sums of x*y (MODE 0), |x| (MODE 1) or x*x (MODE 2): work-group g
// writes partial[g]; the host adds the partials up. Each work-item strides
// over the array so that a fixed number of groups covers any n.
__kernel void reduce_partial(const int n, const int mode,
                             __global const float* x, const int x_off,
                             __global const float* y, const int y_off,
                             __global float* partial,
                             __local float* scratch) {
  const int lid = get_local_id(0);
  const int lsize = get_local_size(0);
  float acc = 0.f;
  for (int i = get_global_id(0); i < n; i += get_global_size(0)) {
    const float v = x[x_off + i];
    acc += mode == 0 ? v * y[y_off + i] : (mode == 1 ? fabs(v) : v * v);
  }
  scratch[lid] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = lsize / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] += scratch[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) partial[get_group_id(0)] = scratch[0];
}

// out[out_off] = scale * sum(x[x_off .. x_off + n)), by one work-group, so a
// loss can stay on the device. Launch with global = local = a power of two.
__kernel void sum_to_scalar(const int n, __global const float* x, const int x_off,
                            const float scale, __global float* out, const int out_off,
                            __local float* scratch) {
  const int lid = get_local_id(0);
  const int lsize = get_local_size(0);
  float acc = 0.f;
  for (int i = lid; i < n; i += lsize) acc += x[x_off + i];
  scratch[lid] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = lsize / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] += scratch[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) out[out_off] = scale * scratch[0];
}

// x_k[j] = value for j < end_k - end_{k-1} (end_{-1} = 0), k = 0..7, one
// work-item per float over all eight: Net::ClearParamDiffs zeroes a net's
// hundreds of small gradients in few launches. An unused buffer k has end_k
// equal to end_{k-1}.
#define SET_SEGMENT(k)          \
  if (i < end##k) {             \
    x##k[i - start] = value;    \
    return;                     \
  }                             \
  start = end##k;
__kernel void set_floats8(const float value, const int end0, const int end1, const int end2,
                          const int end3, const int end4, const int end5, const int end6,
                          const int end7, __global float* x0, __global float* x1,
                          __global float* x2, __global float* x3, __global float* x4,
                          __global float* x5, __global float* x6, __global float* x7) {
  const int i = GLOBAL_INDEX;
  int start = 0;
  SET_SEGMENT(0) SET_SEGMENT(1) SET_SEGMENT(2) SET_SEGMENT(3)
  SET_SEGMENT(4) SET_SEGMENT(5) SET_SEGMENT(6) SET_SEGMENT(7)
}
#undef SET_SEGMENT
