// What Convolution, Deconvolution and Im2col share (Caffe's
// BaseConvolutionLayer): reading ConvolutionParameter's geometry for any
// number of spatial axes, the weight and bias blobs, and the im2col + GEMM
// machinery over chunks of images.
//
// Convolution and Deconvolution run the same three products with the roles
// of bottom and top swapped. The "image side" is the blob im2col reads and
// col2im writes (the bottom of a Convolution, the top of a Deconvolution);
// the "column side" is the other one, whose spatial shape is the column
// buffer's (the top of a Convolution, the bottom of a Deconvolution). With
// col = im2col(image side):
//   column side = W * col                   (Convolution forward)
//   image side  = col2im(W^T * column side) (Convolution backward-data)
//   W_diff     += column side * col^T       (weight gradient)
// Weights are column-side channels x image-side channels / group x kernel
// shape, Caffe's layout for both layers (num_output x C/g x kh x kw for
// Convolution, C x num_output/g x kh x kw for Deconvolution).
//
// The bottoms and tops may be stored in 16 bits (mixed precision): the layout
// kernels and the GEMMs read and write them in their storage type.
//
// Axes before the channel axis (convolution_param.axis, default 1) are
// images; the axes after it are spatial. Two spatial axes take the 2-D
// kernels (a CPU and a GPU shape); any other count, or force_nd_im2col, the
// N-d ones (Caffe's im2col_nd).
//
// The GEMMs work on [channels][images * area] matrices over a chunk of images
// (the whole batch unless its column buffer would pass ColumnFloatLimit());
// the blobs are N x C x spatial. On a GPU-shaped device the GEMM reads and
// writes the column-side blob in place as an image-grouped matrix (GemmArgs),
// and a 1x1, stride 1, unpadded kernel reads the image side in place too (no
// im2col), as do 2-D GEMMs that read col (forward, weight gradient): the
// GEMM computes im2col's windows as it loads them (implicit GEMM); only the
// data gradient's col2im still needs a col buffer. On a CPU-shaped device
// they go through "column order" copies and im2col, which its GEMM kernels
// stream faster.
#pragma once
#include <string>
#include <vector>

#include "core/derived_copy.hpp"
#include "dlcaffe/layer.hpp"
#include "dlcaffe/math.hpp"
#include "core/layer_math.hpp"
#include "core/reduce_kernel.hpp"

namespace dlcaffe {

class BaseConvolutionLayer : public Layer {
 public:
  using Layer::Layer;
  int MinBottomBlobs() const override { return 1; }
  int MinTopBlobs() const override { return 1; }
  bool EqualNumBottomTopBlobs() const override { return true; }

  // A GEMM operand: rows of `ld` floats from `offset` of `mem`, its column
  // index image-grouped (GemmArgs) when group > 0; or, with an active
  // window, the implicit column matrix of the images at `offset` (B only).
  struct MatrixView {
    cl_mem mem = nullptr;
    size_t offset = 0;
    int ld = 0, group = 0, image = 0;
    StorageType type = StorageType::kFloat32;  // how `mem` stores the elements
    ConvolutionWindow window;
    MatrixView Rows(int first_row) const {
      MatrixView v = *this;
      if (window.active())  // window rows are (channel, kernel position)
        v.offset += size_t(first_row / (window.kernel_h * window.kernel_w)) * window.height *
                    window.width;
      else
        v.offset += size_t(first_row) * ld;
      return v;
    }
  };

  // SetUpGeometry, then num_output, group and the parameter blobs.
  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override;
  // Checks the bottoms, computes the output shape (OutputShape()), shapes the
  // tops and picks the chunk size.
  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override;
  std::string DescribeAlgorithm() const override;

 protected:
  // true for Deconvolution: im2col reads the top, the GEMM writes the bottom.
  virtual bool reverse_dimensions() const = 0;
  // The top's spatial shape from the bottom's (input_shape_); throws for
  // shapes that do not fit.
  virtual std::vector<int> OutputShape(const Blob& bottom) const = 0;

  // Reads the channel axis, kernel, stride, pad and dilation (Caffe's rules)
  // and picks the kernels' shape. Sets channels_; num_output_ and group_ are
  // left to the caller.
  void SetUpGeometry(const Blob& bottom);
  // Convolution's output shape: the windows that fit in the padded input.
  std::vector<int> ConvolutionOutputShape(const Blob& bottom) const;

