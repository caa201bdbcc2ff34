// RMS normalization (the "RMSNorm" layer) of `rows` rows of `dim` contiguous
// values: y = x * rstd * scale, rstd = 1 / sqrt(mean(x^2) + eps). Each row's
// rstd is kept for backward.
//
// As layer_norm.cl: a work-group of RMS_GROUP work-items per row (a GPU), or
// a work-item per row (a CPU; float4 runs inside the row).
//
// Build options: AFFINE (scale given, else 1), 0 or 1; DATA_TYPE, how x, y,
// dy and dx are stored (common.cl; the scale, rstd and the sums are float).
// An absent buffer is bound to any valid buffer and never read.
//
// No contraction into fma, for the reason layer_norm.cl gives: a 16-bit
// layer's parameter gradients equal the float32 layer's on every compiler.
#pragma OPENCL FP_CONTRACT OFF

#include "row_group_sum.cl"
#define RMS_GROUP ROW_GROUP

#if AFFINE
#define RMS_SCALE(j) scale[j]
#define RMS_SCALE4(j) vload4(0, scale + (j))
#else
#define RMS_SCALE(j) 1.f
#define RMS_SCALE4(j) ((float4)1.f)
#endif

// No early return in the work-group kernels (PoCL mishandles barriers after
// a run-time branch that returns). y may alias x: each element is read
// before it is written, by the same work-item.
__kernel __attribute__((reqd_work_group_size(RMS_GROUP, 1, 1)))
void rms_norm_forward_group(const int dim, const float eps, __global const DATA_ELEM* x,
                            __global const float* scale, __global DATA_ELEM* y,
                            __global float* rstd_out) {
  __local float2 part[RMS_GROUP];
  const int lid = get_local_id(0);
  const int row = get_group_id(0);
  const size_t base = (size_t)row * dim;
  float acc = 0.f;
  for (int j = lid; j < dim; j += RMS_GROUP) {
    const float v = DATA_LOAD(x, base + j);
    acc += v * v;
  }
  const float rstd = 1.f / sqrt(row_group_sum2(acc, 0.f, part).x / dim + eps);
  if (lid == 0) rstd_out[row] = rstd;
  for (int j = lid; j < dim; j += RMS_GROUP)
    DATA_STORE(y, base + j, DATA_LOAD(x, base + j) * rstd * RMS_SCALE(j));
}

__kernel void rms_norm_forward_item(const int rows, const int dim, const float eps,
                                    __global const DATA_ELEM* x, __global const float* scale,
                                    __global DATA_ELEM* y, __global float* rstd_out) {
  const int row = get_global_id(0);
  if (row >= rows) return;
  __global const DATA_ELEM* xr = x + (size_t)row * dim;
  __global DATA_ELEM* yr = y + (size_t)row * dim;
  const int dim4 = dim & ~3;
  float4 acc4 = 0.f;
  for (int j = 0; j < dim4; j += 4) {
    const float4 v = DATA_LOAD4(xr, j);
    acc4 += v * v;
  }
  float acc = (acc4.x + acc4.y) + (acc4.z + acc4.w);
  for (int j = dim4; j < dim; ++j) {
    const float v = DATA_LOAD(xr, j);
    acc += v * v;
  }
  const float rstd = 1.f / sqrt(acc / dim + eps);
  rstd_out[row] = rstd;
  for (int j = 0; j < dim4; j += 4) DATA_STORE4(yr, j, DATA_LOAD4(xr, j) * rstd * RMS_SCALE4(j));
  for (int j = dim4; j < dim; ++j) DATA_STORE(yr, j, DATA_LOAD(xr, j) * rstd * RMS_SCALE(j));
}

