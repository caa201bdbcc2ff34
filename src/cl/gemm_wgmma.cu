// The GEMM's wgmma form: Hopper's warpgroup tensor-core products (sm_90a),
// the source of src/cl/gemm_wgmma.ptx. NVIDIA's OpenCL compiles OpenCL C for
// `.target sm_90` only, where PTX has no wgmma (docs/mixed-precision.md,
// "Hopper's wgmma"), so this form is CUDA C++ compiled to sm_90a PTX by
// scripts/generate_gemm_wgmma_ptx.sh, its pointer parameters rewritten to
// OpenCL's form, and loaded through clCreateProgramWithBinary by the program
// cache. Host side: src/core/gemm_wgmma.cpp. Never compiled by CMake.
//
// C = alpha * row_scale[m] * op(A) op(B) + beta * C + bias[m], then ReLU
// (the flags in `epilogue`, as gemm.cl's EPILOGUE_*), for A and B both
// stored in the instruction's type (f16 or bf16) and C stored as float,
// half or bfloat16 (c_type 0, 1, 2: include/dlcaffe/storage_type.hpp). The
// arguments are gemm.cl's gemm_tiled's, in its order, and then trans_a,
// trans_b and c_type: batches (grid z = product * slices + slice), split-K
// slices written at C + slice * c_slice, image-grouped operands. The host
// (GemmWgmmaForm::Supports) guarantees what the kernel assumes: every row,
// offset, batch stride, image group and image of A and B a whole number of
// 16-byte chunks (8 values), and each operand's contiguous axis too, so that
// a chunk is wholly inside the matrix or wholly outside (zero-filled).
//
// A work-group of BM / 64 warpgroups (128 work-items each) computes a BM x BN
// tile; warpgroup w its rows [64 w, 64 w + 64) with one m64nBNk16 wgmma per
// 16 k. Tiles of BK = 32 k stream through STAGES __local stages by cp.async
// (16-byte chunks straight from global memory, zero-filled outside the
// matrix), so the fetches of the next tiles overlap this tile's products.
//
// A tile sits in __local memory in wgmma's no-swizzle canonical layout
// (PTX ISA, "Shared Memory Matrix Layout"): 8 x 8 core matrices of 128
// contiguous bytes, each 8 lines of one 16-byte chunk. K-major operands
// (A untransposed, B transposed) have a line per row, 8 k along it; MN-major
// ones (A transposed, B untransposed) a line per k, 8 rows along it, and
// wgmma reads them transposed (imm-trans 1). Core matrices follow each other
// along the axis the operand is contiguous in: chunk c of a tile is line
// c % 8 of core matrix c / 8, so the work-items copying consecutive chunks
// read one operand row's consecutive 16 bytes (or 8 rows' same 16 bytes)
// and write consecutive __local addresses. In the descriptor, the leading
// byte offset (LBO) steps between core matrices along k and the stride byte
// offset (SBO) along the rows.
#include <stdint.h>

namespace {

constexpr int kChunkValues = 8;   // 16-bit values per 16-byte chunk
constexpr int kCoreBytes = 128;   // one 8 x 8 core matrix
constexpr int kEpilogueBias = 1, kEpilogueRelu = 2, kEpilogueRowScale = 4;  // gemm.cl

// d (64 x N, float) += a (64 x 16) * b (16 x N) in the instruction type T
// (f16, bf16), operands through their descriptors; TRANS_A / TRANS_B: 1
// where the operand is MN-major (imm-trans). One function per N: the
// operand lists are N / 2 accumulator registers long.
#define DLC_WGMMA_N128(T)                                                                  \
  template <int TRANS_A, int TRANS_B>                                                      \
  __device__ __forceinline__ void wgmma_##T##_n128(float(&d)[64], uint64_t a, uint64_t b) { \
    asm volatile(                                                                          \
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                        \
        "wgmma.mma_async.sync.aligned.m64n128k16.f32." #T "." #T " "                          \
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "                                                                 \
        "%64, %65, p, 1, 1, %67, %68;\n}\n"                                        \
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) \
        : "l"(a), "l"(b), "r"(1), "n"(TRANS_A), "n"(TRANS_B));                               \
  }
DLC_WGMMA_N128(f16)
DLC_WGMMA_N128(bf16)

#define DLC_WGMMA_N256(T)                                                                  \
  template <int TRANS_A, int TRANS_B>                                                      \
  __device__ __forceinline__ void wgmma_##T##_n256(float(&d)[128], uint64_t a, uint64_t b) { \
    asm volatile(                                                                          \
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"                                        \
        "wgmma.mma_async.sync.aligned.m64n256k16.f32." #T "." #T " "                          \
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "                                                                 \
        "%128, %129, p, 1, 1, %131, %132;\n}\n"                                        \
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127]) \
        : "l"(a), "l"(b), "r"(1), "n"(TRANS_A), "n"(TRANS_B));                               \
  }
