// The GEMM's wgmma form: Hopper's warpgroup tensor-core products, a kernel
// written in CUDA C++ (src/cl/gemm_wgmma.cu) and shipped as sm_90a PTX
// (src/cl/gemm_wgmma.ptx) that NVIDIA's OpenCL loads as a program binary,
// because its OpenCL C compiler targets plain sm_90, which has no wgmma.
//
// What it takes: a device of compute capability 9.0 (sm_90a code runs on
// sm_90 only), f16 or bf16 math with both operands stored in that type,
// every row, offset, batch stride, image group and image of A and B a whole
// number of 16-byte chunks and each operand's contiguous axis too, B a
// stored matrix (no convolution windows). What it keeps of the GEMM: every
// layout, batches, split-K, image-grouped A, B and C, C in any storage type,
// and the epilogue (a bias per row, row scale, ReLU, beta). Anything else runs the
// OpenCL C kernels (gemm_tiled.cl). Internal to the library.
#pragma once
#include <string>
#include <vector>

#include "gemm_launch.hpp"

namespace dlcaffe {

// The form's configurations (the kernels of gemm_wgmma.ptx): tiles of
// tile_m x tile_n (a warpgroup per 64 rows), depth k per stage, `stages`
// stages in 48 KiB, `in_flight` groups of products kept in flight.
std::vector<GemmConfig> WgmmaConfigs();
GemmConfig WgmmaConfig(int tile_m, int tile_n, int depth, int stages, int in_flight);
// The name of configuration `config`'s kernel in gemm_wgmma.ptx for inputs
// of `type` (float16 or bfloat16).
std::string WgmmaKernelName(StorageType type, const GemmConfig& config);

// Whether products in `math` may run in the wgmma form on this device under
// `choices` (compute capability 9.0, the matrix engine on, the form not
// turned off after a failed load). The rule takes it only under the choice
// matrix_wgmma; a tuned or given wgmma configuration wherever this holds.
bool WgmmaAvailable(const Context& ctx, const LayerChoices& choices, MatrixMath math);
// Whether the operands are as the kernel assumes (the header), stored in
// `own` (the instruction's type).
bool WgmmaOperandsFit(const GemmArgs& args, StorageType own);
// Whether wgmma configuration `config` runs this product (WgmmaAvailable
// and WgmmaOperandsFit).
bool WgmmaRuns(const Context& ctx, const GemmConfig& config, const GemmArgs& args);

// The form's tile kernel (core/gemm_launch.hpp, TileLauncher) under `config`,
// for which WgmmaRuns holds. False where the program did not load: the form
// is then off for the device (one warning) and the caller runs another form.
bool LaunchWgmma(Context& ctx, const GemmConfig& config, const GemmArgs& args,
                 const GemmTarget& target);

}  // namespace dlcaffe