// dx = rstd * (g - xhat * mean(g * xhat)), g = dy * scale, xhat = x * rstd.
// dx may alias dy (in place).
__kernel __attribute__((reqd_work_group_size(RMS_GROUP, 1, 1)))
void rms_norm_backward_group(const int dim, __global const DATA_ELEM* x,
                             __global const float* scale, __global const DATA_ELEM* dy,
                             __global const float* rstd_in, __global DATA_ELEM* dx) {
  __local float2 part[RMS_GROUP];
  const int lid = get_local_id(0);
  const int row = get_group_id(0);
  const size_t base = (size_t)row * dim;
  const float rstd = rstd_in[row];
  float acc = 0.f;
  for (int j = lid; j < dim; j += RMS_GROUP)
    acc += DATA_LOAD(dy, base + j) * RMS_SCALE(j) * DATA_LOAD(x, base + j) * rstd;
  const float mean_gx = row_group_sum2(acc, 0.f, part).x / dim;
  for (int j = lid; j < dim; j += RMS_GROUP) {
    const float xhat = DATA_LOAD(x, base + j) * rstd;
    DATA_STORE(dx, base + j, rstd * (DATA_LOAD(dy, base + j) * RMS_SCALE(j) - xhat * mean_gx));
  }
}

__kernel void rms_norm_backward_item(const int rows, const int dim, __global const DATA_ELEM* x,
                                     __global const float* scale, __global const DATA_ELEM* dy,
                                     __global const float* rstd_in, __global DATA_ELEM* dx) {
  const int row = get_global_id(0);
  if (row >= rows) return;
  __global const DATA_ELEM* xr = x + (size_t)row * dim;
  __global const DATA_ELEM* dyr = dy + (size_t)row * dim;
  __global DATA_ELEM* dxr = dx + (size_t)row * dim;
  const float rstd = rstd_in[row];
  const int dim4 = dim & ~3;
  float4 acc4 = 0.f;
  for (int j = 0; j < dim4; j += 4)
    acc4 += DATA_LOAD4(dyr, j) * RMS_SCALE4(j) * DATA_LOAD4(xr, j) * rstd;
  float acc = (acc4.x + acc4.y) + (acc4.z + acc4.w);
  for (int j = dim4; j < dim; ++j)
    acc += DATA_LOAD(dyr, j) * RMS_SCALE(j) * DATA_LOAD(xr, j) * rstd;
  const float mean_gx = acc / dim;
  for (int j = 0; j < dim4; j += 4) {
    const float4 xhat = DATA_LOAD4(xr, j) * rstd;
    DATA_STORE4(dxr, j, rstd * (DATA_LOAD4(dyr, j) * RMS_SCALE4(j) - xhat * mean_gx));
  }
  for (int j = dim4; j < dim; ++j)
    DATA_STORE(dxr, j,
               rstd * (DATA_LOAD(dyr, j) * RMS_SCALE(j) - DATA_LOAD(xr, j) * rstd * mean_gx));
}

// dscale[j] = sum over rows of dy * xhat. Work-item (j, c) sums column j over
// rows [c * rows_per_chunk, + rows_per_chunk): with `accumulate` (one chunk)
// it adds the sum to the diff; otherwise it writes it at c * dim + j of
// `out`, and rms_norm_param_finish adds the chunks up in order
// (deterministic).
__kernel void rms_norm_param_grad(const int rows, const int dim, const int rows_per_chunk,
                                  const int accumulate, __global const DATA_ELEM* x,
                                  __global const DATA_ELEM* dy, __global const float* rstd_in,
                                  __global float* out) {
  const int j = get_global_id(0);
  const int chunk = get_global_id(1);
  if (j >= dim) return;
  const int r0 = chunk * rows_per_chunk;
  const int r1 = min(rows, r0 + rows_per_chunk);
  float sum = 0.f;
  for (int r = r0; r < r1; ++r) {
    const size_t k = (size_t)r * dim + j;
    sum += DATA_LOAD(dy, k) * DATA_LOAD(x, k) * rstd_in[r];
  }
  const size_t o = (size_t)chunk * dim + j;
  out[o] = (accumulate ? out[o] : 0.f) + sum;
}

__kernel void rms_norm_param_finish(const int dim, const int chunks,
                                    __global const float* partial, __global float* scale_diff) {
  const int j = get_global_id(0);
  if (j >= dim) return;
  float sum = 0.f;
  for (int c = 0; c < chunks; ++c) sum += partial[(size_t)c * dim + j];
  scale_diff[j] += sum;
}
