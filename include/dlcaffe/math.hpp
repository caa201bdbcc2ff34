// Device-side BLAS-like helpers shared by layers and solvers. Every pointer is
// a cl_mem plus an offset counted in floats. All of them only enqueue work,
// except the reductions that return a host value (Dot, Asum, Sumsq), which
// wait for their result.
#pragma once
#include <CL/cl.h>

#include <optional>
#include <vector>

#include "dlcaffe/layer_choices.hpp"
#include "dlcaffe/storage_type.hpp"

namespace dlcaffe {

class Context;

enum class Transpose { kNo, kYes };

// What a product's inputs may be rounded to before they are multiplied (a
// layer's forward_math / backward_math; the sums are float either way).
// kFloat32 keeps the exact float kernels, bit for bit Caffe's arithmetic;
// the others let a device's matrix engine multiply (NVIDIA's tensor cores
// through mma.sync, core/matrix_engine.hpp) where it has one for that type,
// and run the float kernels where it has not (at least as accurate).
enum class MatrixMath { kFloat32 = 0, kTF32 = 1, kFloat16 = 2, kBFloat16 = 3 };

// C = alpha * op(A) * op(B) + beta * C, row-major, op(A) is M x K, op(B) is
// K x N, C is M x N. lda/ldb/ldc default to the packed row stride.
// The column matrix of 2-D convolution windows over a batch of NCHW images
// (im2col's output, never stored): row (c, ki, kj) and column (image, oh, ow)
// hold image[image][c][oh * stride_h - pad_h + ki * dilation_h]
// [ow * stride_w - pad_w + kj * dilation_w], 0 in the padding; images are
// `image_floats` apart. With nhwc_channels > 0 the images are channels-last
// (NHWC, that many channels) and the rows run (ki, kj, c), c fastest.
struct ConvolutionWindow {
  int height = 0, width = 0;  // of the input image
  int kernel_h = 0, kernel_w = 0, pad_h = 0, pad_w = 0;
  int stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int out_h = 0, out_w = 0;
  int image_floats = 0;
  int nhwc_channels = 0;
  bool active() const { return kernel_h > 0; }
};

struct GemmArgs {
  Transpose trans_a = Transpose::kNo;
  Transpose trans_b = Transpose::kNo;
  int M = 0, N = 0, K = 0;
  float alpha = 1.f;
  cl_mem A = nullptr;
  size_t a_offset = 0;
  int lda = -1;
  cl_mem B = nullptr;
  size_t b_offset = 0;
  int ldb = -1;
  float beta = 0.f;
  cl_mem C = nullptr;
  size_t c_offset = 0;
  int ldc = -1;
  // Image-grouped axes, for NCHW blobs read or written as one matrix over a
  // batch of images: 0 is the plain layout; otherwise index q of the axis is
  // at (q / group) * image + q % group (group consecutive indices per image,
  // images `image` floats apart). A: its k axis (A untransposed only); B: its
  // n axis, or its k axis when transposed; C: its n axis.
  int a_group = 0, a_image = 0;
  int b_group = 0, b_image = 0;
  int c_group = 0, c_image = 0;
  // Epilogue: row m of alpha * op(A) op(B) is scaled by
  // row_scale[row_scale_offset + m] (a per-channel affine folded into a
  // convolution), then after beta: C[m][n] += bias[bias_offset + m] (a
  // convolution's channels), or bias[bias_offset + n] where
  // bias_per_column (a fully connected layer's outputs), then
  // C = max(C, 0) if relu.
  cl_mem row_scale = nullptr;
  size_t row_scale_offset = 0;
  cl_mem bias = nullptr;
  size_t bias_offset = 0;
  bool bias_per_column = false;
  bool relu = false;
  // Batched form: `batch` independent products, matrix i of each operand at
  // its offset + i * its batch stride (floats), and product i's bias and row
  // scale at their offsets + i * epilogue_batch_stride (0: shared; a grouped
  // convolution's groups each have their own).
  int batch = 1;
  size_t a_batch_stride = 0, b_batch_stride = 0, c_batch_stride = 0;
  size_t epilogue_batch_stride = 0;
  // How each operand's elements are stored (storage_type.hpp): 16-bit
  // values are widened on load and C rounded to nearest even on store; the
  // sums are float. Offsets, leading dimensions and strides count elements.
  // bias and row_scale are float.
  StorageType a_type = StorageType::kFloat32;
  StorageType b_type = StorageType::kFloat32;
  StorageType c_type = StorageType::kFloat32;
  // Implicit im2col: when active, B is not a matrix in memory but the window
  // matrix of the images at B + b_offset (ldb, b_group and b_image unused);
  // op(B) = windows (trans_b no: K rows x N columns) or its transpose (N
  // rows x K columns). Convolution's forward and weight gradient read their
  // input this way on GPU-shaped devices, with no column buffer.
  ConvolutionWindow b_window;
  MatrixMath math = MatrixMath::kFloat32;
  // What the plan decided for the layer that asks for the product
  // (Layer::choices): the GEMM kernels' shape and the matrix-engine forms
  // they may take. Unset: the context's options decide
  // (Context::default_choices), for solvers, tools and tests.
  std::optional<LayerChoices> choices;
};
void Gemm(Context& ctx, const GemmArgs& args);
// The choices a product runs under: its own, else the context's.
LayerChoices ProductChoices(const Context& ctx, const GemmArgs& args);

// Convenience form with packed strides (and operands of any storage type).
void Gemm(Context& ctx, Transpose trans_a, Transpose trans_b, int M, int N,
          int K, float alpha, cl_mem A, size_t a_offset, cl_mem B,
          size_t b_offset, float beta, cl_mem C, size_t c_offset,
          StorageType a_type = StorageType::kFloat32,
          StorageType b_type = StorageType::kFloat32,
          StorageType c_type = StorageType::kFloat32);

// y = a * x + y
void Axpy(Context& ctx, int n, float a, cl_mem x, size_t x_off, cl_mem y,
          size_t y_off);
// x = a * x
void Scale(Context& ctx, int n, float a, cl_mem x, size_t x_off);
// y = x
void CopyFloats(Context& ctx, int n, cl_mem x, size_t x_off, cl_mem y,
                size_t y_off);
// x[i] = value
void SetFloats(Context& ctx, int n, float value, cl_mem x, size_t x_off);
// Sets the first counts[k] floats of every buffers[k] to value: small
// buffers eight per launch (a launch costs microseconds on a GPU; a net has
// hundreds of parameter blobs), large ones by a fill command each.
void SetFloatsOfMany(Context& ctx, const std::vector<cl_mem>& buffers,
                     const std::vector<int>& counts, float value);
// out[out_off] = scale * sum of x[x_off, x_off + n), computed on the device
// without a host round trip (losses stay on the device).
void SumToScalar(Context& ctx, int n, cl_mem x, size_t x_off, float scale, cl_mem out,
                 size_t out_off);
// Reductions returning to the host (they synchronise).
float Dot(Context& ctx, int n, cl_mem x, size_t x_off, cl_mem y, size_t y_off);
float Asum(Context& ctx, int n, cl_mem x, size_t x_off);
float Sumsq(Context& ctx, int n, cl_mem x, size_t x_off);
// Whether the first counts[k] floats of every buffers[k] are all finite (no
// Inf, no NaN): one flag on the device, read once (it synchronises).
bool AllFinite(Context& ctx, const std::vector<cl_mem>& buffers, const std::vector<int>& counts);

}  // namespace dlcaffe