DLC_WGMMA_N256(f16)
DLC_WGMMA_N256(bf16)

__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// A matrix descriptor (PTX ISA, "Matrix Descriptor Format"): start address,
// LBO and SBO in 16-byte units, base offset 0, no swizzle.
__device__ __forceinline__ uint64_t descriptor(uint32_t address, uint32_t lbo, uint32_t sbo) {
  return static_cast<uint64_t>((address & 0x3FFFF) >> 4) |
         (static_cast<uint64_t>((lbo >> 4) & 0x3FFF) << 16) |
         (static_cast<uint64_t>((sbo >> 4) & 0x3FFF) << 32);
}

// 16 bytes from src to the __local address dst, or 16 zero bytes where
// !valid (src then unread).
__device__ __forceinline__ void copy_chunk_async(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void commit_copies() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wait_copies() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
// cp.async writes through the generic proxy, wgmma reads through the async
// one: the fence makes this work-item's landed chunks visible to it.
__device__ __forceinline__ void fence_copies_for_wgmma() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// Index q of an image-grouped axis (gemm.cl, grouped()): group g > 0 puts
// g consecutive indices per image, images s values apart.
__device__ __forceinline__ int grouped(int q, int g, int s) { return g ? (q / g) * s + q % g : q; }

// One m64nBNk16 product in the storage type's instruction; TA / TB: 1 where
// wgmma reads that operand MN-major (imm-trans), which for B is where the
// GEMM's B is not transposed.
template <int TYPE, int BN, int TA, int TB>
__device__ __forceinline__ void wgmma(float (&d)[BN / 2], uint64_t a, uint64_t b) {
  if constexpr (TYPE == 1) {
    if constexpr (BN == 128) wgmma_f16_n128<TA, TB>(d, a, b);
    if constexpr (BN == 256) wgmma_f16_n256<TA, TB>(d, a, b);
  } else {
    if constexpr (BN == 128) wgmma_bf16_n128<TA, TB>(d, a, b);
    if constexpr (BN == 256) wgmma_bf16_n256<TA, TB>(d, a, b);
  }
}

// One operand's tile of ROWS (M or N) x BK, as cp.async chunks.
template <int ROWS, int BK, bool MN_MAJOR>
struct OperandTile {
  static constexpr int kChunks = ROWS * BK / kChunkValues;
  static constexpr int kRowBlocks = ROWS / 8, kKBlocks = BK / 8;
  // Descriptor offsets: K-major tiles run along k first, MN-major along rows.
  static constexpr uint32_t kLbo = MN_MAJOR ? kRowBlocks * kCoreBytes : kCoreBytes;
  static constexpr uint32_t kSbo = MN_MAJOR ? kCoreBytes : kKBlocks * kCoreBytes;

  // Queues this work-item's chunks of the tile at rows [row0, row0 + ROWS),
  // k [k0, k0 + BK) of an operand of `rows` rows and k below k_end, stored
  // as x[row * ld + k] (K-major) or x[k * ld + row] (MN-major), its
  // contiguous axis grouped by (group, image).
  template <int THREADS>
  __device__ __forceinline__ static void load(uint32_t tile, const uint16_t* x, int ld, int rows,
                                              int row0, int k0, int k_end, int group, int image,
                                              int tid) {
#pragma unroll
    for (int i = 0; i < (kChunks + THREADS - 1) / THREADS; ++i) {
      const int c = tid + i * THREADS;
      if (kChunks % THREADS && c >= kChunks) break;
      const int line = c % 8, core = c / 8;
      int row, k;
      const uint16_t* src;
      if (MN_MAJOR) {
        row = row0 + (core % kRowBlocks) * 8;
        k = k0 + (core / kRowBlocks) * 8 + line;
        src = x + k * ld + grouped(row, group, image);
      } else {
        row = row0 + (core / kKBlocks) * 8 + line;
        k = k0 + (core % kKBlocks) * 8;
        src = x + row * ld + grouped(k, group, image);
      }
      const bool valid = row < rows && k < k_end;
      copy_chunk_async(tile + c * 16, valid ? src : x, valid);
    }
  }

  // The descriptor of the 64 (A) or ROWS (B) rows from row block
  // `row_block`, k [16 s, 16 s + 16) of the tile at `tile`.
  __device__ __forceinline__ static uint64_t at(uint32_t tile, int row_block, int s) {
    const int core = MN_MAJOR ? 2 * s * kRowBlocks + row_block : row_block * kKBlocks + 2 * s;
    return descriptor(tile + core * kCoreBytes, kLbo, kSbo);
  }
};

// The k loop of one work-group: acc += op(A) op(B) over [k_begin, k_end) for
// the tile at (m0, n0). Tile t of BK k is fetched D = STAGES - 1 - KEEP
// tiles ahead, into the stage that tile t - 1 - KEEP used: every
// warpgroup's products of that tile are done by the barrier of iteration t,
// since each keeps at most KEEP groups of products in flight past its own
// iteration (KEEP 1: the next tile's products queue behind this one's).
template <int TYPE, int BM, int BN, int BK, int STAGES, int KEEP, int TA, int TB>
__device__ __forceinline__ void multiply(float (&acc)[BN / 2], uint32_t smem, const uint16_t* A,
                                         int lda, const uint16_t* B, int ldb, int M, int N,
                                         int m0, int n0, int k_begin, int k_end, int a_group,
                                         int a_image, int b_group, int b_image) {
  constexpr int kThreads = BM / 64 * 128;
  constexpr int kAhead = STAGES - 1 - KEEP;
  static_assert(kAhead >= 1, "no stage to fetch ahead into");
  using TileA = OperandTile<BM, BK, TA == 1>;
  using TileB = OperandTile<BN, BK, TB == 0>;
  constexpr uint32_t kStageBytes = (TileA::kChunks + TileB::kChunks) * 16;
  const int tid = threadIdx.x, warpgroup = tid / 128;
  const int tiles = (k_end - k_begin + BK - 1) / BK;
  const auto load = [&](int stage, int tile) {
    const uint32_t a_tile = smem + stage * kStageBytes;
    const uint32_t b_tile = a_tile + TileA::kChunks * 16;
    const int k0 = k_begin + tile * BK;
    TileA::template load<kThreads>(a_tile, A, lda, M, m0, k0, k_end, a_group, a_image, tid);
    TileB::template load<kThreads>(b_tile, B, ldb, N, n0, k0, k_end, b_group, b_image, tid);
  };
#pragma unroll
  for (int s = 0; s < kAhead; ++s) {
    if (s < tiles) load(s, s);
    commit_copies();
  }
  for (int t = 0; t < tiles; ++t) {
    wait_copies<kAhead - 1>();  // tile t has landed (this work-item's chunks)
    fence_copies_for_wgmma();
    __syncthreads();  // ... everyone's; and tile t - 1 - KEEP's products are done
    const int stage = t % STAGES;
    const uint32_t a_tile = smem + stage * kStageBytes;
    const uint32_t b_tile = a_tile + TileA::kChunks * 16;
    wgmma_fence();
#pragma unroll
    for (int s = 0; s < BK / 16; ++s)
      wgmma<TYPE, BN, TA, 1 - TB>(acc, TileA::at(a_tile, 8 * warpgroup, s),
                                  TileB::at(b_tile, 0, s));
    wgmma_commit();
    const int next = t + kAhead;
    if (next < tiles) load(next % STAGES, next);
    commit_copies();
    wgmma_wait<KEEP>();
  }
  wgmma_wait<0>();
}

__device__ __forceinline__ float load_c(const void* C, int i, int c_type) {
  if (c_type == 0) return static_cast<const float*>(C)[i];
  const uint16_t bits = static_cast<const uint16_t*>(C)[i];
  if (c_type == 1) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits));
    return f;
  }
  return __uint_as_float(static_cast<uint32_t>(bits) << 16);
}

