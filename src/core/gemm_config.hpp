// The shapes of the GEMM's kernels (src/cl/gemm_register.cl, gemm_tiled.cl,
// gemm_wgmma.cu) and the choice among them. Internal to the library; tests
// and benchmarks include it to run every configuration on whatever device
// they have.
#pragma once
#include <string>
#include <vector>

#include "dlcaffe/context.hpp"
#include "dlcaffe/math.hpp"
#include "matrix_engine.hpp"  // relative: the tools include this file by path

namespace dlcaffe {

// How a configuration's kernel is made: OpenCL C, src/cl/gemm_register.cl
// and gemm_tiled.cl (every device; on NVIDIA's tensor cores through
// mma.sync where the math allows), or the wgmma form's PTX
// (core/gemm_wgmma.hpp).
enum class GemmForm { kOpenCL = 0, kWgmma = 1 };

struct GemmConfig {
  GemmForm form = GemmForm::kOpenCL;
  // true: GPU shape (work-group tiles staged in __local memory, register
  // blocking inside); false: CPU shape (one work-item per register tile, no
  // __local memory; B read in place, or packed into zero-padded NR-wide
  // panels when it is transposed or narrower than NR).
  bool use_local = false;
  int mr = 10, nr = 32;    // register block of one work-item
  int vw = 16;             // vector width along N
  int wg_m = 1, wg_n = 1;  // work-group shape (use_local only)
  int tk = 16;             // k-depth of a __local tile (use_local only)
  bool pack_a = false;     // CPU shape: copy op(A) into MR-row panels first
  bool pack_b = false;     // CPU shape: copy B into panels even where it
                           // could be read in place
  // CPU shape for C = A * B^T only: MR x NR dot products, VW lanes along k,
  // both operands read in place.
  bool dot_form = false;
  // GPU shape: slices of k computed by separate work-groups into scratch and
  // summed by a second kernel (split-K), so that a product with few tiles
  // and a long k still fills the device. 0: chosen from the tile count and
  // the device's compute units.
  int k_slices = 0;
  // With k_slices == 0, how the split is chosen. 0 (the default): the
  // fewest slices whose work-groups fill the compute units' last wave to at
  // least 90% (one work-group resident per unit: the 128 x 128 tile's
  // registers allow no more on an H100).
  // > 0: aim at that many work-groups per compute unit (DeepSplit), which
  // long products (weight gradients, k in the 10^5) want; short ones run
  // slower so (docs/benchmarks.md, M4).
  int groups_per_unit = 0;
  // GPU shape: fetch interior tiles as unguarded 4-element vectors where an operand
  // allows it (UsesVectorLoads).
  bool vector_loads = true;
  // GPU shape on the tensor cores with operands in the instruction's type
  // (tf32: float): tiles streamed by cp.async through this many __local stages
  // (MmaPipelineStages). 0 (the default): as many as fit, up to 4, where
  // the operands allow it (f16, bf16 and tf32); 1: never (tiles staged
  // through registers).
  int stages = 0;
  // The wgmma form: groups of products a warpgroup keeps in flight past
  // its k step (0 or 1; src/cl/gemm_wgmma.cu, KEEP).
  int in_flight = 0;

