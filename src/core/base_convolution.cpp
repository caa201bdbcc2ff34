#include "core/base_convolution.hpp"
#include "core/channel_sums.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "core/gemm_config.hpp"
#include "core/matrix_engine.hpp"
#include "core/storage_option.hpp"
#include "dlcaffe/filler.hpp"
#include "dlcaffe/math.hpp"

namespace dlcaffe {

int BaseConvolutionLayer::Product(const std::vector<int>& values) {
  int product = 1;
  for (int v : values) product *= v;
  return product;
}

std::string BaseConvolutionLayer::Join(const std::vector<int>& values) {
  std::string s;
  for (size_t i = 0; i < values.size(); ++i) s += (i ? " x " : "") + std::to_string(values[i]);
  return s;
}

void BaseConvolutionLayer::LayerSetUp(const std::vector<Blob*>& bottom,
                                      const std::vector<Blob*>& top) {
  const caffe::ConvolutionParameter& p = param_.convolution_param();
  SetUpGeometry(*bottom[0]);
  num_output_ = static_cast<int>(p.num_output());
  group_ = static_cast<int>(p.group());
  DLC_REQUIRE(num_output_ > 0, Where() << "num_output must be positive");
  DLC_REQUIRE(group_ > 0, Where() << "group must be positive");
  DLC_REQUIRE(channels_ % group_ == 0,
              Where() << "group " << group_ << " does not divide the " << channels_
                      << " input channels of bottom " << bottom[0]->shape_string());
  DLC_REQUIRE(num_output_ % group_ == 0, Where() << "group " << group_
                                                 << " does not divide num_output "
                                                 << num_output_);
  bias_term_ = p.bias_term();
  image_channels_ = reverse_dimensions() ? num_output_ : channels_;
  column_channels_ = reverse_dimensions() ? channels_ : num_output_;

  std::vector<int> weight_shape = {column_channels_, image_channels_ / group_};
  weight_shape.insert(weight_shape.end(), kernel_shape_.begin(), kernel_shape_.end());
  const std::vector<int> bias_shape = {num_output_};
  auto shape_string = [](const std::vector<int>& shape) {
    std::string s;
    for (int d : shape) s += std::to_string(d) + " ";
    return s + "(" + std::to_string(Product(shape)) + ")";
  };
  if (!blobs_.empty()) {
    // Set already (shared or loaded): the shapes must agree.
    DLC_REQUIRE(blobs_.size() == (bias_term_ ? 2u : 1u),
                Where() << "has " << blobs_.size() << " parameter blobs, expected "
                        << (bias_term_ ? 2 : 1));
    DLC_REQUIRE(blobs_[0]->shape() == weight_shape,
                Where() << "weight blob " << blobs_[0]->shape_string() << " does not match "
                        << shape_string(weight_shape));
    DLC_REQUIRE(!bias_term_ || blobs_[1]->shape() == bias_shape,
                Where() << "bias blob " << blobs_[1]->shape_string() << " does not match "
                        << shape_string(bias_shape));
  } else {
    blobs_.push_back(std::make_shared<Blob>(*ctx_, weight_shape));
    FillBlob(p.weight_filler(), blobs_[0].get());
    if (bias_term_) {
      blobs_.push_back(std::make_shared<Blob>(*ctx_, bias_shape));
      FillBlob(p.bias_filler(), blobs_[1].get());
    }
  }
  for (size_t i = 0; i < blobs_.size(); ++i) set_param_propagate_down(i, true);
}

void BaseConvolutionLayer::SetUpGeometry(const Blob& bottom) {
  const caffe::ConvolutionParameter& p = param_.convolution_param();
  const int axes = bottom.num_axes();
  DLC_REQUIRE(p.axis() >= -axes && p.axis() < axes,
              Where() << "axis " << p.axis() << " is out of range for bottom "
                      << bottom.shape_string());
  channel_axis_ = p.axis() < 0 ? p.axis() + axes : p.axis();
  num_spatial_axes_ = axes - channel_axis_ - 1;
  DLC_REQUIRE(num_spatial_axes_ >= 1,
              Where() << "bottom " << bottom.shape_string() << " has no spatial axis after "
                      << "the channel axis " << channel_axis_);
  DLC_REQUIRE(num_spatial_axes_ <= kMaxSpatialAxes,
              Where() << "bottom " << bottom.shape_string() << " has " << num_spatial_axes_
                      << " spatial axes, more than the " << kMaxSpatialAxes << " supported");
  channels_ = bottom.shape(channel_axis_);

  DLC_REQUIRE(p.has_kernel_h() || p.has_kernel_w() || p.kernel_size_size() > 0,
              Where() << "needs kernel_size or kernel_h and kernel_w");
  kernel_shape_ = ReadAxes("kernel", p.kernel_size(), p.has_kernel_h(), p.has_kernel_w(),
                           p.kernel_h(), p.kernel_w(), 0);
  stride_ = ReadAxes("stride", p.stride(), p.has_stride_h(), p.has_stride_w(), p.stride_h(),
                     p.stride_w(), 1);
  pad_ = ReadAxes("pad", p.pad(), p.has_pad_h(), p.has_pad_w(), p.pad_h(), p.pad_w(), 0);
  dilation_ = ReadAxes("dilation", p.dilation(), false, false, 0, 0, 1);
  auto positive = [](const std::vector<int>& v) {
    return std::all_of(v.begin(), v.end(), [](int x) { return x > 0; });
  };
  DLC_REQUIRE(positive(kernel_shape_), Where() << "kernel " << Join(kernel_shape_)
                                               << " must be nonzero in every dimension");
  DLC_REQUIRE(positive(stride_),
              Where() << "stride " << Join(stride_) << " must be nonzero in every dimension");
  DLC_REQUIRE(positive(dilation_), Where() << "dilation " << Join(dilation_)
                                           << " must be nonzero in every dimension");

  nd_ = num_spatial_axes_ != 2 || p.force_nd_im2col();
}

void BaseConvolutionLayer::FollowChoices() {
  // The 2-D kernels' shape is the plan's, as the GEMM's is
  // (RunOptions::kernel_shape forces one; the tests run both).
  planes_ = choices_.cpu_shaped_kernels;
  in_place_ = !planes_;
  const RunOptions::Choice implicit = choices_.implicit_gemm;
  implicit_ = !nd_ && (implicit == RunOptions::Choice::kAuto ? !planes_
                                                               : implicit == RunOptions::Choice::kOn);
}

std::string BaseConvolutionLayer::DescribeAlgorithm() const {
  return std::string(implicit_ ? "implicit GEMM" : nd_ ? "N-d im2col + GEMM" : "im2col + GEMM") +
         (planes_ ? ", plane kernels" : "");
}

bool BaseConvolutionLayer::Pointwise() const {
  for (int d = 0; d < num_spatial_axes_; ++d)
    if (kernel_shape_[d] != 1 || stride_[d] != 1 || pad_[d] != 0) return false;
  return true;
}

// One value for every axis, one per axis, or (2-D only) the _h/_w pair:
// Caffe's rules.
std::vector<int> BaseConvolutionLayer::ReadAxes(
    const char* name, const google::protobuf::RepeatedField<uint32_t>& values, bool has_h,
    bool has_w, uint32_t h, uint32_t w, int fallback) {
  if (has_h || has_w) {
    DLC_REQUIRE(values.size() == 0, Where() << "either " << name << " or " << name << "_h/"
                                            << name << "_w, not both");
    DLC_REQUIRE(num_spatial_axes_ == 2,
                Where() << name << "_h/" << name << "_w need 2 spatial axes, not "
                        << num_spatial_axes_ << "; give " << name << " per axis");
    return {static_cast<int>(h), static_cast<int>(w)};
  }
  DLC_REQUIRE(values.size() <= 1 || values.size() == num_spatial_axes_,
              Where() << name << " given " << values.size() << " times for "
                      << num_spatial_axes_ << " spatial axes: give one value or one per axis");
  std::vector<int> result(num_spatial_axes_, fallback);
  for (int d = 0; d < num_spatial_axes_ && values.size() > 0; ++d)
    result[d] = static_cast<int>(values.Get(values.size() == 1 ? 0 : d));
  return result;
}

std::vector<int> BaseConvolutionLayer::ConvolutionOutputShape(const Blob& bottom) const {
  std::vector<int> extent(num_spatial_axes_), output(num_spatial_axes_);
  bool fits = true;
  for (int d = 0; d < num_spatial_axes_; ++d) {
    extent[d] = dilation_[d] * (kernel_shape_[d] - 1) + 1;
    fits = fits && input_shape_[d] + 2 * pad_[d] >= extent[d];
    output[d] = (input_shape_[d] + 2 * pad_[d] - extent[d]) / stride_[d] + 1;
  }
  DLC_REQUIRE(fits, Where() << "input " << bottom.shape_string() << " padded by "
                            << Join(pad_) << " is smaller than the " << Join(kernel_shape_)
                            << " kernel (dilated extent " << Join(extent) << ")");
  return output;
}

void BaseConvolutionLayer::Reshape(const std::vector<Blob*>& bottom,
                                   const std::vector<Blob*>& top) {
  const Blob& first = *bottom[0];
  DLC_REQUIRE(first.num_axes() == channel_axis_ + 1 + num_spatial_axes_,
              Where() << "bottom " << first.shape_string() << " has " << first.num_axes()
                      << " axes; the layer was set up for "
                      << channel_axis_ + 1 + num_spatial_axes_);
  DLC_REQUIRE(first.shape(channel_axis_) == channels_,
              Where() << "bottom " << first.shape_string() << " has "
                      << first.shape(channel_axis_) << " channels; the weights expect "
                      << channels_);
  for (size_t i = 1; i < bottom.size(); ++i)
    DLC_REQUIRE(bottom[i]->shape() == first.shape(),
                Where() << "all bottoms must have one shape: bottom 0 is "
                        << first.shape_string() << ", bottom " << i << " is "
                        << bottom[i]->shape_string());
  FollowChoices();
  storage_ = first.storage_type();
  for (const std::vector<Blob*>* blobs : {&bottom, &top})
    for (const Blob* blob : *blobs)
      DLC_REQUIRE(blob->storage_type() == storage_,
                  Where() << "stores its bottoms and tops in one type; bottom 0 is "
                          << StorageTypeName(storage_) << ", another "
                          << StorageTypeName(blob->storage_type()));
  ForwardMath();  // a math field that is not a math type fails here, not in Forward
  BackwardMath();
  options_ = std::string(planes_ ? "-DPLANES=1" : "-DPLANES=0") +
             StorageOption("DATA_TYPE", storage_);
  num_ = first.count(0, channel_axis_);
  input_shape_.assign(first.shape().begin() + channel_axis_ + 1, first.shape().end());
  output_shape_ = OutputShape(first);
  std::vector<int> top_shape(first.shape().begin(), first.shape().begin() + channel_axis_);
  top_shape.push_back(num_output_);
  top_shape.insert(top_shape.end(), output_shape_.begin(), output_shape_.end());
  for (size_t i = 0; i < top.size(); ++i) top[i]->Reshape(top_shape);
  image_shape_ = reverse_dimensions() ? output_shape_ : input_shape_;
  column_shape_ = reverse_dimensions() ? input_shape_ : output_shape_;

  // Images per chunk: the whole batch when its column buffer fits.
  const long long column_floats_per_image = 1LL * column_rows() * column_area();
  const long long side_floats_per_image = 1LL * column_channels_ * column_area();
  const long long per_image =
      std::max({column_floats_per_image, side_floats_per_image, 1LL});
  DLC_REQUIRE(per_image <= std::numeric_limits<int>::max(),
              Where() << "one image of " << first.shape_string()
                      << " needs a column buffer of " << per_image
                      << " floats, past 32-bit indexing");
  chunk_ = static_cast<int>(
      std::max(1LL, std::min<long long>(num_, ColumnFloatLimit() / per_image)));

  if (nd_) {
    std::vector<int> geometry = image_shape_;
    for (const std::vector<int>* v : {&column_shape_, &kernel_shape_, &pad_, &stride_, &dilation_})
      geometry.insert(geometry.end(), v->begin(), v->end());
    // Net runs Reshape every pass: write (a blocking transfer) only on change.
    if (geometry_ && geometry == written_geometry_) return;
    const size_t bytes = geometry.size() * sizeof(int);
    if (!geometry_ || geometry_->bytes() < bytes) geometry_ = ctx_->Allocate(bytes);
    ctx_->Write(geometry_->mem(), 0, bytes, geometry.data());
    written_geometry_ = geometry;
  }
}

// Column and output buffers of one chunk stay under this many floats (256 MiB
// by default), so large batches of large images do not exhaust the device.
// LayerChoices::column_floats (RunOptions::conv_column_floats; tests lower it to run the several-chunk
// path on small shapes).
long long BaseConvolutionLayer::ColumnFloatLimit() const {
  return choices_.column_floats;
}

BufferPtr BaseConvolutionLayer::Scratch(long long floats) const {
  return ScratchOf(floats, StorageType::kFloat32);
}

BufferPtr BaseConvolutionLayer::ScratchOf(long long count, StorageType type) const {
  return ctx_->Allocate(StorageBytes(type) * size_t(std::max(count, 1LL)));
}

// A round's scratch serves its next view too (the weight gradient's 16-bit
// columns, then the data gradient's float ones) where it is large enough.
void BaseConvolutionLayer::Reserve(BufferPtr& scratch, long long count, StorageType type) const {
  if (!scratch || scratch->bytes() < StorageBytes(type) * size_t(std::max(count, 1LL)))
    scratch = ScratchOf(count, type);
}

bool BaseConvolutionLayer::WindowsFeed(MatrixMath math) const {
  if (!implicit_) return false;
  if (choices_.implicit_gemm == RunOptions::Choice::kOn ||
      !MmaPipelineStreams(*ctx_, choices_, math, storage_))
    return true;
  // im2col's columns, each round's [rows][images * area], in whole chunks
  // (else the pipeline would not take them either).
  const int chunk = MmaPipelineChunk(storage_);
  const auto whole = [&](int images) { return 1LL * images * column_area() % chunk == 0; };
  return !(whole(chunk_) && whole(num_ % chunk_));
}

// The layout kernels' range over (images, channels) planes: one work-item per
// plane, or one per element with `elements` of them per channel.
NDRange BaseConvolutionLayer::LayoutRange(int images, int channels, int elements) const {
  return planes_ ? NDRange(images, channels) : NDRange(RoundUp(elements, kGroup), channels);
}
NDRange BaseConvolutionLayer::LayoutGroup() const {
  return planes_ ? NDRange(1, 1) : NDRange(kGroup, 1);
}

void BaseConvolutionLayer::Im2col(cl_mem image, int n0, int images, cl_mem col,
                                  StorageType type) {
  const int image_off = n0 * image_channels_ * image_area();
  const std::string options = options_ + StorageOption("COL_TYPE", type);
  if (nd_) {
    ctx_->Launch(ctx_->Kernel("im2col.cl", options, "im2col_nd"),
                 NDRange(RoundUp(images * column_area(), kGroup), column_rows()),
                 NDRange(kGroup, 1), images, image_channels_, num_spatial_axes_,
                 geometry_->mem(), image_area(), column_area(), kernel_area(), image,
                 image_off, col);
    return;
  }
  // A run of kIm2colRun columns of one row per work-item; else a plane.
  const NDRange range =
      planes_ ? LayoutRange(images, image_channels_, 0)
              : NDRange(RoundUp((images * column_area() + kIm2colRun - 1) / kIm2colRun, kGroup),
                        column_rows());
  ctx_->Launch(ctx_->Kernel("im2col.cl", options, "im2col"), range, LayoutGroup(), images,
               image_channels_, image_shape_[0], image_shape_[1], kernel_shape_[0],
               kernel_shape_[1], pad_[0], pad_[1], stride_[0], stride_[1], dilation_[0],
               dilation_[1], column_shape_[0], column_shape_[1], image, image_off, col);
}

void BaseConvolutionLayer::Col2im(cl_mem col, int n0, int images, cl_mem image, cl_mem bias) {
  const int image_off = n0 * image_channels_ * image_area();
  const int has_bias = bias != nullptr;
  if (!bias) bias = col;  // bound, not read
  if (nd_) {
    ctx_->Launch(ctx_->Kernel("im2col.cl", options_, "col2im_nd"),
                 NDRange(RoundUp(images * image_area(), kGroup), image_channels_),
                 NDRange(kGroup, 1), images, image_channels_, num_spatial_axes_,
                 geometry_->mem(), image_area(), column_area(), kernel_area(), col, image,
                 image_off, has_bias, bias);
    return;
  }
  ctx_->Launch(ctx_->Kernel("im2col.cl", options_, "col2im"),
               LayoutRange(images, image_channels_, images * image_area()), LayoutGroup(),
               images, image_channels_, image_shape_[0], image_shape_[1], kernel_shape_[0],
               kernel_shape_[1], pad_[0], pad_[1], stride_[0], stride_[1], dilation_[0],
               dilation_[1], column_shape_[0], column_shape_[1], col, image, image_off, has_bias,
               bias);
}

BaseConvolutionLayer::MatrixView BaseConvolutionLayer::ColumnSide(cl_mem blob, int n0,
                                                                   int images, bool read,
                                                                   BufferPtr& scratch) {
  MatrixView v;
  if (in_place_) {
    v.mem = blob;
    v.type = storage_;
    v.offset = size_t(n0) * column_channels_ * column_area();
    v.ld = v.group = column_area();
    v.image = column_channels_ * column_area();
    return v;
  }
  // Read: copies of the blob's values, in its type; else a GEMM's float sums.
  v.type = read ? storage_ : StorageType::kFloat32;
  Reserve(scratch, 1LL * column_channels_ * images * column_area(), v.type);
  if (read) ToColumnOrder(blob, n0, images, scratch->mem(), v.type);
  v.mem = scratch->mem();
  v.ld = images * column_area();
  return v;
}

void BaseConvolutionLayer::StoreColumnSide(const MatrixView& view, cl_mem blob, int n0,
                                           int images) {
  if (view.mem != blob) FromColumnOrder(view.mem, n0, images, blob);
}

BaseConvolutionLayer::MatrixView BaseConvolutionLayer::ImageColumns(cl_mem blob, int n0,
                                                                     int images, bool fill,
                                                                     BufferPtr& scratch,
                                                                     MatrixMath math) {
  MatrixView v;
  if (ImageSideInPlace()) {
    // im2col of a 1x1 unpadded stride-1 kernel is the image itself.
    v.mem = blob;
    v.type = storage_;
    v.offset = size_t(n0) * image_channels_ * image_area();
    v.ld = v.group = image_area();
    v.image = image_channels_ * image_area();
    return v;
  }
  if (fill && WindowsFeed(math)) {
    v.mem = blob;
    v.type = storage_;
    v.offset = size_t(n0) * image_channels_ * image_area();
    ConvolutionWindow& w = v.window;
    w.height = image_shape_[0];
    w.width = image_shape_[1];
    w.kernel_h = kernel_shape_[0];
    w.kernel_w = kernel_shape_[1];
    w.pad_h = pad_[0];
    w.pad_w = pad_[1];
    w.stride_h = stride_[0];
    w.stride_w = stride_[1];
    w.dilation_h = dilation_[0];
    w.dilation_w = dilation_[1];
    w.out_h = column_shape_[0];
    w.out_w = column_shape_[1];
    w.image_floats = image_channels_ * image_area();
    return v;
  }
  // Filled: copies of the blob's values, in its type; else a GEMM's float sums.
  v.type = fill ? storage_ : StorageType::kFloat32;
  Reserve(scratch, 1LL * column_rows() * images * column_area(), v.type);
  if (fill) Im2col(blob, n0, images, scratch->mem(), v.type);
  v.mem = scratch->mem();
  v.ld = images * column_area();
  return v;
}

void BaseConvolutionLayer::StoreImageColumns(const MatrixView& view, cl_mem blob, int n0,
                                             int images, cl_mem bias) {
  if (view.mem != blob) Col2im(view.mem, n0, images, blob, bias);
}

void BaseConvolutionLayer::ToColumnOrder(cl_mem blob, int n0, int images, cl_mem columns,
                                         StorageType type) {
  ctx_->Launch(ctx_->Kernel("convolution.cl", options_ + StorageOption("COL_TYPE", type),
                            "conv_nchw_to_columns"),
               LayoutRange(images, column_channels_, images * column_area()), LayoutGroup(),
               images, column_channels_, column_area(), blob,
               n0 * column_channels_ * column_area(), columns);
}

void BaseConvolutionLayer::FromColumnOrder(cl_mem columns, int n0, int images,
                                           cl_mem blob) {
  ctx_->Launch(ctx_->Kernel("convolution.cl", options_, "conv_columns_to_nchw"),
               LayoutRange(images, column_channels_, images * column_area()), LayoutGroup(),
               images, column_channels_, column_area(), columns, blob,
               n0 * column_channels_ * column_area());
}

namespace {

// GemmArgs' operand fields from a view; `grouped_axis` says whether the
// view's column index is the axis GemmArgs groups for that operand.
void SetA(GemmArgs& g, const BaseConvolutionLayer::MatrixView& v) {
  g.A = v.mem;
  g.a_type = v.type;
  g.a_offset = v.offset;
  g.lda = v.ld;
  g.a_group = v.group;
  g.a_image = v.image;
}
void SetB(GemmArgs& g, const BaseConvolutionLayer::MatrixView& v) {
  g.B = v.mem;
  g.b_type = v.type;
  g.b_offset = v.offset;
  g.ldb = v.ld;
  g.b_group = v.group;
  g.b_image = v.image;
  g.b_window = v.window;
}
void SetC(GemmArgs& g, const BaseConvolutionLayer::MatrixView& v) {
  g.C = v.mem;
  g.c_type = v.type;
  g.c_offset = v.offset;
  g.ldc = v.ld;
  g.c_group = v.group;
  g.c_image = v.image;
}

}  // namespace

BaseConvolutionLayer::MatrixView BaseConvolutionLayer::Weights(MatrixMath math) {
  MatrixView v;
  v.mem = blobs_[0]->data();
  v.ld = rows_per_group();
  if (const BufferPtr rounded =
          MmaRoundedWeights(*ctx_, choices_, *blobs_[0], math, storage_, rounded_weights_)) {
    v.mem = rounded->mem();
    v.type = storage_;
  }
  return v;
}

BaseConvolutionLayer::MatrixView BaseConvolutionLayer::WeightDiff() const {
  MatrixView v;
  v.mem = blobs_[0]->diff();
  v.ld = rows_per_group();
  return v;
}

namespace {

// The groups of a grouped convolution as one batched product: product g's
// operands start where Rows() puts group g's (the stride from group 0 to 1).
void SetBatchStrides(GemmArgs& g, int groups, const BaseConvolutionLayer::MatrixView& a,
                     int a_rows, const BaseConvolutionLayer::MatrixView& b, int b_rows,
                     const BaseConvolutionLayer::MatrixView& c, int c_rows) {
  g.batch = groups;
  if (groups == 1) return;
  g.a_batch_stride = a.Rows(a_rows).offset - a.offset;
  g.b_batch_stride = b.Rows(b_rows).offset - b.offset;
  g.c_batch_stride = c.Rows(c_rows).offset - c.offset;
}

}  // namespace

void BaseConvolutionLayer::WeightTimesCol(const MatrixView& col, int images,
                                          const MatrixView& columns, bool bias, bool relu,
                                          MatrixMath math) {
  GemmArgs a;
  a.math = math;
  a.choices = choices_;
  a.M = outputs_per_group();
  a.N = images * column_area();
  a.K = rows_per_group();
  const MatrixView weights = Weights(math);
  SetA(a, weights);
  SetB(a, col);
  SetC(a, columns);
  SetBatchStrides(a, group_, weights, outputs_per_group(), col, rows_per_group(), columns,
                  outputs_per_group());
  a.epilogue_batch_stride = outputs_per_group();  // each group's bias and scale
  if (epilogue_.channel_shift) {  // a folded BatchNorm/Scale (its shift has our bias)
    a.row_scale = epilogue_.channel_scale->data();
    a.bias = epilogue_.channel_shift->data();
  } else if (bias) {
    a.bias = blobs_[1]->data();
  }
  a.relu = relu;
  Gemm(*ctx_, a);
}

void BaseConvolutionLayer::WeightTransposedTimesColumns(const MatrixView& columns,
                                                        int images, const MatrixView& col,
                                                        MatrixMath math, bool bias) {
  GemmArgs a;
  a.math = math;
  a.choices = choices_;
  a.trans_a = Transpose::kYes;
  a.M = rows_per_group();
  a.N = images * column_area();
  a.K = outputs_per_group();
  const MatrixView weights = Weights(math);
  SetA(a, weights);
  SetB(a, columns);
  SetC(a, col);
  SetBatchStrides(a, group_, weights, outputs_per_group(), columns, outputs_per_group(), col,
                  rows_per_group());
  if (bias) {
    a.bias = blobs_[1]->data();
    a.epilogue_batch_stride = rows_per_group();  // each group's channels
  }
  Gemm(*ctx_, a);
}

void BaseConvolutionLayer::AccumulateWeightDiff(const MatrixView& columns,
                                                const MatrixView& col, int images,
                                                MatrixMath math) {
  GemmArgs a;
  a.math = math;
  a.choices = choices_;
  a.trans_b = Transpose::kYes;
  a.M = outputs_per_group();
  a.N = rows_per_group();
  a.K = images * column_area();
  a.beta = 1.f;
  SetA(a, columns);
  SetB(a, col);
  SetC(a, WeightDiff());
  SetBatchStrides(a, group_, columns, outputs_per_group(), col, rows_per_group(), WeightDiff(),
                  outputs_per_group());
  Gemm(*ctx_, a);
}

void BaseConvolutionLayer::AccumulateBiasDiff(cl_mem diff) {
  // The generated per-channel sums share a channel among work-groups: one
  // work-group per channel left most of a GPU idle on layers of few
  // channels and large images (docs/benchmarks.md, M7).
  ChannelSums(*ctx_, KernelShapeOf(choices_), ChannelSumKind::kProducts, num_, num_output_,
              output_area(), {diff, storage_}, nullptr, {blobs_[1]->diff(), 0, true}, {},
              &bias_sums_);
}

}  // namespace dlcaffe
