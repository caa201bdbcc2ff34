// NVIDIA's warp-level tensor-core instructions as OpenCL C functions (inline
// PTX; sm_80 and up), for the kernels that multiply on them: the GEMM's GPU
// shape (gemm_tiled.cl) and the fused attention (attention_mma.cl). Each
// includes this file where its MMA define says which form it runs: 1 f16,
// 2 bf16 (m16n8k16), 3 tf32 (m16n8k8), inputs rounded to that type and
// float sums. Fragment layouts are the PTX ISA's (9.7.14.5.7 and .8; the
// tool mma_probe checks them on a device).

#if MMA == 3
#define MMA_K 8
#define MMA_INSTRUCTION "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
#elif MMA == 2
#define MMA_K 16
#define MMA_INSTRUCTION "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
#else
#define MMA_K 16
#define MMA_INSTRUCTION "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
#endif

#if MMA == 3
// x rounded to tf32 (to nearest, ties away: cvt.rna, as cuBLAS's TF32).
inline uint mma_operand(const float x) {
  uint r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}
#else
// Two values rounded to nearest even, the lower k in the low half.
inline uint mma_pair(const float lo, const float hi) {
  uint r;
#if MMA == 2
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#else
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#endif
  return r;
}
#endif

// d += a b on the calling warp's fragments, on registers only: free to be
// scheduled among the loads.
inline void mma_product(float d[4], const uint a[4], const uint b[2]) {
  asm(MMA_INSTRUCTION " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%10, %11, %12, %13};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(d[0]),
        "f"(d[1]), "f"(d[2]), "f"(d[3]));
}

// The __local address as the PTX instructions take it (the shared window).
inline uint shared_address(__local const void* p) { return (uint)(size_t)p; }

// Four 8x8 matrices of 16-bit values, lane l giving the address of line
// l % 8 of matrix l / 8; register r of every lane gets matrix r's fragment
// (row lane / 4, columns 2 (lane % 4), +1; .trans: the transposed matrix's).
inline void load_matrices(uint r[4], const uint address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}
inline void load_matrices_transposed(uint r[4], const uint address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// 16 bytes from src to dst, or 16 zero bytes where !valid (src then unread),
// asynchronously (cp.async: no registers); complete after WAIT_COPIES.
inline void copy_chunk_async(__local void* dst, __global const void* src, const bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
               :
               : "r"(shared_address(dst)), "l"(src), "r"(valid ? 16 : 0)
               : "memory");
}
// Closes this work-item's group of copies.
inline void commit_copies(void) { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits until at most n (a literal) of this work-item's groups of copies are
// in flight; a barrier then shows every work-item's copies to the group.
#define WAIT_COPIES_(n) asm volatile("cp.async.wait_group " #n ";" ::: "memory")
#define WAIT_COPIES(n) WAIT_COPIES_(n)

// x from lane (lane ^ mask) of the warp.
inline float shuffle_xor(const float x, const int mask) {
  float y;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(y) : "f"(x), "r"(mask));
  return y;
}
