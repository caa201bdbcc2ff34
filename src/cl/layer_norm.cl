// Layer normalization (the "LayerNorm" layer) of `rows` rows of `dim`
// contiguous values: y = (x - mean) * rstd * gamma + beta, rstd =
// 1 / sqrt(var + eps), var the biased variance (two passes: the mean, then the
// mean of (x - mean)^2). Each row's mean and rstd are kept for backward.
//
// Two shapes of the row kernels: a work-group of LN_GROUP work-items per row
// (a GPU), or a work-item per row (a CPU; float4 runs inside the row).
//
// Build options: AFFINE (gamma given, else 1), BIAS (beta given, else 0), as
// 0 or 1; DATA_TYPE, how x, y, dy and dx are stored (common.cl; gamma, beta,
// the statistics and the sums are float). Absent buffers are bound to any
// valid buffer and never read.
//
// No contraction into fma: whether a compiler fuses a * b + c depends on the
// code around it, which differs between the storage types' variants (a
// 16-bit load is a conversion more). Intel's CPU compiler fused them
// differently, and a 16-bit layer's float parameter gradients then differed
// from the float32 layer's in the last bit; without contraction they are the
// same on every compiler (test_layer_norm_storage, test_rms_norm_storage).
#pragma OPENCL FP_CONTRACT OFF

#include "row_group_sum.cl"
#define LN_GROUP ROW_GROUP

#if AFFINE
#define LN_GAMMA(j) gamma[j]
#define LN_GAMMA4(j) vload4(0, gamma + (j))
#else
#define LN_GAMMA(j) 1.f
#define LN_GAMMA4(j) ((float4)1.f)
#endif
#if BIAS
#define LN_BETA(j) beta[j]
#define LN_BETA4(j) vload4(0, beta + (j))
#else
#define LN_BETA(j) 0.f
#define LN_BETA4(j) ((float4)0.f)
#endif

// The kernels below return early in no work-group kernel (PoCL mishandles
// barriers after a run-time branch that returns).

// y may alias x (in place): each element is read before it is written, by
// the same work-item.
__kernel __attribute__((reqd_work_group_size(LN_GROUP, 1, 1)))
void layer_norm_forward_group(const int dim, const float eps, __global const DATA_ELEM* x,
                              __global const float* gamma, __global const float* beta,
                              __global DATA_ELEM* y, __global float* mean_out,
                              __global float* rstd_out) {
  __local float2 part[LN_GROUP];
  const int lid = get_local_id(0);
  const int row = get_group_id(0);
  const size_t base = (size_t)row * dim;
  float acc = 0.f;
  for (int j = lid; j < dim; j += LN_GROUP) acc += DATA_LOAD(x, base + j);
  const float mean = row_group_sum2(acc, 0.f, part).x / dim;
  acc = 0.f;
  for (int j = lid; j < dim; j += LN_GROUP) {
    const float d = DATA_LOAD(x, base + j) - mean;
    acc += d * d;
  }
  const float rstd = 1.f / sqrt(row_group_sum2(acc, 0.f, part).x / dim + eps);
  if (lid == 0) {
    mean_out[row] = mean;
    rstd_out[row] = rstd;
  }
  for (int j = lid; j < dim; j += LN_GROUP)
    DATA_STORE(y, base + j, (DATA_LOAD(x, base + j) - mean) * rstd * LN_GAMMA(j) + LN_BETA(j));
}

