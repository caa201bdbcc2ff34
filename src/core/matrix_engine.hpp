// Which matrix engine a GEMM may multiply on, chosen from what the device
// reports (GemmArgs::math says what the product's inputs may be rounded to).
//
// Today that is NVIDIA's tensor cores, reached from OpenCL C through inline
// PTX: mma.sync with f16, bf16 or tf32 inputs and float sums, issued by the
// GPU-shaped GEMM kernel (src/cl/gemm_tiled.cl, MMA). A device qualifies when it
// reports compute capability 8.0 or more (cl_nv_device_attribute_query:
// m16n8k16 with f16 or bf16 and m16n8k8 with tf32 need sm_80); a driver
// that then fails to build the kernel turns that form off for the device,
// with one warning, and the product runs the float kernels.
//
// Hopper's warpgroup instruction (wgmma) is a GEMM form of its own, a PTX
// program rather than OpenCL C (core/gemm_wgmma.hpp); it takes the same
// forms' math.
//
// Other engines would be added as further forms beside these, each with
// its own kernel variant and its own test of what the device reports:
// Intel's DPAS (cl_intel_subgroup_matrix_multiply_accumulate, sub-groups
// of 8 or 16 work-items) and AMD's WMMA/MFMA (clang's
// __builtin_amdgcn_wmma_* / mfma_* on gfx11 / gfx9 devices). Neither can be
// tested here, so neither is written yet.
#pragma once
#include <string>

#include "dlcaffe/context.hpp"
#include "derived_copy.hpp"  // relative: tools include this header by path
#include "dlcaffe/math.hpp"
#include "dlcaffe/storage_type.hpp"

namespace dlcaffe {

// The kernel's MMA define: 0 none, 1 f16, 2 bf16, 3 tf32.
enum class MmaForm { kNone = 0, kF16 = 1, kBF16 = 2, kTF32 = 3 };

const char* MmaFormName(MmaForm form);  // "f16", ...; "none"
// Inputs rounded to the form's type are kept to this many bits of mantissa
// (with the implicit one): 11 for f16, 8 for bf16, 11 for tf32.
int MmaMantissaBits(MmaForm form);

// NVIDIA's compute capability as 10 * major + minor, 0 where the device does
// not report one.
int NvidiaComputeCapability(const DeviceInfo& info);

// The form a product of `math` runs in on this context's device under
// `choices` (the asking layer's, or ProductChoices): none for float32 math,
// on devices without the instruction, with the matrix engine off or the
// kernels CPU-shaped, or after the form failed to build there.
MmaForm MmaFormFor(const Context& ctx, const LayerChoices& choices, MatrixMath math);

// A form the driver could not build: off for this device from now on (one
// warning names it and the compiler's first line).
void DisableMmaForm(const Context& ctx, MmaForm form, const std::string& why);

// The form's cp.async pipeline (gemm_tiled.cl, MMA_STAGES: sm_80's cp.async and
// ldmatrix), on wherever the form is, until a build of it fails: then off
// for the device (one warning), and the form's products keep the
// register-staged tiles.
bool MmaPipelineEnabled(const Context& ctx, MmaForm form);
void DisableMmaPipeline(const Context& ctx, MmaForm form, const std::string& why);

// The storage type a form's instruction takes its inputs in (tf32: float).
StorageType MmaInputType(MmaForm form);

// Whether products in `math` run on the tensor cores with inputs of type
// `storage`: then a float operand would be rounded to `storage` as the
// kernel loads it, and an operand rounded beforehand (to nearest even, as
// the kernel rounds) gives the same product.
bool MmaRoundsTo(const Context& ctx, const LayerChoices& choices, MatrixMath math,
                 StorageType storage);

// Float weights for products in `math` over operands stored in `storage`: a
// copy rounded to `storage` (count values) where the tensor cores would
// round them as they load them (MmaRoundsTo), else null (use the floats).
// The product is the same; the copy lets the cp.async pipeline stream the
// weights, which it does only for operands stored in its own type.
BufferPtr MmaRoundedWeights(Context& ctx, const LayerChoices& choices, cl_mem weights,
                            int count, MatrixMath math, StorageType storage);
// The same for a layer's parameter blob, kept in `copy` until the blob's
// data changes (a solver's update, a load): rounded once per update, not per
// use.
BufferPtr MmaRoundedWeights(Context& ctx, const LayerChoices& choices, const Blob& weights,
                            MatrixMath math, StorageType storage, DerivedCopy& copy);

// Whether the cp.async pipeline can stream products in `math` whose
// operands are stored in `storage` (with the choice matrix_pipeline on):
// the shapes still decide, product by product (gemm.cpp,
// MmaPipelineStages).
bool MmaPipelineStreams(const Context& ctx, const LayerChoices& choices, MatrixMath math,
                        StorageType storage);

// Values of `storage` in one of the pipeline's 16-byte cp.async chunks: the
// operands' rows, offsets and image groups must be whole chunks.
inline int MmaPipelineChunk(StorageType storage) {
  return static_cast<int>(16 / StorageBytes(storage));
}

}  // namespace dlcaffe
