// Weight fillers on the device. Every random value is a function of a 64-bit
// key, drawn once per fill on the host from the context's seeded generator,
// and of the element's index: one launch fills a blob of any size, and a seed
// gives the same weights on every device. The mixing is common.cl's integer
// hash, applied three times so that each key permutes the 2^32 counters.

inline uint filler_bits(const uint key_lo, const uint key_hi, const uint counter) {
  return hash_uint(key_hi ^ hash_uint(key_lo ^ hash_uint(counter)));
}

// In [0, 1), 24 random bits.
inline float filler_uniform(const uint key_lo, const uint key_hi, const uint counter) {
  return (float)(filler_bits(key_lo, key_hi, counter) >> 8) * (1.0f / 16777216.0f);
}

// Sparse gaussian's keep/drop coin: its own stream of the same key.
#define FILLER_COIN_STREAM 0x9e3779b9U

// y[i] = min + (max - min) * u, u uniform in [0, 1).
__kernel void fill_uniform(const int n, const uint key_lo, const uint key_hi, const float min,
                           const float max, __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  y[i] = min + (max - min) * filler_uniform(key_lo, key_hi, (uint)i);
}

// y[i] = mean + std * z, z standard normal by Box-Muller: elements 2j and
// 2j + 1 are the cosine and sine halves of one pair of uniforms. Each element
// is then kept with probability `keep` (sparse gaussian; 1 keeps all).
__kernel void fill_gaussian(const int n, const uint key_lo, const uint key_hi, const float mean,
                            const float std, const float keep, __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const uint pair = (uint)i >> 1;
  // u1 in (0, 1] so that the logarithm is finite: |z| <= 5.8.
  const float u1 = 1.0f - filler_uniform(key_lo, key_hi, 2u * pair);
  const float u2 = filler_uniform(key_lo, key_hi, 2u * pair + 1u);
  const float radius = sqrt(-2.0f * log(u1));
  const float angle = 6.28318530717958647692f * u2;
  const float z = radius * ((i & 1) ? sin(angle) : cos(angle));
  const bool kept =
      keep >= 1.0f || filler_uniform(key_lo ^ FILLER_COIN_STREAM, key_hi, (uint)i) < keep;
  y[i] = kept ? mean + std * z : 0.0f;
}

// positive_unitball's second step: each of `rows` rows of `dim` values
// divided by its sum (one work-item per row; the filler is for small blobs).
__kernel void fill_normalize_rows(const int rows, const int dim, __global float* y) {
  const int r = GLOBAL_INDEX;
  if (r >= rows) return;
  __global float* row = y + (size_t)r * dim;
  float sum = 0.0f;
  for (int j = 0; j < dim; ++j) sum += row[j];
  for (int j = 0; j < dim; ++j) row[j] /= sum;
}

// Deconvolution's upsampling kernel over (C, 1, k, k): f = ceil(k / 2),
// c = (2f - 1 - f % 2) / (2f), each value (1 - |x/f - c|)(1 - |y/f - c|).
__kernel void fill_bilinear(const int n, const int k, __global float* y) {
  const int i = GLOBAL_INDEX;
  if (i >= n) return;
  const int f = (k + 1) / 2;
  const float c = (2 * f - 1 - f % 2) / (2.0f * f);
  const float col = (float)(i % k), row = (float)((i / k) % k);
  y[i] = (1.0f - fabs(col / f - c)) * (1.0f - fabs(row / f - c));
}