// Rounded to nearest even; a bfloat16 NaN kept quiet (common.cl's rule).
__device__ __forceinline__ void store_c(void* C, int i, float v, int c_type) {
  if (c_type == 0) {
    static_cast<float*>(C)[i] = v;
  } else if (c_type == 1) {
    uint16_t h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    static_cast<uint16_t*>(C)[i] = h;
  } else {
    const uint32_t x = __float_as_uint(v);
    static_cast<uint16_t*>(C)[i] =
        (x & 0x7FFFFFFFu) > 0x7F800000u ? static_cast<uint16_t>((x >> 16) | 0x0040u)
                                        : static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
  }
}

template <int TYPE, int BM, int BN, int BK, int STAGES, int KEEP>
__device__ __forceinline__ void gemm_wgmma(
    int M, int N, int K, float alpha, const uint16_t* A, int a_off, int lda, const uint16_t* B,
    int b_off, int ldb, float beta, void* C, int c_off, int ldc, int a_group, int a_image,
    int b_group, int b_image, int c_group, int c_image, int slices, int k_per_slice,
    int c_slice, int a_batch, int b_batch, int c_batch, const float* bias, int bias_off,
    const float* row_scale, int row_scale_off, int epilogue, int epilogue_batch, int trans_a,
    int trans_b, int c_type) {
  constexpr int kStageBytes = (BM + BN) * BK * 2;
  __shared__ __align__(128) uint8_t smem[STAGES * kStageBytes];
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int product = blockIdx.z / slices, slice = blockIdx.z % slices;
  const int k_begin = slice * k_per_slice, k_end = min(K, k_begin + k_per_slice);
  A += a_off + product * a_batch;
  B += b_off + product * b_batch;
  bias += product * epilogue_batch;
  row_scale += product * epilogue_batch;

  float acc[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
  const uint32_t base = shared_address(smem);
#define DLC_MULTIPLY(TA, TB)                                                                 \
  multiply<TYPE, BM, BN, BK, STAGES, KEEP, TA, TB>(acc, base, A, lda, B, ldb, M, N, m0, n0, k_begin, \
                                         k_end, a_group, a_image, b_group, b_image)
  switch (trans_a * 2 + trans_b) {
    case 0: DLC_MULTIPLY(0, 0); break;
    case 1: DLC_MULTIPLY(0, 1); break;
    case 2: DLC_MULTIPLY(1, 0); break;
    default: DLC_MULTIPLY(1, 1); break;
  }
#undef DLC_MULTIPLY

  // The accumulator fragment of m64nNk16 (PTX ISA, "wgmma .m64nNk16
  // accumulator D"): warp v of the warpgroup has rows 16 v + g and
  // 16 v + g + 8 (g = lane / 4), acc[4 j + 2 upper + e] at column
  // 8 j + 2 (lane % 4) + e. The values are copied to an array that the
  // epilogue indexes at run time (in local memory: one loop of code for
  // every storage type and flag, where an unrolled one was most of the
  // program), leaving acc in registers for the products.
  float out[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) out[i] = acc[i];
  const int tid = threadIdx.x, lane = tid % 32;
  const int row_base = m0 + (tid / 128) * 64 + ((tid % 128) / 32) * 16 + lane / 4;
  const int c_size = c_type == 0 ? 4 : 2;
  C = static_cast<char*>(C) +
      static_cast<long long>(c_off + product * c_batch + slice * c_slice) * c_size;
#pragma unroll 1
  for (int upper = 0; upper < 2; ++upper) {
    const int m = row_base + 8 * upper;
    if (m >= M) continue;
    const float row_bias = (epilogue & kEpilogueBias) ? bias[bias_off + m] : 0.f;
    const float row_alpha =
        (epilogue & kEpilogueRowScale) ? alpha * row_scale[row_scale_off + m] : alpha;
#pragma unroll 1
    for (int v = 0; v < BN / 4; ++v) {
      const int j = v / 2, e = v % 2;
      const int n = n0 + 8 * j + 2 * (lane % 4) + e;
      if (n >= N) continue;
      const int i = m * ldc + grouped(n, c_group, c_image);
      float r = row_alpha * out[4 * j + 2 * upper + e];
      r = (beta == 0.f ? r : fmaf(beta, load_c(C, i, c_type), r)) + row_bias;
      if (epilogue & kEpilogueRelu) r = fmaxf(r, 0.f);
      store_c(C, i, r, c_type);
    }
  }
}

}  // namespace