__kernel void layer_norm_forward_item(const int rows, const int dim, const float eps,
                                      __global const DATA_ELEM* x, __global const float* gamma,
                                      __global const float* beta, __global DATA_ELEM* y,
                                      __global float* mean_out, __global float* rstd_out) {
  const int row = get_global_id(0);
  if (row >= rows) return;
  __global const DATA_ELEM* xr = x + (size_t)row * dim;
  __global DATA_ELEM* yr = y + (size_t)row * dim;
  const int dim4 = dim & ~3;
  float4 acc4 = 0.f;
  for (int j = 0; j < dim4; j += 4) acc4 += DATA_LOAD4(xr, j);
  float acc = (acc4.x + acc4.y) + (acc4.z + acc4.w);
  for (int j = dim4; j < dim; ++j) acc += DATA_LOAD(xr, j);
  const float mean = acc / dim;
  acc4 = 0.f;
  for (int j = 0; j < dim4; j += 4) {
    const float4 d = DATA_LOAD4(xr, j) - mean;
    acc4 += d * d;
  }
  acc = (acc4.x + acc4.y) + (acc4.z + acc4.w);
  for (int j = dim4; j < dim; ++j) {
    const float d = DATA_LOAD(xr, j) - mean;
    acc += d * d;
  }
  const float rstd = 1.f / sqrt(acc / dim + eps);
  mean_out[row] = mean;
  rstd_out[row] = rstd;
  for (int j = 0; j < dim4; j += 4)
    DATA_STORE4(yr, j, (DATA_LOAD4(xr, j) - mean) * rstd * LN_GAMMA4(j) + LN_BETA4(j));
  for (int j = dim4; j < dim; ++j)
    DATA_STORE(yr, j, (DATA_LOAD(xr, j) - mean) * rstd * LN_GAMMA(j) + LN_BETA(j));
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma, xhat =
// (x - mean) * rstd. dx may alias dy (in place).
__kernel __attribute__((reqd_work_group_size(LN_GROUP, 1, 1)))
void layer_norm_backward_group(const int dim, __global const DATA_ELEM* x,
                               __global const float* gamma, __global const DATA_ELEM* dy,
                               __global const float* mean_in, __global const float* rstd_in,
                               __global DATA_ELEM* dx) {
  __local float2 part[LN_GROUP];
  const int lid = get_local_id(0);
  const int row = get_group_id(0);
  const size_t base = (size_t)row * dim;
  const float mean = mean_in[row], rstd = rstd_in[row];
  float acc_g = 0.f, acc_gx = 0.f;
  for (int j = lid; j < dim; j += LN_GROUP) {
    const float g = DATA_LOAD(dy, base + j) * LN_GAMMA(j);
    acc_g += g;
    acc_gx += g * (DATA_LOAD(x, base + j) - mean) * rstd;
  }
  const float2 sums = row_group_sum2(acc_g, acc_gx, part) / dim;
  for (int j = lid; j < dim; j += LN_GROUP) {
    const float g = DATA_LOAD(dy, base + j) * LN_GAMMA(j);
    DATA_STORE(dx, base + j, rstd * (g - sums.x - (DATA_LOAD(x, base + j) - mean) * rstd * sums.y));
  }
}

__kernel void layer_norm_backward_item(const int rows, const int dim, __global const DATA_ELEM* x,
                                       __global const float* gamma, __global const DATA_ELEM* dy,
                                       __global const float* mean_in,
                                       __global const float* rstd_in, __global DATA_ELEM* dx) {
  const int row = get_global_id(0);
  if (row >= rows) return;
  __global const DATA_ELEM* xr = x + (size_t)row * dim;
  __global const DATA_ELEM* dyr = dy + (size_t)row * dim;
  __global DATA_ELEM* dxr = dx + (size_t)row * dim;
  const float mean = mean_in[row], rstd = rstd_in[row];
  const int dim4 = dim & ~3;
  float4 acc_g4 = 0.f, acc_gx4 = 0.f;
  for (int j = 0; j < dim4; j += 4) {
    const float4 g = DATA_LOAD4(dyr, j) * LN_GAMMA4(j);
    acc_g4 += g;
    acc_gx4 += g * (DATA_LOAD4(xr, j) - mean) * rstd;
  }
  float acc_g = (acc_g4.x + acc_g4.y) + (acc_g4.z + acc_g4.w);
  float acc_gx = (acc_gx4.x + acc_gx4.y) + (acc_gx4.z + acc_gx4.w);
  for (int j = dim4; j < dim; ++j) {
    const float g = DATA_LOAD(dyr, j) * LN_GAMMA(j);
    acc_g += g;
    acc_gx += g * (DATA_LOAD(xr, j) - mean) * rstd;
  }
  const float mean_g = acc_g / dim, mean_gx = acc_gx / dim;
  for (int j = 0; j < dim4; j += 4) {
    const float4 g = DATA_LOAD4(dyr, j) * LN_GAMMA4(j);
    DATA_STORE4(dxr, j, rstd * (g - mean_g - (DATA_LOAD4(xr, j) - mean) * rstd * mean_gx));
  }
  for (int j = dim4; j < dim; ++j) {
    const float g = DATA_LOAD(dyr, j) * LN_GAMMA(j);
    DATA_STORE(dxr, j, rstd * (g - mean_g - (DATA_LOAD(xr, j) - mean) * rstd * mean_gx));
  }
}

// The parameters' gradients, summed over rows: dgamma[j] = sum dy * xhat,
// dbeta[j] = sum dy (each only if its write_ flag is set). Work-item (j, c)
// sums column j over rows [c * rows_per_chunk, + rows_per_chunk): with
// `accumulate` (one chunk) it adds the sums to the diffs at j; otherwise it
// writes them at c * dim + j of the partial buffers, and
// layer_norm_param_finish adds the chunks up in order (deterministic).
__kernel void layer_norm_param_grad(const int rows, const int dim, const int rows_per_chunk,
                                    const int accumulate, const int write_gamma,
                                    const int write_beta, __global const DATA_ELEM* x,
                                    __global const DATA_ELEM* dy, __global const float* mean_in,
                                    __global const float* rstd_in, __global float* gamma_out,
                                    const int gamma_offset, __global float* beta_out,
                                    const int beta_offset) {
  const int j = get_global_id(0);
  const int chunk = get_global_id(1);
  if (j >= dim) return;
  const int r0 = chunk * rows_per_chunk;
  const int r1 = min(rows, r0 + rows_per_chunk);
  float sum_g = 0.f, sum_b = 0.f;
  for (int r = r0; r < r1; ++r) {
    const size_t k = (size_t)r * dim + j;
    const float d = DATA_LOAD(dy, k);
    sum_g += d * (DATA_LOAD(x, k) - mean_in[r]) * rstd_in[r];
    sum_b += d;
  }
  const size_t out = (size_t)chunk * dim + j;
  if (write_gamma)
    gamma_out[gamma_offset + out] = (accumulate ? gamma_out[gamma_offset + out] : 0.f) + sum_g;
  if (write_beta)
    beta_out[beta_offset + out] = (accumulate ? beta_out[beta_offset + out] : 0.f) + sum_b;
}

// The same sums in the CPU shape: work-item t sums the 16 columns from
// (t % blocks) * 16 (fewer in the last block) over the rows of chunk t /
// blocks in float16 vectors, and writes them to the partial buffers at
// chunk * dim + j of the gamma sums and beta_offset after that of the beta
// sums (always; layer_norm_param_finish adds them to the diffs).
__kernel void layer_norm_param_grad_cpu(const int rows, const int dim, const int rows_per_chunk,
                                        const int blocks, const int items,
                                        __global const DATA_ELEM* x, __global const DATA_ELEM* dy,
                                        __global const float* mean_in,
                                        __global const float* rstd_in,
                                        __global float* partial, const int beta_offset) {
  const int t = get_global_id(0);
  if (t >= items) return;
  const int chunk = t / blocks;
  const int j0 = (t % blocks) * 16;
  const int r0 = chunk * rows_per_chunk;
  const int r1 = min(rows, r0 + rows_per_chunk);
  const size_t out = (size_t)chunk * dim + j0;
  __global float* partial_gamma = partial;
  __global float* partial_beta = partial + beta_offset;
  if (j0 + 16 <= dim) {
    float16 sum_g = 0.f, sum_b = 0.f;
    for (int r = r0; r < r1; ++r) {
      const size_t k = (size_t)r * dim + j0;
      const float16 d = DATA_LOAD16(dy, k);
      sum_g += d * ((DATA_LOAD16(x, k) - mean_in[r]) * rstd_in[r]);
      sum_b += d;
    }
    vstore16(sum_g, 0, partial_gamma + out);
    vstore16(sum_b, 0, partial_beta + out);
  } else {
    for (int j = j0; j < dim; ++j) {
      float sum_g = 0.f, sum_b = 0.f;
      for (int r = r0; r < r1; ++r) {
        const size_t k = (size_t)r * dim + j;
        sum_g += DATA_LOAD(dy, k) * (DATA_LOAD(x, k) - mean_in[r]) * rstd_in[r];
        sum_b += DATA_LOAD(dy, k);
      }
      partial_gamma[out + j - j0] = sum_g;
      partial_beta[out + j - j0] = sum_b;
    }
  }
}

// partial holds `chunks` rows of dim gamma sums, then as many of beta sums.
__kernel void layer_norm_param_finish(const int dim, const int chunks, const int write_gamma,
                                      const int write_beta, __global const float* partial,
                                      __global float* gamma_diff, __global float* beta_diff) {
  const int j = get_global_id(0);
  if (j >= dim) return;
  if (write_gamma) {
    float sum = 0.f;
    for (int c = 0; c < chunks; ++c) sum += partial[(size_t)c * dim + j];
    gamma_diff[j] += sum;
  }
  if (write_beta) {
    float sum = 0.f;
    for (int c = 0; c < chunks; ++c) sum += partial[(size_t)(chunks + c) * dim + j];
    beta_diff[j] += sum;
  }
}