  // --- The pieces Forward/Backward are built from, per chunk of `images`
  // --- images starting at image n0. `col` matrices are [column_rows()] x
  // --- [images * column_area()], column-side ones [column_channels_] x
  // --- [images * column_area()].
  // The column-side blob `blob` as a GEMM operand: the blob itself (GPU
  // shape) or a column-order copy in `scratch` (allocated if null), filled
  // from the blob when `read`.
  MatrixView ColumnSide(cl_mem blob, int n0, int images, bool read, BufferPtr& scratch);
  // After a GEMM wrote `view` of ColumnSide(blob, ...): copies it into the
  // blob unless it is the blob.
  void StoreColumnSide(const MatrixView& view, cl_mem blob, int n0, int images);
  // The image-side blob's columns: the blob itself (1x1 unpadded stride-1
  // kernel, GPU shape), its implicit windows (`fill`, WindowsFeed(math)),
  // or a col buffer in `scratch`, filled by im2col when `fill` (in the
  // storage type: the values as they are) and float otherwise (a GEMM's
  // sums for col2im). `math` is the math of the products that read it.
  MatrixView ImageColumns(cl_mem blob, int n0, int images, bool fill, BufferPtr& scratch,
                          MatrixMath math);
  // Whether ImageColumns(..., fill = true, ...) stages the columns in a
  // scratch buffer (im2col) rather than reading the blob.
  bool ImageColumnsStaged(MatrixMath math) const {
    return !WindowsFeed(math) && !ImageSideInPlace();
  }
  // Whether the GEMMs read and write the image-side blob in place as its
  // columns (a 1x1 unpadded stride-1 kernel, GPU shape).
  bool ImageSideInPlace() const { return in_place_ && Pointwise(); }
  // Whether products in `math` read im2col's columns as implicit windows
  // (implicit_) rather than from an im2col buffer. On a GPU-shaped device
  // that is the default, except where the GEMM's cp.async pipeline can
  // stream 16-bit columns and weights (MmaPipelineStreams): there im2col
  // into whole 16-byte chunks and the pipelined tensor-core kernel outrun
  // the register-staged kernel that gathers windows (docs/benchmarks.md).
  bool WindowsFeed(MatrixMath math) const;
  // Images per GEMM round: the whole batch when the round stages nothing in
  // scratch (columns read from the blob, the column side in place), else
  // chunk_.
  int RoundImages(bool col_buffer) const { return !col_buffer && in_place_ ? num_ : chunk_; }
  // After a GEMM wrote `view` of ImageColumns(blob, ...): blob (=) = col2im
  // of it (+ `bias`, one value per image-side channel, when given) unless it
  // is the blob.
  void StoreImageColumns(const MatrixView& view, cl_mem blob, int n0, int images,
                         cl_mem bias = nullptr);
  // col = im2col of the image-side blob `image`, stored as `type` (float,
  // or the blob's own type).
  void Im2col(cl_mem image, int n0, int images, cl_mem col, StorageType type);
  // image (=) = col2im(col) (+ `bias` per image-side channel, added to each
  // sum before it is stored, when given).
  void Col2im(cl_mem col, int n0, int images, cl_mem image, cl_mem bias = nullptr);
  // Column-side blob `blob` -> column order, stored as `type` (float, or the
  // blob's own type).
  void ToColumnOrder(cl_mem blob, int n0, int images, cl_mem columns, StorageType type);
  // Column order -> column-side blob `blob` (=).
  void FromColumnOrder(cl_mem columns, int n0, int images, cl_mem blob);
  // The math of the forward products and of the backward ones (data and
  // weight gradients): core/layer_math.hpp. Which product is which depends
  // on the layer (Deconvolution's forward is W^T * columns), so the three
  // products below take theirs from the caller.
  MatrixMath ForwardMath() const {
    return ForwardMatrixMath(param_, storage_, choices_);
  }
  MatrixMath BackwardMath() const {
    return BackwardMatrixMath(param_, storage_, choices_);
  }
  // columns = W * col (+ bias, then ReLU if `relu`), per group; with a
  // channel affine set (Layer::set_channel_affine), scale * W * col + shift.
  void WeightTimesCol(const MatrixView& col, int images, const MatrixView& columns,
                      bool bias, bool relu, MatrixMath math);
  // col = W^T * columns, per group; + the bias per row with `bias` (for a
  // 1x1 kernel, whose rows are the image-side channels).
  void WeightTransposedTimesColumns(const MatrixView& columns, int images,
                                    const MatrixView& col, MatrixMath math, bool bias = false);
  // W_diff += columns * col^T, per group.
  void AccumulateWeightDiff(const MatrixView& columns, const MatrixView& col, int images,
                            MatrixMath math);
  // bias_diff += sum over images and positions of the top diff `diff`.
  void AccumulateBiasDiff(cl_mem diff);
  // A scratch buffer of `floats` floats from the context's pool.
  BufferPtr Scratch(long long floats) const;
  // One of `count` elements of `type`.
  BufferPtr ScratchOf(long long count, StorageType type) const;
  // `scratch` as it is if it holds `count` elements of `type`, else a new one.
  void Reserve(BufferPtr& scratch, long long count, StorageType type) const;
  // The most floats one scratch buffer of a chunk may take
  // (RunOptions::conv_column_floats, 2^26 by default).
  long long ColumnFloatLimit() const;

