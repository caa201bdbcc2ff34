// The device's measured FMA throughput, for benchmarks to state their
// GEMM as a share of it (tools/gemm_bench --peak). Each work-item keeps ACC
// independent VW-wide accumulators (enough to cover the FMA latency on a
// CPU, whose one work-item per core runs this loop in explicit vectors) and
// runs `rounds` dependent steps on each: 2 * VW * ACC * rounds flops. The
// sum is stored so that nothing can be optimised away.
#ifndef VW
#define VW 16
#endif
#ifndef ACC
#define ACC 12
#endif
#define PEAK_CAT_(a, b) a##b
#define PEAK_CAT(a, b) PEAK_CAT_(a, b)
#if VW == 1
#define floatV float
#else
#define floatV PEAK_CAT(float, VW)
#endif

__kernel void fma_peak(const int rounds, const float scale, __global float* out) {
  const int id = get_global_id(0);
  floatV acc[ACC];
#pragma unroll
  for (int i = 0; i < ACC; ++i) acc[i] = (floatV)(id + i);
  const floatV m = (floatV)scale, a = (floatV)(1.f - scale);
  for (int r = 0; r < rounds; ++r) {
#pragma unroll
    for (int i = 0; i < ACC; ++i) acc[i] = fma(acc[i], m, a);
  }
  floatV sum = acc[0];
#pragma unroll
  for (int i = 1; i < ACC; ++i) sum += acc[i];
#if VW == 1
  out[id] = sum;
#else
  float parts[VW];
  PEAK_CAT(vstore, VW)(sum, 0, parts);
  float total = 0.f;
  for (int v = 0; v < VW; ++v) total += parts[v];
  out[id] = total;
#endif
}
