// wgmma_probe.cu -- Hopper warpgroup-MMA (wgmma) probe kernels, compiled to
// PTX only, to be loaded through NVIDIA's OpenCL driver with
// clCreateProgramWithBinary (see opencl_ptx_probe.py next to this file).
//
// Why: OpenCL C built by NVIDIA's driver always targets PTX `.target sm_90`,
// so inline-PTX wgmma.* (which needs `.target sm_90a`) is rejected by ptxas.
// NVIDIA's OpenCL "program binaries" are PTX text, so this checks whether an
// sm_90a PTX module handed to clCreateProgramWithBinary builds and runs.
//
// Usage (on the H100 host; not part of the CMake build):
//   /usr/local/cuda/bin/nvcc -gencode=arch=compute_90a,code=sm_90a --ptx \
//       -o /tmp/wgmma_probe.ptx tools/extra/wgmma_probe.cu
//   /usr/local/cuda/bin/ptxas -arch=sm_90a -o /dev/null /tmp/wgmma_probe.ptx
//   python3 tools/extra/opencl_ptx_probe.py /tmp/wgmma_probe.ptx
//
// First result (H100, driver 580.159.04): the PTX as nvcc emits it is
// accepted and builds, but even fence_probe fails at clFinish (-36). The
// probe script therefore also tries textual variants of this PTX closer to
// what NVIDIA's OpenCL emits (`.target sm_90a, texmode_independent`; pointer
// params as `.param .u64 .ptr .global .align 4`), each in its own process.
//
// Kernels are extern "C" (unmangled PTX entry names) and take only global
// pointers and ints, so OpenCL binds cl_mem buffers (64-bit global pointers)
// and cl_int values with clSetKernelArg. Keep it so: the script's pointer
// rewrite relies on every 64-bit param being a global pointer (it checks for
// cvta.to.global), which is why the wgmma descriptors are built inside the
// kernel from shared addresses rather than passed in. Launch both with one
// work-group of 128 work-items (one warpgroup).
//
// Layout references: PTX ISA "Matrix Descriptor" (bits 0-13 start addr>>4,
// 16-29 LBO>>4, 32-45 SBO>>4, 49-51 base offset, 62-63 swizzle; matches
// CUTLASS cute::GmmaDescriptor), canonical K-major no-swizzle layout
// ((8,m),(T,2k)):((1T,SBO),(1,LBO)) -- i.e. LBO steps between core matrices
// along K, SBO along M/N -- and the "wgmma .m64nNk16 accumulator D" figure.

#include <cuda_fp16.h>
#include <stdint.h>

// 1) Only the wgmma fence/commit/wait instructions: isolates "does sm_90a PTX
//    load and run at all" from descriptor/layout mistakes.
extern "C" __global__ void fence_probe(float* out) {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  out[threadIdx.x] = (float)threadIdx.x;
}

// Shared-memory matrix descriptor, no swizzle, base offset 0.
__device__ __forceinline__ uint64_t make_desc(const void* smem, int lbo,
                                              int sbo) {
  uint64_t addr = (uint64_t)__cvta_generic_to_shared(smem);
  return ((addr & 0x3FFFF) >> 4)                          // bits 0-13
         | ((uint64_t)(((unsigned)lbo >> 4) & 0x3FFF) << 16)  // bits 16-29
         | ((uint64_t)(((unsigned)sbo >> 4) & 0x3FFF) << 32); // bits 32-45
}

// Copy one 16-byte core-matrix row (8 halves) from global to shared,
// dropping it if the requested lbo/sbo would place it outside the buffer.
__device__ __forceinline__ void put_row(unsigned char* smem, unsigned cap,
                                        unsigned off, const __half* src) {
  if (off + 16 > cap) return;
  __half* dst = reinterpret_cast<__half*>(smem + off);
#pragma unroll
  for (int i = 0; i < 8; ++i) dst[i] = src[i];
}

// 2) D(64x8, f32, row-major) = A(64x16, f16, row-major) * B, with B given as
//    8x16 (N x K, K contiguous). Both operands K-major in shared memory in the
//    no-swizzle core-matrix layout: core matrix = 8 rows x 16 bytes stored
//    contiguously (128 B). Core (mi,ki) of A lives at mi*sbo_a + ki*lbo_a,
//    core (ni,ki) of B at ni*sbo_b + ki*lbo_b. The placement follows the
//    same lbo/sbo passed into the descriptors, so any pair of strides that
//    keeps the cores disjoint must give the right answer if LBO/SBO mean
//    what the PTX ISA says.
extern "C" __global__ void wgmma_m64n8k16(const __half* A, const __half* B,
                                          float* D, int lbo_a, int sbo_a,
                                          int lbo_b, int sbo_b) {
  const unsigned kCapA = 4096, kCapB = 1024;  // room for e.g. lbo_a = 1024
  __shared__ __align__(128) unsigned char sA[kCapA];
  __shared__ __align__(128) unsigned char sB[kCapB];
  const unsigned tid = threadIdx.x;

  // A: 64 rows x 2 k-halves = 128 core-matrix rows, one per thread.
  {
    unsigned r = tid >> 1, ki = tid & 1;
    unsigned off = (r >> 3) * sbo_a + ki * lbo_a + (r & 7) * 16;
    put_row(sA, kCapA, off, A + r * 16 + ki * 8);
  }
  // B: 8 rows (n) x 2 k-halves = 16 core-matrix rows.
  if (tid < 16) {
    unsigned n = tid >> 1, ki = tid & 1;
    unsigned off = (n >> 3) * sbo_b + ki * lbo_b + (n & 7) * 16;
    put_row(sB, kCapB, off, B + n * 16 + ki * 8);
  }
  // Make the generic-proxy smem stores visible to the async proxy (wgmma
  // reads operands through it), then wait for the whole warpgroup.
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();

  uint64_t desc_a = make_desc(sA, lbo_a, sbo_a);
  uint64_t desc_b = make_desc(sB, lbo_b, sbo_b);
  float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;

  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  // scale-d = p = false: D = A*B (input accumulators ignored);
  // imm-scale-a/b = 1, imm-trans-a/b = 0 (both K-major).
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %6, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 "
      "{%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
      : "l"(desc_a), "l"(desc_b), "r"(0)
      : "memory");
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");

  // Accumulator layout (m64nNk16, f32, N=8): warp w owns rows 16w..16w+15;
  // g = lane/4, t = lane%4; d0,d1 -> row 16w+g, d2,d3 -> row 16w+g+8;
  // columns 2t (d0,d2) and 2t+1 (d1,d3).
  unsigned w = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  unsigned r0 = 16 * w + g, r1 = r0 + 8, c = 2 * t;
  D[r0 * 8 + c] = d0;
  D[r0 * 8 + c + 1] = d1;
  D[r1 * 8 + c] = d2;
  D[r1 * 8 + c + 1] = d3;
}
