// Two per-channel sums over an outer x channels x inner blob (NCHW: outer =
// images, inner = H * W), in one of two shapes chosen by CPU_SHAPE:
//
// CPU_SHAPE 0 (GPU devices): many work-groups per channel, since one
//   work-group per channel leaves a GPU mostly idle when channels are few and
//   images large. Step 1 (channel_partial_sums): work-group (g, c) sums one
//   segment of the inner run of outer index g / segments; step 2
//   (channel_finish_sums): one work-group per channel adds its partials.
// CPU_SHAPE 1 (CPU devices, notes/pocl-performance.md): few work-items, each
//   sweeping long contiguous runs in float16 vectors, no __local memory and no
//   barriers. Step 1 (channel_run_sums): work-item (c, part) sums its block
//   of whole rows, or one segment of a row when a channel has too few rows to
//   keep the cores busy; step 2 (channel_finish_runs), only when a channel has
//   several parts, adds them.
//
// SUM_KIND 0 (moments): sums of d and d * d with d = a - shift_c, shift_c =
//   channel c's first value (shifted data: the variance without the
//   cancellation of sum(a^2) - sum(a)^2). b is not read.
// SUM_KIND 1 (products): sums of a and a * b.
//
// A result goes to out[off + index] and is written (acc 0), added (acc 1) or
// not wanted (acc -1).
#ifndef SUM_KIND
#define SUM_KIND 1
#endif
#ifndef CPU_SHAPE
#define CPU_SHAPE 0
#endif

inline void cs_store(__global float* out, const int index, const int acc, const float sum) {
  if (acc >= 0) out[index] = acc ? out[index] + sum : sum;
}

#if CPU_SHAPE

inline float cs_sum16(const float16 v) {
  const float8 h8 = v.lo + v.hi;
  const float4 h4 = h8.lo + h8.hi;
  const float2 h2 = h4.lo + h4.hi;
  return h2.x + h2.y;
}

// Work-item c * parts + part. Part `part` covers the rows (outer indices)
// [chunk * rows_per_part, + rows_per_part) and, within each, the inner
// positions [segment * segment_length, + segment_length), where chunk =
// part / segments, segment = part % segments. Its sums go to
// out1[off1 + c * parts + part] and out2[off2 + c * parts + part].
__kernel void channel_run_sums(const int outer, const int channels, const int inner,
                               const int parts, const int segments, const int rows_per_part,
                               const int segment_length, __global const float* a,
                               __global const float* b, __global float* out1,
                               const int off1, const int acc1, __global float* out2,
                               const int off2, const int acc2) {
  const int item = get_global_id(0);
  if (item >= channels * parts) return;
  const int c = item / parts, part = item - c * parts;
  const int chunk = part / segments, segment = part - chunk * segments;
  const int row_end = min(outer, (chunk + 1) * rows_per_part);
  const int begin = segment * segment_length, end = min(inner, begin + segment_length);
#if SUM_KIND == 0
  const float shift = a[c * inner];
  const float16 shift16 = (float16)shift;
#endif
  // Two vector accumulator pairs for independent chains, scalars for the
  // tails.
  float16 first0 = (float16)0.f, second0 = (float16)0.f;
  float16 first1 = (float16)0.f, second1 = (float16)0.f;
  float first = 0.f, second = 0.f;
  for (int o = chunk * rows_per_part; o < row_end; ++o) {
    const int base = (o * channels + c) * inner;
    __global const float* ra = a + base;
    int p = begin;
#if SUM_KIND == 0
    for (; p + 32 <= end; p += 32) {
      const float16 d0 = vload16(0, ra + p) - shift16;
      const float16 d1 = vload16(0, ra + p + 16) - shift16;
      first0 += d0;
      second0 = fma(d0, d0, second0);
      first1 += d1;
      second1 = fma(d1, d1, second1);
    }
    if (p + 16 <= end) {
      const float16 d = vload16(0, ra + p) - shift16;
      first0 += d;
      second0 = fma(d, d, second0);
      p += 16;
    }
    for (; p < end; ++p) {
      const float d = ra[p] - shift;
      first += d;
      second = fma(d, d, second);
    }
#else
    __global const float* rb = b + base;
    for (; p + 32 <= end; p += 32) {
      const float16 v0 = vload16(0, ra + p), v1 = vload16(0, ra + p + 16);
      first0 += v0;
      second0 = fma(v0, vload16(0, rb + p), second0);
      first1 += v1;
      second1 = fma(v1, vload16(0, rb + p + 16), second1);
    }
    if (p + 16 <= end) {
      const float16 v = vload16(0, ra + p);
      first0 += v;
      second0 = fma(v, vload16(0, rb + p), second0);
      p += 16;
    }
    for (; p < end; ++p) {
      const float v = ra[p];
      first += v;
      second = fma(v, rb[p], second);
    }
#endif
  }
  first += cs_sum16(first0 + first1);
  second += cs_sum16(second0 + second1);
  cs_store(out1, off1 + item, acc1, first);
  cs_store(out2, off2 + item, acc2, second);
}

// One work-item per channel adds its parts: partial[c * parts + t] (first
// sums) and partial[(channels + c) * parts + t] (second).
__kernel void channel_finish_runs(const int channels, const int parts,
                                  __global const float* partial, __global float* out1,
                                  const int off1, const int acc1, __global float* out2,
                                  const int off2, const int acc2) {
  const int c = get_global_id(0);
  if (c >= channels) return;
  float first = 0.f, second = 0.f;
  for (int t = 0; t < parts; ++t) {
    first += partial[c * parts + t];
    second += partial[(channels + c) * parts + t];
  }
  cs_store(out1, off1 + c, acc1, first);
  cs_store(out2, off2 + c, acc2, second);
}

#else  // GPU shape

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

// One work-group per channel adds its partials (laid out as in
// channel_partial_sums).
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
    cs_store(out1, out1_off + c, acc1, first);
    cs_store(out2, out2_off + c, acc2, second);
  }
}

#endif  // CPU_SHAPE
