// Convolution (Caffe "Convolution"), 2-D, through the GEMM.
//
// Forward, for a chunk of images (the whole batch unless its column buffer
// would pass ColumnFloatLimit()):
//   im2col over the chunk -> col [C*kh*kw][n*Ho*Wo]            (pool buffer)
//   per group g: out_g = W_g [Cout/g x C/g*kh*kw] * col_g       (one GEMM)
//   out [Cout][n*Ho*Wo] -> top NCHW, adding the bias
// Backward:
//   bias_diff += sum over n, p of top_diff                       (whole batch)
//   top_diff chunk -> dy [Cout][n*Ho*Wo]
//   per group: W_diff_g += dy_g * col_g^T                        (im2col again)
//              col_g = W_g^T * dy_g, then col2im -> bottom_diff  (gather, =)
// Weights are num_output x C/group x kh x kw and the bias num_output, Caffe's
// layout, so .caffemodel files load as they are. Several bottom/top pairs
// share the weights, as in Caffe.
#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>

#include "core/gemm_config.hpp"
#include "dlcaffe/filler.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "dlcaffe/math.hpp"

namespace dlcaffe {

class ConvolutionLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Convolution"; }
  int MinBottomBlobs() const override { return 1; }
  int MinTopBlobs() const override { return 1; }
  bool EqualNumBottomTopBlobs() const override { return true; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::ConvolutionParameter& p = param_.convolution_param();
    CheckTwoDimensional(*bottom[0]);
    ReadGeometry(p);
    num_output_ = static_cast<int>(p.num_output());
    group_ = static_cast<int>(p.group());
    channels_ = bottom[0]->shape(1);
    DLC_REQUIRE(num_output_ > 0, Where() << "num_output must be positive");
    DLC_REQUIRE(group_ > 0, Where() << "group must be positive");
    DLC_REQUIRE(channels_ % group_ == 0,
                Where() << "group " << group_ << " does not divide the " << channels_
                        << " input channels of bottom " << bottom[0]->shape_string());
    DLC_REQUIRE(num_output_ % group_ == 0, Where() << "group " << group_
                                                   << " does not divide num_output "
                                                   << num_output_);
    bias_term_ = p.bias_term();

    const std::vector<int> weight_shape = {num_output_, channels_ / group_, kernel_h_,
                                           kernel_w_};
    const std::vector<int> bias_shape = {num_output_};
    if (!blobs_.empty()) {
      // Set already (shared or loaded): the shapes must agree.
      DLC_REQUIRE(blobs_.size() == (bias_term_ ? 2u : 1u),
                  Where() << "has " << blobs_.size() << " parameter blobs, expected "
                          << (bias_term_ ? 2 : 1));
      DLC_REQUIRE(blobs_[0]->shape() == weight_shape,
                  Where() << "weight blob " << blobs_[0]->shape_string()
                          << " does not match " << ShapeString(weight_shape));
      DLC_REQUIRE(!bias_term_ || blobs_[1]->shape() == bias_shape,
                  Where() << "bias blob " << blobs_[1]->shape_string()
                          << " does not match " << ShapeString(bias_shape));
    } else {
      blobs_.push_back(std::make_shared<Blob>(*ctx_, weight_shape));
      FillBlob(p.weight_filler(), blobs_[0].get());
      if (bias_term_) {
        blobs_.push_back(std::make_shared<Blob>(*ctx_, bias_shape));
        FillBlob(p.bias_filler(), blobs_[1].get());
      }
    }
    for (size_t i = 0; i < blobs_.size(); ++i) set_param_propagate_down(i, true);

    // The layout kernels' shape follows the device, as the GEMM's does;
    // DLCAFFE_CONV_KERNELS=planes|elements forces one (the tests run both).
    planes_ = PrefersCpuShapedKernels(ctx_->info());
    if (const char* forced = std::getenv("DLCAFFE_CONV_KERNELS")) {
      const std::string value = forced;
      DLC_REQUIRE(value == "planes" || value == "elements",
                  "DLCAFFE_CONV_KERNELS must be 'planes' or 'elements', not '" << value
                                                                              << "'");
      planes_ = value == "planes";
    }
    options_ = planes_ ? "-DPLANES=1" : "-DPLANES=0";
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    CheckTwoDimensional(*bottom[0]);
    num_ = bottom[0]->shape(0);
    height_ = bottom[0]->shape(2);
    width_ = bottom[0]->shape(3);
    DLC_REQUIRE(bottom[0]->shape(1) == channels_,
                Where() << "bottom " << bottom[0]->shape_string() << " has "
                        << bottom[0]->shape(1) << " channels; the weights expect "
                        << channels_);
    for (size_t i = 1; i < bottom.size(); ++i)
      DLC_REQUIRE(bottom[i]->shape() == bottom[0]->shape(),
                  Where() << "all bottoms must have one shape: bottom 0 is "
                          << bottom[0]->shape_string() << ", bottom " << i << " is "
                          << bottom[i]->shape_string());
    const int extent_h = dilation_h_ * (kernel_h_ - 1) + 1;
    const int extent_w = dilation_w_ * (kernel_w_ - 1) + 1;
    DLC_REQUIRE(height_ + 2 * pad_h_ >= extent_h && width_ + 2 * pad_w_ >= extent_w,
                Where() << "input " << bottom[0]->shape_string() << " padded by "
                        << pad_h_ << " x " << pad_w_ << " is smaller than the "
                        << kernel_h_ << " x " << kernel_w_ << " kernel (dilated extent "
                        << extent_h << " x " << extent_w << ")");
    out_h_ = (height_ + 2 * pad_h_ - extent_h) / stride_h_ + 1;
    out_w_ = (width_ + 2 * pad_w_ - extent_w) / stride_w_ + 1;
    for (size_t i = 0; i < top.size(); ++i)
      top[i]->Reshape({num_, num_output_, out_h_, out_w_});

    // Images per chunk: the whole batch when its column buffer fits.
    const long long column_floats_per_image =
        1LL * channels_ * kernel_h_ * kernel_w_ * out_h_ * out_w_;
    const long long out_floats_per_image = 1LL * num_output_ * out_h_ * out_w_;
    const long long per_image = std::max(column_floats_per_image, out_floats_per_image);
    DLC_REQUIRE(per_image <= std::numeric_limits<int>::max(),
                Where() << "one image of " << bottom[0]->shape_string()
                        << " needs a column buffer of " << per_image
                        << " floats, past 32-bit indexing");
    chunk_ = static_cast<int>(
        std::max(1LL, std::min<long long>(num_, ColumnFloatLimit() / per_image)));
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const Blob& weights = *blobs_[0];
    for (size_t i = 0; i < bottom.size(); ++i) {
      for (int n0 = 0; n0 < num_; n0 += chunk_) {
        const int images = std::min(chunk_, num_ - n0);
        const int columns = images * out_h_ * out_w_;
        BufferPtr col = ctx_->Allocate(sizeof(float) * size_t(column_rows()) * columns);
        BufferPtr out = ctx_->Allocate(sizeof(float) * size_t(num_output_) * columns);
        Im2col(bottom[i]->data(), n0, images, col->mem());
        for (int g = 0; g < group_; ++g)
          Gemm(*ctx_, Transpose::kNo, Transpose::kNo, outputs_per_group(), columns,
               rows_per_group(), 1.f, weights.data(), weight_offset(g), col->mem(),
               size_t(g) * rows_per_group() * columns, 0.f, out->mem(),
               size_t(g) * outputs_per_group() * columns);
        cl_mem bias = bias_term_ ? blobs_[1]->data() : out->mem();
        ctx_->Launch(ctx_->Kernel("convolution.cl", options_, "conv_columns_to_nchw"),
                     LayoutRange(images, num_output_, columns), LayoutGroup(), images,
                     num_output_, out_h_ * out_w_, out->mem(), bias_term_ ? 1 : 0, bias,
                     top[i]->data(), nchw_offset(n0, num_output_, out_h_ * out_w_));
      }
    }
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    const bool weight_grad = param_propagate_down(0);
    const bool bias_grad = bias_term_ && param_propagate_down(1);
    const Blob& weights = *blobs_[0];
    for (size_t i = 0; i < top.size(); ++i) {
      if (bias_grad) {
        // A work-item per channel (planes) or a work-group per channel.
        const size_t group = planes_ ? 1 : kGroup;
        ctx_->Launch(ctx_->Kernel("convolution.cl", options_, "conv_bias_backward"),
                     NDRange(num_output_ * group), NDRange(group), num_, num_output_,
                     out_h_ * out_w_, top[i]->diff(), blobs_[1]->diff(),
                     LocalMemory{group * sizeof(float)});
      }
      if (!weight_grad && !propagate_down[i]) continue;
      for (int n0 = 0; n0 < num_; n0 += chunk_) {
        const int images = std::min(chunk_, num_ - n0);
        const int columns = images * out_h_ * out_w_;
        BufferPtr col = ctx_->Allocate(sizeof(float) * size_t(column_rows()) * columns);
        BufferPtr dy = ctx_->Allocate(sizeof(float) * size_t(num_output_) * columns);
        ctx_->Launch(ctx_->Kernel("convolution.cl", options_, "conv_nchw_to_columns"),
                     LayoutRange(images, num_output_, columns), LayoutGroup(), images,
                     num_output_, out_h_ * out_w_, top[i]->diff(),
                     nchw_offset(n0, num_output_, out_h_ * out_w_), dy->mem());
        if (weight_grad) {
          Im2col(bottom[i]->data(), n0, images, col->mem());
          for (int g = 0; g < group_; ++g)
            Gemm(*ctx_, Transpose::kNo, Transpose::kYes, outputs_per_group(),
                 rows_per_group(), columns, 1.f, dy->mem(),
                 size_t(g) * outputs_per_group() * columns, col->mem(),
                 size_t(g) * rows_per_group() * columns, 1.f, weights.diff(),
                 weight_offset(g));
        }
        if (propagate_down[i]) {
          for (int g = 0; g < group_; ++g)
            Gemm(*ctx_, Transpose::kYes, Transpose::kNo, rows_per_group(), columns,
                 outputs_per_group(), 1.f, weights.data(), weight_offset(g), dy->mem(),
                 size_t(g) * outputs_per_group() * columns, 0.f, col->mem(),
                 size_t(g) * rows_per_group() * columns);
          ctx_->Launch(ctx_->Kernel("im2col.cl", options_, "col2im"),
                       LayoutRange(images, channels_, images * height_ * width_),
                       LayoutGroup(), images,
                       channels_, height_, width_, kernel_h_, kernel_w_, pad_h_, pad_w_,
                       stride_h_, stride_w_, dilation_h_, dilation_w_, out_h_, out_w_,
                       col->mem(), bottom[i]->diff(),
                       nchw_offset(n0, channels_, height_ * width_));
        }
      }
    }
  }

