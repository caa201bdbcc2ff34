// Embed (Caffe's Embed layer): top row m = weight row index[m] (+ bias).
// weight is input_dim x num_output. An index is valid when it is an integer
// in [0, input_dim); rows of invalid indices become NaN.

#define EMBED_GROUP 64

inline int embed_row(float v, int input_dim) {
  const int k = (int)v;
  return ((float)k == v && k >= 0 && k < input_dim) ? k : -1;
}

// One work-group scans the indices and records the first invalid one in
// error = {position, value bits} unless a position is there already (the
// host resets it to -1).
__kernel __attribute__((reqd_work_group_size(EMBED_GROUP, 1, 1)))
void embed_check_indices(const int m, const int input_dim, __global const float* index,
                         __global int* error) {
  __local int first_bad[EMBED_GROUP];
  const int lid = get_local_id(0);
  int bad = INT_MAX;
  for (int i = lid; i < m; i += EMBED_GROUP)
    if (embed_row(index[i], input_dim) < 0) bad = min(bad, i);
  first_bad[lid] = bad;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int span = EMBED_GROUP / 2; span > 0; span >>= 1) {
    if (lid < span) first_bad[lid] = min(first_bad[lid], first_bad[lid + span]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0 && first_bad[0] != INT_MAX && error[0] < 0) {
    error[0] = first_bad[0];
    error[1] = as_int(index[first_bad[0]]);
  }
}

__kernel void embed_forward(const int count, const int num_output, const int input_dim,
                            const int bias_term, __global const float* index,
                            __global const float* weight, __global const float* bias,
                            __global DATA_ELEM* top) {
  const int i = GLOBAL_INDEX;
  if (i >= count) return;
  const int m = i / num_output;
  const int d = i - m * num_output;
  const int k = embed_row(index[m], input_dim);
  DATA_STORE(top, i, k < 0 ? NAN : weight[k * num_output + d] + (bias_term ? bias[d] : 0.f));
}

// One work-item per weight row k scans the batch and adds the top gradient
// of every position that used row k: repeated indices need no atomics.
__kernel void embed_weight_backward(const int input_dim, const int num_output, const int m,
                                    __global const float* index, __global const DATA_ELEM* top_diff,
                                    __global float* weight_diff) {
  const int k = GLOBAL_INDEX;
  if (k >= input_dim) return;
  __global float* row = weight_diff + (size_t)k * num_output;
  for (int p = 0; p < m; ++p) {
    if (embed_row(index[p], input_dim) != k) continue;
    __global const DATA_ELEM* g = top_diff + (size_t)p * num_output;
    for (int d = 0; d < num_output; ++d) row[d] += DATA_LOAD(g, d);
  }
}

// bias_diff[d] += sum over positions of top_diff[., d].
__kernel void embed_bias_backward(const int num_output, const int m,
                                  __global const DATA_ELEM* top_diff, __global float* bias_diff) {
  const int d = GLOBAL_INDEX;
  if (d >= num_output) return;
  float sum = 0.f;
  for (int p = 0; p < m; ++p) sum += DATA_LOAD(top_diff, (size_t)p * num_output + d);
  bias_diff[d] += sum;
}
