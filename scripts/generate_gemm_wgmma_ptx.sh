#!/bin/bash
# Regenerates src/cl/gemm_wgmma.ptx, the GEMM's wgmma form as NVIDIA's OpenCL
# loads it, from its source src/cl/gemm_wgmma.cu (see the opening comment
# there). Needs the CUDA toolkit's nvcc (12.3 or later: PTX ISA with
# sm_90a); run it after changing the .cu, and commit both files. CMake never
# runs it: the build embeds the committed PTX like the .cl sources.
#
# The one change to nvcc's output: every pointer parameter (.param .u64:
# the kernels take no other 64-bit value) is declared as OpenCL's own PTX
# declares a __global pointer, `.param .u64 .ptr .global .align 4`. Without
# that the driver does not pass a cl_mem as a device address and every
# launch fails (CL_INVALID_COMMAND_QUEUE at the next clFinish;
# tools/extra/opencl_ptx_probe.py, docs/mixed-precision.md).
set -euo pipefail
cd "$(dirname "$0")/.."
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$NVCC" -gencode=arch=compute_90a,code=sm_90a --ptx -O3 -std=c++17 \
    -o "$tmp/gemm_wgmma.ptx" src/cl/gemm_wgmma.cu
if command -v ptxas >/dev/null; then
  ptxas -arch=sm_90a -o /dev/null "$tmp/gemm_wgmma.ptx"  # it must assemble
fi
{
  echo "// Generated from src/cl/gemm_wgmma.cu by scripts/generate_gemm_wgmma_ptx.sh"
  echo "// ($("$NVCC" --version | tail -1)); do not edit."
  sed -E 's/^(\s*)\.param \.u64 ([A-Za-z_][A-Za-z0-9_]*)/\1.param .u64 .ptr .global .align 4 \2/' \
      "$tmp/gemm_wgmma.ptx" | grep -v '^//'
} > src/cl/gemm_wgmma.ptx.tmp
mv src/cl/gemm_wgmma.ptx.tmp src/cl/gemm_wgmma.ptx
echo "wrote src/cl/gemm_wgmma.ptx ($(wc -c < src/cl/gemm_wgmma.ptx) bytes)"