  // Whether this configuration handles these transposes.
  bool Supports(Transpose trans_a, Transpose trans_b) const;
  std::string Name() const;  // "register mr10 nr32 vw16 packA"
};


// The two shapes the dispatcher starts from (the CPU one before fitting MR
// to the problem).
GemmConfig CpuShapedGemmConfig();
GemmConfig GpuShapedGemmConfig();
// The GPU shape for a short op(A) (M <= 32: fully connected layers at small
// batch): 16 x 128 tiles.
GemmConfig GpuNarrowGemmConfig();
// The GPU shape for 32 < M <= 64: 64 x 128 tiles.
GemmConfig GpuHalfHeightGemmConfig();
GemmConfig DotFormGemmConfig();
// GPU shapes that only a tuner picks (fastest for some shapes, slower for
// others).
std::vector<GemmConfig> GpuTuningVariants();
// The deeper automatic split-K of the rule for long products.
GemmConfig DeepSplit(GemmConfig config);
// The rule's GPU shape for long products (K in the tens of thousands:
// weight gradients over a whole batch): 128 x 64 tiles (64 x 64 for M <= 64),
// deeply split.
GemmConfig GpuLongProductConfig(int M);

// The built-in choice for this device and problem, from the device's
// properties (type, kind of local memory), the shape and the product's
// choices (ProductChoices: kernel shape, matrix-engine forms), never from
// the vendor's name.
GemmConfig RuleGemmConfig(const Context& ctx, const GemmArgs& args);
// What Gemm() runs: the winner `dlcaffe tune` measured for this device and
// shape (core/gemm_tuning.hpp) if there is one, else the rule's choice.
GemmConfig ChooseGemmConfig(const Context& ctx, const GemmArgs& args);
// What runs of `chosen` for this product: the rule's OpenCL C kernel where
// a wgmma configuration cannot take it, the GPU shape for grouped or
// implicit operands.
GemmConfig RunnableGemmConfig(const Context& ctx, const GemmArgs& args, const GemmConfig& chosen);
// "256x3136x576 f16 mma 3 stages (local wg16x16 ...)": the product's sizes,
// the form it runs in, its k slices and its configuration, as Gemm() would
// run it (Net::ExplainWithProducts).
std::string DescribeGemm(const Context& ctx, const GemmArgs& args);

// How many floats of each buffer a product reaches, offsets included (the
// last index + 1; 0 for an empty operand).
struct GemmExtents {
  size_t a = 0, b = 0, c = 0;
};
GemmExtents OperandExtents(const GemmArgs& args);

// How many k slices (split-K) the GPU-shaped `config` runs this product in
// on a device of `compute_units` (GemmConfig::k_slices and groups_per_unit).
// `streamed_tiles`: its tiles stream through the tensor cores (the cp.async
// pipeline or wgmma: StreamsTiles), which splits fewer products.
int SplitKSlices(int compute_units, const GemmConfig& config, int M, int N, int K, int batch,
                 bool streamed_tiles = false);
// Whether `config` runs this product's tiles through the tensor cores'
// cp.async pipeline (MmaPipelineStages) or wgmma.
bool StreamsTiles(const Context& ctx, const GemmConfig& config, const GemmArgs& args);

// Which operands the GPU-shaped `config` fetches as 4-element vectors in the interior
// tiles of this product (rows, offsets and image groups on 4-element
// boundaries; never an implicit B).
struct VectorLoads {
  bool a = false, b = false;
};
VectorLoads UsesVectorLoads(const GemmConfig& config, const GemmArgs& args);

// Every configuration ChooseGemmConfig can return, on any device (the tests
// run them all).
std::vector<GemmConfig> GemmConfigFamily();

// WARPS_M of the tensor-core form `form` of GPU-shaped `config` (gemm_tiled.cl,
// MMA): how its warps cut the tile; 0 where it cannot take that form (the
// product then runs the float kernel) or form is none.
int MmaWarpsM(const GemmConfig& config, MmaForm form);
// The cp.async stages GPU-shaped `config` streams the product of `args` through
// on the tensor cores (gemm_tiled.cl, MMA_STAGES), 0 where it does not: both
// operands stored in the form's own type (f16, bf16; float for tf32), every
// row, offset, batch stride and image group a whole number of 16-byte
// chunks, so each operand's contiguous axis, B a stored matrix, and at
// least two stages fitting the device's __local memory.
int MmaPipelineStages(const Context& ctx, const GemmConfig& config, const GemmArgs& args);

// Gemm() with a given configuration.
void GemmWithConfig(Context& ctx, const GemmArgs& args, const GemmConfig& config);

}  // namespace dlcaffe
