// Mean-variance normalization (Caffe's MVN) of rows of `dim` values, one
// work-group per row: y = x - mean, then optionally y /= (std + eps), with
// the variance taken as the mean of (x - mean)^2, as Caffe does. x, y, dy
// and dx are stored as DATA_TYPE (common.cl; float unless a 16-bit layer
// asks); stdev and every sum are float.

#define MVN_GROUP 64

// Sum of v over the work-group; every work-item gets it. `part` is reused, so
// the trailing barrier keeps the next call from overwriting it too early.
float mvn_group_sum(float v, __local float* part) {
  const int lid = get_local_id(0);
  part[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int span = MVN_GROUP / 2; span > 0; span >>= 1) {
    if (lid < span) part[lid] += part[lid + span];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float sum = part[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return sum;
}

// NORMALIZE_VARIANCE (0 or 1) is a build option: PoCL mishandles barriers
// after a run-time branch that returns early, so the variants are compiled.

// Writes y (may alias x) and, with NORMALIZE_VARIANCE, std + eps of each row
// for backward.
__kernel __attribute__((reqd_work_group_size(MVN_GROUP, 1, 1)))
void mvn_forward(const int dim, const float eps, __global const DATA_ELEM* x,
                 __global DATA_ELEM* y, __global float* stdev) {
  __local float part[MVN_GROUP];
  const int lid = get_local_id(0);
  const int row = get_group_id(0);
  __global const DATA_ELEM* xr = x + (size_t)row * dim;
  __global DATA_ELEM* yr = y + (size_t)row * dim;
  float acc = 0.f;
  for (int j = lid; j < dim; j += MVN_GROUP) acc += DATA_LOAD(xr, j);
  const float mean = mvn_group_sum(acc, part) / dim;
#if NORMALIZE_VARIANCE
  acc = 0.f;
  for (int j = lid; j < dim; j += MVN_GROUP) {
    const float d = DATA_LOAD(xr, j) - mean;
    acc += d * d;
  }
  const float s = sqrt(mvn_group_sum(acc, part) / dim) + eps;
  if (lid == 0) stdev[row] = s;
  for (int j = lid; j < dim; j += MVN_GROUP) DATA_STORE(yr, j, (DATA_LOAD(xr, j) - mean) / s);
#else
  for (int j = lid; j < dim; j += MVN_GROUP) DATA_STORE(yr, j, DATA_LOAD(xr, j) - mean);
#endif
}

// Caffe's gradient: dx = dy - mean(dy), and with NORMALIZE_VARIANCE
// dx = (dy - mean(dy) - y * mean(y * dy)) / (std + eps). dx may alias dy.
__kernel __attribute__((reqd_work_group_size(MVN_GROUP, 1, 1)))
void mvn_backward(const int dim, __global const DATA_ELEM* y, __global const DATA_ELEM* dy,
                  __global const float* stdev, __global DATA_ELEM* dx) {
  __local float part[MVN_GROUP];
  const int lid = get_local_id(0);
  const int row = get_group_id(0);
  const size_t base = (size_t)row * dim;
  float acc_dy = 0.f;
  for (int j = lid; j < dim; j += MVN_GROUP) acc_dy += DATA_LOAD(dy, base + j);
  const float mean_dy = mvn_group_sum(acc_dy, part) / dim;
#if NORMALIZE_VARIANCE
  float acc_ydy = 0.f;
  for (int j = lid; j < dim; j += MVN_GROUP)
    acc_ydy += DATA_LOAD(y, base + j) * DATA_LOAD(dy, base + j);
  const float mean_ydy = mvn_group_sum(acc_ydy, part) / dim;
  const float s = stdev[row];
  for (int j = lid; j < dim; j += MVN_GROUP)
    DATA_STORE(dx, base + j,
               (DATA_LOAD(dy, base + j) - mean_dy - DATA_LOAD(y, base + j) * mean_ydy) / s);
#else
  for (int j = lid; j < dim; j += MVN_GROUP)
    DATA_STORE(dx, base + j, DATA_LOAD(dy, base + j) - mean_dy);
#endif
}