  int column_rows() const { return image_channels_ * kernel_area(); }
  int column_area() const { return Product(column_shape_); }
  int image_area() const { return Product(image_shape_); }
  int kernel_area() const { return Product(kernel_shape_); }
  int output_area() const { return Product(output_shape_); }
  static int Product(const std::vector<int>& values);
  static std::string Join(const std::vector<int>& values);  // "3 x 5"

  int num_output_ = 0, group_ = 1, channels_ = 0;
  bool bias_term_ = true;
  int channel_axis_ = 1, num_spatial_axes_ = 2;
  std::vector<int> kernel_shape_, stride_, pad_, dilation_;
  int num_ = 0;  // images: the product of the axes before the channel axis
  std::vector<int> input_shape_, output_shape_;  // bottom's and top's spatial shapes
  int chunk_ = 1;  // images per im2col + GEMM round
  // The image side (im2col's input) and the column side, set by Reshape
  // (LayerSetUp sets the channels).
  int image_channels_ = 0, column_channels_ = 0;
  std::vector<int> image_shape_, column_shape_;
  // Reads the plan's choices (layer_choices.hpp) into the flags below:
  // every Reshape, so that a net re-planned under other options follows.
  void FollowChoices();
  bool planes_ = false;  // 2-D and layout kernels: a plane per work-item (CPU shape)
  // 2-D GEMMs read the image side's columns as implicit windows (GemmArgs::
  // b_window), with no im2col buffer: on GPU-shaped devices, where it was
  // faster; LayerChoices::implicit_gemm on|off forces it (the tests run both).
  bool implicit_ = false;
  std::string options_;  // their -D options (shape and the blobs' storage type)
  // How the bottoms and tops are stored (Reshape): the weights, the scratch
  // buffers and the GEMMs' sums are float in every case.
  StorageType storage_ = StorageType::kFloat32;
  ReduceWorkspace bias_sums_;  // AccumulateBiasDiff's reduction scratch

 private:
  static constexpr size_t kGroup = 64;    // work-group width of the layout kernels
  static constexpr int kIm2colRun = 8;    // IM2COL_RUN in im2col.cl
  static constexpr int kMaxSpatialAxes = 10;  // as Caffe's GPU im2col_nd

  std::vector<int> ReadAxes(const char* name,
                            const google::protobuf::RepeatedField<uint32_t>& values,
                            bool has_h, bool has_w, uint32_t h, uint32_t w, int fallback);
  NDRange LayoutRange(int images, int channels, int elements) const;
  NDRange LayoutGroup() const;

  int rows_per_group() const { return column_rows() / group_; }
  int outputs_per_group() const { return column_channels_ / group_; }
  // The weights as [column_channels_] x [rows_per_group()] for products in
  // `math`: the blob, or, where the tensor cores would round them to the
  // storage type as they load them (MmaRoundsTo), a copy so rounded, kept
  // until the weights change; the pipeline streams only operands stored in
  // its own type.
  MatrixView Weights(MatrixMath math);
  MatrixView WeightDiff() const;
  DerivedCopy rounded_weights_;  // Weights()'s copy

  bool nd_ = false;      // the N-d im2col kernels
  BufferPtr geometry_;   // their shapes (im2col.cl)
  std::vector<int> written_geometry_;  // what geometry_ holds
  // GEMMs on the blobs in place (GPU shape): the column side always, the
  // image side for a pointwise kernel.
  bool in_place_ = false;
  bool Pointwise() const;
};

}  // namespace dlcaffe
