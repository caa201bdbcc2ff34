// NVIDIA's warp-level tensor-core instruction mma.sync, issued from OpenCL C
// through inline PTX (tools/mma_probe.cpp builds, checks and times these).
// Only NVIDIA's OpenCL compiler takes PTX; anywhere else the build fails.
//
// Built for one input type at a time (-DMMA_F16, -DMMA_BF16 or -DMMA_TF32),
// so that a driver or GPU lacking one instruction loses only that type. The
// two shapes take alike operands (four 32-bit registers of A, two of B, four
// floats of C and of D), so one asm template serves them all.
//
// Fragment layouts, from the PTX ISA, 9.7.14.5.8 "Matrix Fragments for
// mma.m16n8k16 with floating point type" (f16, bf16) and 9.7.14.5.7 "Matrix
// Fragments for mma.m16n8k8" (tf32), with g = groupID = laneid >> 2 and
// t = threadID_in_group = laneid % 4; (r, c) is (row, column):
//   m16n8k16 A (16x16): register 0 holds (g, 2t), (g, 2t+1); 1: (g+8, 2t),
//     (g+8, 2t+1); 2: (g, 2t+8), (g, 2t+9); 3: (g+8, 2t+8), (g+8, 2t+9).
//   m16n8k16 B (16x8): register 0 holds (2t, g), (2t+1, g); 1: (2t+8, g),
//     (2t+9, g).
//   m16n8k8 tf32 A (16x8): registers 0..3 hold (g, t), (g+8, t), (g, t+4),
//     (g+8, t+4).  B (8x8): registers 0, 1 hold (t, g), (t+4, g).
//   C and D of both shapes (16x8 f32): registers 0..3 hold (g, 2t),
//     (g, 2t+1), (g+8, 2t), (g+8, 2t+1).
// A register of two 16-bit elements holds the lower-indexed one ("low to
// high" in the ISA's tables) in its low half.
//
// Memory layouts of the probes: A row-major (a[r * K + c]), B column-major
// (b[c * K + r], so a lane's pair of B elements is contiguous, as the
// instruction's ".col" names), C and D row-major (c[r * 8 + c]).

#if defined(MMA_F16)
#define MMA_NAME(kernel) kernel##_f16
#define MMA_INSTRUCTION "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
#elif defined(MMA_BF16)
#define MMA_NAME(kernel) kernel##_bf16
#define MMA_INSTRUCTION "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
#elif defined(MMA_TF32)
#define MMA_NAME(kernel) kernel##_tf32
#define MMA_INSTRUCTION "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
#else
#error "build mma_probe.cl with -DMMA_F16, -DMMA_BF16 or -DMMA_TF32"
#endif

// The instruction on the calling lane's fragments: D = A*B + C (d may be c).
inline void mma(float d[4], const uint a[4], const uint b[2], const float c[4]) {
  asm(MMA_INSTRUCTION " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
        "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

inline void load_c(const __global float* c, const uint g, const uint t, float cf[4]) {
  cf[0] = c[g * 8 + 2 * t];
  cf[1] = c[g * 8 + 2 * t + 1];
  cf[2] = c[(g + 8) * 8 + 2 * t];
  cf[3] = c[(g + 8) * 8 + 2 * t + 1];
}

inline void store_d(__global float* d, const uint g, const uint t, const float df[4]) {
  d[g * 8 + 2 * t] = df[0];
  d[g * 8 + 2 * t + 1] = df[1];
  d[(g + 8) * 8 + 2 * t] = df[2];
  d[(g + 8) * 8 + 2 * t + 1] = df[3];
}

#ifdef MMA_TF32
// tf32 operands are float bits whose low 13 bits the instruction ignores:
// round to nearest (ties away from zero) first, as a GEMM would.
inline uint to_tf32(const float x) {
  uint bits;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(bits) : "f"(x));
  return bits;
}

// One warp computes D = A*B + C for float A (16x8) and B (8x8).
__kernel __attribute__((reqd_work_group_size(32, 1, 1))) void mma_probe_tf32(
    const __global float* a, const __global float* b, const __global float* c,
    __global float* d) {
  const uint lane = get_local_id(0), g = lane >> 2, t = lane & 3;
  uint af[4], bf[2];
  af[0] = to_tf32(a[g * 8 + t]);
  af[1] = to_tf32(a[(g + 8) * 8 + t]);
  af[2] = to_tf32(a[g * 8 + t + 4]);
  af[3] = to_tf32(a[(g + 8) * 8 + t + 4]);
  bf[0] = to_tf32(b[g * 8 + t]);
  bf[1] = to_tf32(b[g * 8 + t + 4]);
  float cf[4], df[4];
  load_c(c, g, t, cf);
  mma(df, af, bf, cf);
  store_d(d, g, t, df);
}
#else
inline uint pack_halves(const ushort lo, const ushort hi) {
  return (uint)lo | ((uint)hi << 16);
}

// One warp computes D = A*B + C for 16-bit A (16x16) and B (16x8), given as
// their bits.
__kernel __attribute__((reqd_work_group_size(32, 1, 1))) void MMA_NAME(mma_probe)(
    const __global ushort* a, const __global ushort* b, const __global float* c,
    __global float* d) {
  const uint lane = get_local_id(0), g = lane >> 2, t = lane & 3;
  uint af[4], bf[2];
  af[0] = pack_halves(a[g * 16 + 2 * t], a[g * 16 + 2 * t + 1]);
  af[1] = pack_halves(a[(g + 8) * 16 + 2 * t], a[(g + 8) * 16 + 2 * t + 1]);
  af[2] = pack_halves(a[g * 16 + 2 * t + 8], a[g * 16 + 2 * t + 9]);
  af[3] = pack_halves(a[(g + 8) * 16 + 2 * t + 8], a[(g + 8) * 16 + 2 * t + 9]);
  bf[0] = pack_halves(b[g * 16 + 2 * t], b[g * 16 + 2 * t + 1]);
  bf[1] = pack_halves(b[g * 16 + 2 * t + 8], b[g * 16 + 2 * t + 9]);
  float cf[4], df[4];
  load_c(c, g, t, cf);
  mma(df, af, bf, cf);
  store_d(d, g, t, df);
}
#endif

// Peak rate: every warp runs `iterations` rounds of four independent mma
// (four accumulators, so that each one's latency hides behind the others')
// with every A and B register `bits`, and stores the accumulators' sum so
// that nothing can be dropped: 2 * M * N * K * 4 * iterations flops a warp.
// The accumulators start unequal, so that the compiler cannot prove the four
// asm statements alike and merge them.
__kernel void MMA_NAME(mma_throughput)(const int iterations, const uint bits,
                                       __global float* out) {
  const uint af[4] = {bits, bits, bits, bits}, bf[2] = {bits, bits};
  float acc[4][4];
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 4; ++i) acc[j][i] = j;
  for (int r = 0; r < iterations; ++r) {
    mma(acc[0], af, bf, acc[0]);
    mma(acc[1], af, bf, acc[1]);
    mma(acc[2], af, bf, acc[2]);
    mma(acc[3], af, bf, acc[3]);
  }
  float sum = 0.f;
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 4; ++i) sum += acc[j][i];
  out[get_global_id(0)] = sum;
}
