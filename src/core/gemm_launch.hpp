// What the GEMM's forms share once GemmWithConfig (core/gemm.cpp) has checked
// a product and picked its configuration: the operands' leading dimensions,
// gemm.cl's build options, and split-K around a tile kernel. Each form has a
// host file of its own that launches its kernels (gemm_register.cpp: the CPU
// shapes; gemm_tiled.cpp: the GPU shape, float or mma.sync; gemm_wgmma.cpp:
// Hopper's wgmma). Internal to the library.
#pragma once
#include <string>

#include "gemm_config.hpp"

namespace dlcaffe {

// The leading dimensions of a GemmArgs: as given, or those of packed
// (unpadded) operands where it leaves them at -1.
struct LeadingDims {
  int a, b, c;
  explicit LeadingDims(const GemmArgs& g)
      : a(g.lda >= 0 ? g.lda : (g.trans_a == Transpose::kYes ? g.M : g.K)),
        b(g.ldb >= 0 ? g.ldb : (g.trans_b == Transpose::kYes ? g.K : g.N)),
        c(g.ldc >= 0 ? g.ldc : g.N) {}
};

inline int CeilDiv(int a, int b) { return (a + b - 1) / b; }

// Whether A and B can be streamed in whole chunks of `chunk` values (16
// bytes, for cp.async): every row, offset, batch stride, image group and
// image of both a whole number of chunks, and each operand's contiguous axis
// too, so that a chunk is wholly inside the matrix or wholly outside.
bool OperandsInWholeChunks(const GemmArgs& g, int chunk);

// gemm.cl's epilogue flags (EPILOGUE_*) for this product.
int EpilogueFlags(const GemmArgs& g);

// The -D option giving operand X ("A", "B", "C") storage type `type` (none
// for float: the kernel's default).
std::string TypeDefine(const char* operand, StorageType type);

// gemm.cl's -D options for configuration `c`; `grouped` flags which of A, B,
// C (bits 1, 2, 4) the GPU shape reads or writes image-grouped; an active
// `window` makes B implicit; `choices`, the product's (ProductChoices), say
// whether a GPU-shaped kernel runs among CPU-shaped ones.
std::string GemmDefines(const LayerChoices& choices, const GemmConfig& c, bool trans_a,
                        bool trans_b, const std::string& types, int grouped = 0,
                        const ConvolutionWindow& window = ConvolutionWindow(),
                        VectorLoads vector_loads = VectorLoads());

// Where a tile kernel writes: C itself (one k slice, the epilogue, C's
// grouping and type), or split-K's float scratch (slice s of product z at
// c_off + z * c_batch + s * c_slice, plain, no epilogue).
struct GemmTarget {
  int slices = 1, k_per_slice = 0;
  cl_mem C = nullptr;
  int c_off = 0, ldc = 0, c_group = 0, c_image = 0, c_slice = 0, c_batch = 0;
  StorageType c_type = StorageType::kFloat32;
  float alpha = 1.f, beta = 0.f;
  int epilogue = 0;  // EpilogueFlags, or 0 into scratch
  bool partial() const { return slices > 1; }
};

// A form's tile kernel: C = alpha * op(A) op(B) + beta * C into `target`, for a
// product GemmWithConfig checked (K > 0, alpha != 0). False where the form's
// program could not be had (the caller then runs another form).
using TileLauncher = bool (*)(Context& ctx, const GemmConfig& c, const GemmArgs& g,
                              const GemmTarget& target);

// Runs the product through `launch` in the k slices SplitKSlices gives
// configuration `c` (each slice into float scratch, then gemm.cl's
// gemm_reduce_slices sums them into C with the epilogue), or straight into C.
// False where `launch` was.
bool RunTiles(Context& ctx, const GemmConfig& c, const GemmArgs& g, TileLauncher launch);

// The GPU shape of gemm.cl (gemm_tiled.cpp) and the CPU shapes (register
// tiles and the dot form, gemm_register.cpp), for products GemmWithConfig
// checked.
bool LaunchTiledTiles(Context& ctx, const GemmConfig& c, const GemmArgs& g,
                      const GemmTarget& target);
void RunRegisterGemm(Context& ctx, const GemmConfig& c, const GemmArgs& g);

}  // namespace dlcaffe
