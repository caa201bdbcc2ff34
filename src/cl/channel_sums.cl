// Two per-channel sums over an outer x channels x inner blob (NCHW: outer =
// images, inner = H * W), spread over many work-groups per channel: one
// work-group per channel leaves a GPU mostly idle when channels are few and
// images large. Step 1 (channel_partial_sums): work-group (g, c) sums one
// segment of the inner run of outer index g / segments; step 2
// (channel_finish_sums): one work-group per channel adds its partials.
//
// SUM_KIND 0 (moments): sums of d and d * d with d = a - shift_c, shift_c =
//   channel c's first value (shifted data: the variance without the
//   cancellation of sum(a^2) - sum(a)^2). b is not read.
// SUM_KIND 1 (products): sums of a and a * b.
#ifndef SUM_KIND
#define SUM_KIND 1
#endif
#define CS_GROUP 64

// The sum of v over the work-group, in every work-item.
inline float cs_group_sum(float v, __local float* part) {
  const int lid = get_local_id(0);
  part[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int span = CS_GROUP / 2; span > 0; span >>= 1) {
    if (lid < span) part[lid] += part[lid + span];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float sum = part[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return sum;
}

// partial[c * parts + g] and partial[(channels + c) * parts + g], parts =
// outer * segments.
__kernel __attribute__((reqd_work_group_size(CS_GROUP, 1, 1)))
void channel_partial_sums(const int channels, const int inner, const int segments,
                          const int segment_length, const int parts,
                          __global const float* a, __global const float* b,
                          __global float* partial) {
  __local float part[CS_GROUP];
  const int lid = get_local_id(0);
  const int g = get_group_id(0), c = get_group_id(1);
  const int o = g / segments, segment = g - o * segments;
  const int base = (o * channels + c) * inner;
  const int begin = segment * segment_length, end = min(inner, begin + segment_length);
  float first = 0.f, second = 0.f;
#if SUM_KIND == 0
  const float shift = a[c * inner];
  for (int p = begin + lid; p < end; p += CS_GROUP) {
    const float d = a[base + p] - shift;
    first += d;
    second = fma(d, d, second);
  }
#else
  for (int p = begin + lid; p < end; p += CS_GROUP) {
    const float v = a[base + p];
    first += v;
    second = fma(v, b[base + p], second);
  }
#endif
  first = cs_group_sum(first, part);
  second = cs_group_sum(second, part);
  if (lid == 0) {
    partial[c * parts + g] = first;
    partial[(channels + c) * parts + g] = second;
  }
}

// out1[out1_off + c] (+)= the first sums, out2[out2_off + c] (+)= the second
// (acc1 / acc2: 1 accumulate, 0 write, -1 not wanted).
__kernel __attribute__((reqd_work_group_size(CS_GROUP, 1, 1)))
void channel_finish_sums(const int channels, const int parts,
                         __global const float* partial, __global float* out1,
                         const int out1_off, const int acc1, __global float* out2,
                         const int out2_off, const int acc2) {
  __local float part[CS_GROUP];
  const int lid = get_local_id(0), c = get_group_id(0);
  float first = 0.f, second = 0.f;
  for (int t = lid; t < parts; t += CS_GROUP) {
    first += partial[c * parts + t];
    second += partial[(channels + c) * parts + t];
  }
  first = cs_group_sum(first, part);
  second = cs_group_sum(second, part);
  if (lid == 0) {
    if (acc1 >= 0) out1[out1_off + c] = acc1 ? out1[out1_off + c] + first : first;
    if (acc2 >= 0) out2[out2_off + c] = acc2 ? out2[out2_off + c] + second : second;
  }
}
