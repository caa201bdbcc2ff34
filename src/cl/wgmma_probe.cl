// Hopper's warpgroup tensor-core instructions (wgmma), issued from OpenCL C
// through inline PTX: tools/mma_probe.cpp --wgmma only builds these kernels,
// never runs them, to learn whether NVIDIA's OpenCL compiler lets wgmma
// through. PTX accepts wgmma only under `.target sm_90a` (not plain sm_90),
// so what matters is which target the driver compiles for, and whether a
// build option can change it.
//
// Built for one kernel at a time (-DWGMMA_PLAIN, -DWGMMA_FENCE or
// -DWGMMA_MMA), so that one instruction the driver refuses does not hide
// whether the others build.

#if defined(WGMMA_PLAIN)
// No wgmma at all: shows which build options the driver takes, and the
// `.target` it compiles for by default.
__kernel void wgmma_probe_plain(__global float* out) { out[get_global_id(0)] = 1.f; }

#elif defined(WGMMA_FENCE)
// The three synchronising instructions alone, without operands.
__kernel __attribute__((reqd_work_group_size(128, 1, 1))) void wgmma_probe_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
}

#elif defined(WGMMA_MMA)
// One warpgroup (128 work-items) issues one m64n8k16 product with f16 inputs
// and f32 accumulation, A and B both read from shared memory through 64-bit
// matrix descriptors, as the PTX ISA writes it:
//   wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 d, a-desc, b-desc,
//       scale-d, imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b;
// d is 4 floats a work-item (64 * 8 / 128); scale-d is a predicate (false:
// D = A*B, true: D = A*B + D); the immediates 1, 1, 0, 0 neither negate nor
// transpose. The descriptors come from the arguments, so that the compiler
// cannot fold them; their values do not matter, as nothing runs.
__kernel __attribute__((reqd_work_group_size(128, 1, 1))) void wgmma_probe_mma(
    const ulong desc_a, const ulong desc_b, const int accumulate, __global float* d) {
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %6, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
      : "l"(desc_a), "l"(desc_b), "r"(accumulate)
      : "memory");
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  // The accumulators pass through the wait, so that no read of them can be
  // moved ahead of it (they are written asynchronously).
  asm volatile("wgmma.wait_group.sync.aligned 0;"
               : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
               :
               : "memory");
  for (int i = 0; i < 4; ++i) d[get_global_id(0) * 4 + i] = acc[i];
}

#else
#error "build wgmma_probe.cl with -DWGMMA_PLAIN, -DWGMMA_FENCE or -DWGMMA_MMA"
#endif