 private:
  // Column and output buffers of one chunk stay under this many floats
  // (256 MiB by default), so large batches of large images do not exhaust the
  // device. DLCAFFE_CONV_COLUMN_FLOATS overrides it (tests use it to run the
  // several-chunk path on small shapes).
  static long long ColumnFloatLimit() {
    const char* setting = std::getenv("DLCAFFE_CONV_COLUMN_FLOATS");
    const long long value = setting ? std::atoll(setting) : 0;
    return value > 0 ? value : 1LL << 26;
  }
  static constexpr size_t kGroup = 64;  // work-group width of the layout kernels

  static std::string ShapeString(const std::vector<int>& shape) {
    std::string s;
    for (int d : shape) s += std::to_string(d) + " ";
    return s + "(" + std::to_string(shape[0] * shape[1] * shape[2] * shape[3]) + ")";
  }
  // The layout kernels' range over (images, channels) planes: one work-item
  // per plane, or one per element with `elements` of them per channel.
  NDRange LayoutRange(int images, int channels, int elements) const {
    return planes_ ? NDRange(images, channels) : NDRange(RoundUp(elements, kGroup), channels);
  }
  NDRange LayoutGroup() const { return planes_ ? NDRange(1, 1) : NDRange(kGroup, 1); }

  void CheckTwoDimensional(const Blob& bottom) const {
    const caffe::ConvolutionParameter& p = param_.convolution_param();
    const int axes = bottom.num_axes();
    DLC_REQUIRE(axes >= 2, Where() << "bottom " << bottom.shape_string()
                                   << " needs a channel axis");
    const int axis = p.axis() < 0 ? p.axis() + axes : p.axis();
    DLC_REQUIRE(axis == 1, Where() << "axis " << p.axis() << " on bottom "
                                   << bottom.shape_string()
                                   << ": a channel axis other than 1 (N x C x H x W) is "
                                   << "not supported yet");
    DLC_REQUIRE(axes == 4, Where() << "bottom " << bottom.shape_string() << " has "
                                   << axes - 2 << " spatial axes: N-d convolution is not "
                                   << "supported yet, only 2-D (N x C x H x W)");
  }

