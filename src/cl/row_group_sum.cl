// The row kernels' work-group sum (layer_norm.cl, rms_norm.cl): a row to a
// work-group of ROW_GROUP work-items, which sum two values over the group in
// a fixed order; every work-item gets both. The trailing barrier keeps a
// later call from overwriting `part` too early.

#define ROW_GROUP 64

float2 row_group_sum2(float a, float b, __local float2* part) {
  const int lid = get_local_id(0);
  part[lid] = (float2)(a, b);
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int span = ROW_GROUP / 2; span > 0; span >>= 1) {
    if (lid < span) part[lid] += part[lid + span];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float2 sum = part[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return sum;
}