// The kernels: gemm_wgmma_<type>_<BM>x<BN>x<BK>_s<STAGES>_k<KEEP>, launched
// with BM / 64 * 128 work-items per group.
#define DLC_GEMM_WGMMA_KERNEL(T, TYPE, BM, BN, BK, STAGES, KEEP, MIN_GROUPS)                  \
  extern "C" __global__ void __launch_bounds__(BM / 64 * 128, MIN_GROUPS)                     \
      gemm_wgmma_##T##_##BM##x##BN##x##BK##_s##STAGES##_k##KEEP(                              \
          int M, int N, int K, float alpha, const uint16_t* A, int a_off, int lda,            \
          const uint16_t* B, int b_off, int ldb, float beta, void* C, int c_off, int ldc,     \
          int a_group, int a_image, int b_group, int b_image, int c_group, int c_image,        \
          int slices, int k_per_slice, int c_slice, int a_batch, int b_batch, int c_batch,    \
          const float* bias, int bias_off, const float* row_scale, int row_scale_off,         \
          int epilogue, int epilogue_batch, int trans_a, int trans_b, int c_type) {           \
    gemm_wgmma<TYPE, BM, BN, BK, STAGES, KEEP>(                                                \
        M, N, K, alpha, A, a_off, lda, B, b_off, ldb, beta, C, c_off, ldc, a_group, a_image,  \
        b_group, b_image, c_group, c_image, slices, k_per_slice, c_slice, a_batch, b_batch,   \
        c_batch, bias, bias_off, row_scale, row_scale_off, epilogue, epilogue_batch, trans_a, \
        trans_b, c_type);                                                                     \
  }

// 48 KiB of __local memory each (what NVIDIA's OpenCL lets a kernel have):
// the two fastest of the shapes timed on an H200 (docs/benchmarks.md, "The
// wgmma form"): 128 x 256 tiles 16 deep in 4 stages, one group of products
// in flight, and 128 x 128 tiles 16 deep in 6 stages.
#define DLC_GEMM_WGMMA_KERNELS(T, TYPE)               \
  DLC_GEMM_WGMMA_KERNEL(T, TYPE, 128, 256, 16, 4, 1, 1) \
  DLC_GEMM_WGMMA_KERNEL(T, TYPE, 128, 128, 16, 6, 0, 2)
DLC_GEMM_WGMMA_KERNELS(f16, 1)
DLC_GEMM_WGMMA_KERNELS(bf16, 2)