  // One value for both axes, one per axis, or the _h/_w pair (Caffe's rules).
  void ReadPair(const char* name, const google::protobuf::RepeatedField<uint32_t>& values,
                bool has_h, bool has_w, uint32_t h, uint32_t w, int fallback, int* out_h,
                int* out_w) {
    if (has_h || has_w) {
      DLC_REQUIRE(values.size() == 0, Where() << "either " << name << " or " << name
                                              << "_h/" << name << "_w, not both");
      *out_h = static_cast<int>(h);
      *out_w = static_cast<int>(w);
      return;
    }
    DLC_REQUIRE(values.size() <= 2,
                Where() << name << " given " << values.size() << " times: N-d "
                        << "convolution is not supported yet, only 2-D");
    *out_h = values.size() == 0 ? fallback : static_cast<int>(values.Get(0));
    *out_w = values.size() == 0 ? fallback : static_cast<int>(values.Get(values.size() - 1));
  }

  void ReadGeometry(const caffe::ConvolutionParameter& p) {
    DLC_REQUIRE(p.has_kernel_h() || p.has_kernel_w() || p.kernel_size_size() > 0,
                Where() << "needs kernel_size or kernel_h and kernel_w");
    ReadPair("kernel", p.kernel_size(), p.has_kernel_h(), p.has_kernel_w(), p.kernel_h(),
             p.kernel_w(), 0, &kernel_h_, &kernel_w_);
    DLC_REQUIRE(kernel_h_ > 0 && kernel_w_ > 0,
                Where() << "kernel " << kernel_h_ << " x " << kernel_w_
                        << " must be nonzero in both dimensions");
    ReadPair("stride", p.stride(), p.has_stride_h(), p.has_stride_w(), p.stride_h(),
             p.stride_w(), 1, &stride_h_, &stride_w_);
    DLC_REQUIRE(stride_h_ > 0 && stride_w_ > 0,
                Where() << "stride " << stride_h_ << " x " << stride_w_
                        << " must be nonzero in both dimensions");
    ReadPair("pad", p.pad(), p.has_pad_h(), p.has_pad_w(), p.pad_h(), p.pad_w(), 0, &pad_h_,
             &pad_w_);
    ReadPair("dilation", p.dilation(), false, false, 0, 0, 1, &dilation_h_, &dilation_w_);
    DLC_REQUIRE(dilation_h_ > 0 && dilation_w_ > 0,
                Where() << "dilation " << dilation_h_ << " x " << dilation_w_
                        << " must be nonzero in both dimensions");
  }

  int column_rows() const { return channels_ * kernel_h_ * kernel_w_; }
  int rows_per_group() const { return column_rows() / group_; }
  int outputs_per_group() const { return num_output_ / group_; }
  size_t weight_offset(int g) const {
    return size_t(g) * outputs_per_group() * rows_per_group();
  }
  int nchw_offset(int n0, int channels, int area) const { return n0 * channels * area; }

  void Im2col(cl_mem x, int n0, int images, cl_mem col) {
    // Element per work-item: (column, column row); else a plane per item.
    const NDRange range =
        planes_ ? LayoutRange(images, channels_, 0)
                : NDRange(RoundUp(images * out_h_ * out_w_, kGroup), column_rows());
    ctx_->Launch(ctx_->Kernel("im2col.cl", options_, "im2col"), range, LayoutGroup(),
                 images, channels_, height_, width_, kernel_h_, kernel_w_, pad_h_, pad_w_,
                 stride_h_, stride_w_, dilation_h_, dilation_w_, out_h_, out_w_, x,
                 nchw_offset(n0, channels_, height_ * width_), col);
  }

  int num_output_ = 0, group_ = 1, channels_ = 0;
  bool bias_term_ = true;
  int kernel_h_ = 0, kernel_w_ = 0, stride_h_ = 1, stride_w_ = 1;
  int pad_h_ = 0, pad_w_ = 0, dilation_h_ = 1, dilation_w_ = 1;
  int num_ = 0, height_ = 0, width_ = 0, out_h_ = 0, out_w_ = 0;
  int chunk_ = 1;  // images per im2col + GEMM round
  bool planes_ = false;  // layout kernels: a plane per work-item (CPU shape)
  std::string options_;  // their -D options
};

REGISTER_LAYER_CLASS(Convolution);

}  // namespace dlcaffe
