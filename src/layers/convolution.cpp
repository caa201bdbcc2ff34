// Convolution (Caffe "Convolution") through the GEMM: 2-D, or any number of
// spatial axes (base_convolution.hpp). The 2-D case:
//
// Forward, for a chunk of images (the whole batch unless its column buffer
// would pass the limit; see base_convolution.hpp):
//   im2col over the chunk -> col [C*kh*kw][n*Ho*Wo]   (GPU: none, the GEMM
//                                          reads the windows from the image)
//   per group g: out_g = W_g [Cout/g x C/g*kh*kw] * col_g + bias  (one GEMM)
//   out [Cout][n*Ho*Wo] is the top itself (GPU) or copied into it (CPU)
// Backward:
//   bias_diff += sum over n, p of top_diff                       (whole batch)
//   dy [Cout][n*Ho*Wo] = top_diff (GPU: in place; CPU: a copy)
//   per group: W_diff_g += dy_g * col_g^T       (GPU: implicit col, one GEMM
//                                                 over the batch; CPU: im2col)
//              col_g = W_g^T * dy_g, then col2im -> bottom_diff  (gather, =)
//              (GPU, stride 1: bottom_diff = flipped W_g * windows of dy_g,
//               an implicit GEMM; DataGradientImplicit())
// Weights are num_output x C/group x kh x kw and the bias num_output, Caffe's
// layout, so .caffemodel files load as they are. Several bottom/top pairs
// share the weights, as in Caffe.
//
// 3x3 stride-1 convolutions may run forward (not in training) and data
// gradient as Winograd F(4x4, 3x3) instead (core/winograd.hpp; UseWinograd()
// says where); the weight and bias gradients always take the path above.
// One-group layers whose outputs are whole 16-byte chunks run their
// products channels-last instead where the tensor cores stream them, their
// channels padded with zeros to whole chunks
// (core/channels_last_convolution.hpp; ChannelsLast() says where).
//
// Bottoms and tops may be stored in 16 bits (mixed precision): every path
// above, Winograd's included, reads and writes them in their type, with
// float weights and sums.
#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string>

#include "core/gemm_config.hpp"
#include "core/storage_option.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "core/base_convolution.hpp"
#include "core/channels_last_convolution.hpp"
#include "core/derived_copy.hpp"
#include "core/matrix_engine.hpp"
#include "core/winograd.hpp"

namespace dlcaffe {

class ConvolutionLayer : public BaseConvolutionLayer {
 public:
  using BaseConvolutionLayer::BaseConvolutionLayer;
  const char* type() const override { return "Convolution"; }
  bool SupportsStorage(StorageType) const override { return true; }
  // The GEMM's epilogue clamps and applies a folded BatchNorm/Scale (not the
  // depthwise kernels).
  unsigned EpilogueSupport() const override {
    return Depthwise() ? 0 : LayerEpilogue::kRelu | LayerEpilogue::kChannelAffine;
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    BaseConvolutionLayer::Reshape(bottom, top);
    // Channels-last products on the tensor cores outrun Winograd's float
    // ones (docs/benchmarks.md); a forced Winograd still runs.
    const bool winograd = UseWinograd();
    const auto channels_last_instead = [&](MatrixMath math) {
      return !WinogradForced() && ChannelsLast(math);
    };
    winograd_data_gradient_ = winograd && !(channels_last_instead(BackwardMath()) &&
                                            DataGradientImplicit());
    // Forward values in training: see UseWinograd.
    winograd_ = winograd && !channels_last_instead(ForwardMath()) &&
                (WinogradForced() || param_.phase() != caffe::TRAIN);
  }

  // The forward's algorithm and the data gradient's, at the current shapes.
  std::string DescribeAlgorithm() const override {
    if (Depthwise()) return DepthwisePlanes() ? "depthwise, plane kernels" : "depthwise";
    const auto products = [&](MatrixMath math) {
      return ChannelsLast(math) ? std::string("channels-last implicit GEMM")
                                : BaseConvolutionLayer::DescribeAlgorithm();
    };
    const std::string forward = winograd_ ? "Winograd F(4x4, 3x3)" : products(ForwardMath());
    const std::string data_gradient =
        winograd_data_gradient_ ? "Winograd F(4x4, 3x3)"
        : DataGradientImplicit() ? (ChannelsLast(BackwardMath()) ? "channels-last implicit GEMM"
                                                                 : "implicit GEMM")
                                 : BaseConvolutionLayer::DescribeAlgorithm();
    return "forward: " + forward + "; data gradient: " + data_gradient;
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    if (Depthwise()) {
      cl_kernel kernel =
          ctx_->Kernel("depthwise_convolution.cl", DepthwiseOptions(), "depthwise_forward");
      cl_mem bias = bias_term_ ? blobs_[1]->data() : blobs_[0]->data();
      for (size_t i = 0; i < bottom.size(); ++i) {
        const int count = top[i]->count();
        if (DepthwisePlanes()) {  // a work-item per (image, channel) plane
          const int planes = count / (output_shape_[0] * output_shape_[1]);
          ctx_->Launch(kernel, NDRange(planes), NDRange(1), planes, bottom[i]->data(),
                       blobs_[0]->data(), bias, (int)bias_term_, top[i]->data());
        } else {
          ctx_->Launch1D(kernel, count, count, bottom[i]->data(), blobs_[0]->data(), bias,
                         (int)bias_term_, top[i]->data());
        }
      }
      return;
    }
    if (winograd_) {
      // Transformed once per pass: the weights change every iteration.
      BufferPtr filters =
          WinogradFilters(*ctx_, num_output_, channels_, false, blobs_[0]->data());
      // A folded BatchNorm/Scale's shift includes our bias.
      cl_mem bias = epilogue_.channel_shift ? epilogue_.channel_shift->data()
                                   : bias_term_ ? blobs_[1]->data() : nullptr;
      cl_mem scale = epilogue_.channel_scale ? epilogue_.channel_scale->data() : nullptr;
      for (size_t i = 0; i < bottom.size(); ++i)
        WinogradConvolution(*ctx_, choices_, WinogradShapeOf(false), filters->mem(),
                            bottom[i]->data(), scale, bias, epilogue_.relu, top[i]->data(),
                            ColumnFloatLimit(), bottom[i]->storage_type(),
                            top[i]->storage_type());
      return;
    }
    const MatrixMath math = ForwardMath();
    if (ChannelsLast(math)) {
      const ChannelsLastConvolution conv = ChannelsLastGeometry();
      const BufferPtr filters = ChannelsLastFilters(conv, math, false);
      ChannelsLastConvolution::Epilogue epilogue;
      if (epilogue_.channel_shift) {  // a folded BatchNorm/Scale (its shift has our bias)
        epilogue.row_scale = epilogue_.channel_scale->data();
        epilogue.bias = epilogue_.channel_shift->data();
      } else if (bias_term_) {
        epilogue.bias = blobs_[1]->data();
      }
      epilogue.relu = epilogue_.relu;
      for (size_t i = 0; i < bottom.size(); ++i)
        conv.Forward(*ctx_, math, bottom[i]->data(), filters->mem(), epilogue, top[i]->data());
      return;
    }
    const int round = RoundImages(ImageColumnsStaged(math));
    for (size_t i = 0; i < bottom.size(); ++i) {
      for (int n0 = 0; n0 < num_; n0 += round) {
        const int images = std::min(round, num_ - n0);
        BufferPtr col_scratch, out_scratch;
        const MatrixView col =
            ImageColumns(bottom[i]->data(), n0, images, true, col_scratch, math);
        const MatrixView out = ColumnSide(top[i]->data(), n0, images, false, out_scratch);
        WeightTimesCol(col, images, out, bias_term_, epilogue_.relu, math);
        StoreColumnSide(out, top[i]->data(), n0, images);
      }
    }
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    const MatrixMath math = BackwardMath();
    const bool weight_grad = param_propagate_down(0);
    const bool bias_grad = bias_term_ && param_propagate_down(1);
    BufferPtr rotated_filters;  // Winograd's, made at the first data gradient
    BufferPtr flipped_filters;  // the implicit data gradient's, likewise
    const bool channels_last = ChannelsLast(math);
    for (size_t i = 0; i < top.size(); ++i) {
      if (bias_grad) AccumulateBiasDiff(top[i]->diff());
      if (!weight_grad && !propagate_down[i]) continue;
      if (Depthwise()) {
        DepthwiseBackward(top[i], bottom[i], weight_grad, propagate_down[i]);
        continue;
      }
      // The data gradient by Winograd: a 3x3 stride-1 convolution of the top
      // diff (num_output -> channels) with the filters turned 180 degrees.
      // Other stride-1 layers compute that convolution as an implicit GEMM,
      // channels-last where the weight gradient is.
      const bool by_winograd = propagate_down[i] && winograd_data_gradient_;
      const bool data_grad_channels_last =
          propagate_down[i] && !by_winograd && channels_last && DataGradientImplicit();
      if (channels_last && (weight_grad || data_grad_channels_last)) {
        const ChannelsLastConvolution conv = ChannelsLastGeometry();
        const BufferPtr dy = ChannelsLastConvolution::ToChannelsLast(
            *ctx_, top[i]->diff(), num_, num_output_, output_area(), storage_);
        if (weight_grad) {
          const BufferPtr x = conv.BottomToChannelsLast(*ctx_, bottom[i]->data());
          conv.AccumulateWeightGradient(*ctx_, math, x->mem(), dy->mem(), blobs_[0]->diff());
        }
        if (data_grad_channels_last)
          conv.DataGradient(*ctx_, math, dy->mem(), ChannelsLastFilters(conv, math, true)->mem(),
                            bottom[i]->diff());
      }
      const bool data_grad_implicit = propagate_down[i] && !by_winograd &&
                                      !data_grad_channels_last && DataGradientImplicit();
      const bool data_grad_by_gemm = propagate_down[i] && !by_winograd &&
                                     !data_grad_channels_last && !data_grad_implicit;
      // The weight gradient through the columns, where not channels-last.
      const bool weight_grad_columns = weight_grad && !channels_last;
      if (by_winograd) {
        if (!rotated_filters)
          rotated_filters = WinogradFilters(*ctx_, channels_, num_output_, true,
                                            blobs_[0]->data());
        WinogradConvolution(*ctx_, choices_, WinogradShapeOf(true), rotated_filters->mem(),
                            top[i]->diff(), nullptr, nullptr, false, bottom[i]->diff(),
                            ColumnFloatLimit(), top[i]->storage_type(),
                            bottom[i]->storage_type());
      }
      if (data_grad_implicit) {
        if (!flipped_filters) flipped_filters = FlippedFilters();
        FlippedFiltersTimesWindows(flipped_filters->mem(), top[i]->diff(), bottom[i]->diff(),
                                   math);
      }
      // With nothing staged, the weight gradient is one product over the
      // whole batch.
      const bool weight_grad_whole =
          weight_grad_columns && RoundImages(ImageColumnsStaged(math)) == num_;
      if (weight_grad_whole) {
        BufferPtr col_scratch, dy_scratch;
        AccumulateWeightDiff(ColumnSide(top[i]->diff(), 0, num_, true, dy_scratch),
                             ImageColumns(bottom[i]->data(), 0, num_, true, col_scratch, math),
                             num_, math);
      }
      if (!(weight_grad_columns && !weight_grad_whole) && !data_grad_by_gemm) continue;
      for (int n0 = 0; n0 < num_; n0 += chunk_) {
        const int images = std::min(chunk_, num_ - n0);
        BufferPtr col_scratch, dy_scratch;
        const MatrixView dy = ColumnSide(top[i]->diff(), n0, images, true, dy_scratch);
        if (weight_grad_columns && !weight_grad_whole) {
          const MatrixView col =
              ImageColumns(bottom[i]->data(), n0, images, true, col_scratch, math);
          AccumulateWeightDiff(dy, col, images, math);
        }
        if (data_grad_by_gemm) {
          const MatrixView col =
              ImageColumns(bottom[i]->diff(), n0, images, false, col_scratch, math);
          WeightTransposedTimesColumns(dy, images, col, math);
          StoreImageColumns(col, bottom[i]->diff(), n0, images);
        }
      }
    }
  }

 protected:
  bool reverse_dimensions() const override { return false; }

 private:
  bool winograd_ = false;                 // forward by Winograd (current shapes)
  bool winograd_data_gradient_ = false;   // the data gradient by Winograd

  // Whether products in `math` run channels-last: one-group 2-D layers
  // (GPU shape) whose outputs are whole 16-byte chunks (the channels are
  // padded to them: ChannelsLastConvolution::padded_channels), not 1x1
  // unpadded ones (the GEMM reads those blobs in place). By default where
  // the cp.async pipeline streams the blobs' type: it streams the
  // channels-last windows, which im2col would otherwise write out kernel_h x
  // kernel_w times (LayerChoices::channels_last forces it either way).
  bool ChannelsLast(MatrixMath math) const {
    if (!implicit_ || channel_axis_ != 1 || group_ != 1 || ImageSideInPlace()) return false;
    if (num_output_ % MmaPipelineChunk(storage_)) return false;
    const RunOptions::Choice choice = choices_.channels_last;
    if (choice != RunOptions::Choice::kAuto) return choice == RunOptions::Choice::kOn;
    return MmaPipelineStreams(*ctx_, choices_, math, storage_);
  }

  // The channels-last products' filters (flipped: the data gradient's),
  // kept until the weights change.
  BufferPtr ChannelsLastFilters(const ChannelsLastConvolution& conv, MatrixMath math,
                                bool flipped) {
    DerivedCopy& copy = flipped ? channels_last_flipped_filters_ : channels_last_filters_;
    return copy.Get(*blobs_[0], static_cast<int>(math) * 16 + static_cast<int>(storage_),
                    [&] { return conv.Filters(*ctx_, math, blobs_[0]->data(), flipped); });
  }
  DerivedCopy channels_last_filters_, channels_last_flipped_filters_;

  ChannelsLastConvolution ChannelsLastGeometry() const {
    ChannelsLastConvolution c;
    c.choices = choices_;
    c.images = num_;
    c.channels = channels_;
    c.outputs = num_output_;
    c.height = input_shape_[0];
    c.width = input_shape_[1];
    c.out_h = output_shape_[0];
    c.out_w = output_shape_[1];
    c.kernel_h = kernel_shape_[0];
    c.kernel_w = kernel_shape_[1];
    c.pad_h = pad_[0];
    c.pad_w = pad_[1];
    c.stride_h = stride_[0];
    c.stride_w = stride_[1];
    c.dilation_h = dilation_[0];
    c.dilation_w = dilation_[1];
    c.storage = storage_;
    return c;
  }

  // Winograd F(4x4, 3x3) can compute this convolution: 2-D (channel axis 1),
  // 3x3, stride 1, no dilation, one group, pads of 0 to 2 (so that the data
  // gradient's pad 2 - pad is one too).
  bool WinogradApplies() const {
    if (num_spatial_axes_ != 2 || channel_axis_ != 1 || group_ != 1 ||
        param_.convolution_param().force_nd_im2col())
      return false;
    for (int d = 0; d < 2; ++d)
      if (kernel_shape_[d] != 3 || stride_[d] != 1 || dilation_[d] != 1 || pad_[d] < 0 ||
          pad_[d] > 2)
        return false;
    return true;
  }

  // Where Winograd runs. LayerChoices::winograd on|off forces it (on: wherever
  // it applies, forward and data gradient; the tests use it). Otherwise where
  // the channels make its 36 GEMMs worth running: on GPU-shaped devices from
  // 16 channels; on CPU-shaped ones only from 128 channels on outputs of
  // 28 x 28 and more, where it beat im2col + GEMM; it lost on 64-channel
  // layers and on 14 x 14 and 7 x 7 ones (GEMMs too thin for the CPU
  // kernels, transforms that cost as much as the products; docs/benchmarks.md,
  // M5).
  //
  // That holds for the data gradient; the forward pass of a TRAIN-phase net
  // takes the direct path: F(4x4, 3x3)'s transforms (coefficients up to 8
  // and 1/24) leave forward values with 10-100x the rounding error of a
  // direct sum, and in training more of the values within rounding of zero
  // flip at ReLUs, which moves the BatchNorm gradients that sum over them.
  // On a GPU two torchvision nets' gradients then missed their bounds; they
  // pass with a direct forward, whichever way the data gradient goes.
  // Inference keeps it (docs/benchmarks.md, M6).
  //
  // Whatever the layer's math and storage: Winograd's products stay float
  // (core/winograd.cpp), which a math type allows (it says what inputs may
  // be rounded to, never that they must be), and 2.25 float multiplications
  // per output and channel beat 9 on our tensor cores: on an H100, vgg16's
  // inference forward at batch 16 took 8.7 ms in float32 with Winograd and
  // 14.6 (TF32) and 20.6 ms (FLOAT16) through the tensor-core GEMMs. Where
  // the layer runs channels-last (Reshape), that wins instead: on an H200,
  // vgg16's FLOAT16 forward took 6.1 ms channels-last, 8.5 with Winograd.
  bool UseWinograd() const {
    if (!WinogradApplies()) return false;
    const RunOptions::Choice forced = choices_.winograd;
    if (forced != RunOptions::Choice::kAuto) return forced == RunOptions::Choice::kOn;
    if (choices_.cpu_shaped_kernels)
      return channels_ >= 128 && num_output_ >= 128 &&
             output_shape_[0] * output_shape_[1] >= 28 * 28;
    return channels_ >= 16 && num_output_ >= 16;
  }
  bool WinogradForced() const { return choices_.winograd == RunOptions::Choice::kOn; }

  // Forward: the bottom (channels_) into the top (num_output_) with our pad.
  // The data gradient: the top diff back into the bottom's shape, pad 2 - pad.
  WinogradShape WinogradShapeOf(bool data_gradient) const {
    WinogradShape s;
    s.images = num_;
    s.in_channels = data_gradient ? num_output_ : channels_;
    s.out_channels = data_gradient ? channels_ : num_output_;
    const std::vector<int>& in = data_gradient ? output_shape_ : input_shape_;
    s.height = in[0];
    s.width = in[1];
    s.pad_h = data_gradient ? 2 - pad_[0] : pad_[0];
    s.pad_w = data_gradient ? 2 - pad_[1] : pad_[1];
    return s;
  }

  // The data gradient as a convolution of the top diff (implicit GEMM, no
  // col buffer and no col2im): with stride 1, bottom_diff = flipped filters
  // over windows of the top diff padded by (k - 1) * dilation - pad. Strides
  // above 1 would multiply zeros between the top diff's values (stride^2 the
  // products), so those keep col2im.
  // A 1x1 unpadded kernel's data gradient needs no windows: W^T times the
  // top diff, written into the bottom diff in place (data_grad_by_gemm).
  bool DataGradientImplicit() const {
    if (!implicit_ || channel_axis_ != 1) return false;  // implicit_: 2-D
    if (ImageSideInPlace()) return false;
    for (int d = 0; d < 2; ++d)
      if (stride_[d] != 1 || pad_[d] > (kernel_shape_[d] - 1) * dilation_[d]) return false;
    return true;
  }

  BufferPtr FlippedFilters() const {
    const int count = blobs_[0]->count();
    BufferPtr flipped = Scratch(count);
    ctx_->Launch1D(ctx_->Kernel("convolution.cl", options_, "conv_flip_weights"), count, count,
                   group_, num_output_ / group_, channels_ / group_, kernel_shape_[0],
                   kernel_shape_[1], blobs_[0]->data(), flipped->mem());
    return flipped;
  }

  // bottom_diff (=) per group: flipped_g [C/g x Cout/g*kh*kw] * windows of
  // the top diff's group, over the whole batch, written into the NCHW blob.
  void FlippedFiltersTimesWindows(cl_mem flipped, cl_mem top_diff, cl_mem bottom_diff,
                                  MatrixMath math) {
    const int area = input_shape_[0] * input_shape_[1];
    const int out_area = output_shape_[0] * output_shape_[1];
    const int cin_g = channels_ / group_, cout_g = num_output_ / group_;
    ConvolutionWindow w;
    w.height = output_shape_[0];
    w.width = output_shape_[1];
    w.kernel_h = kernel_shape_[0];
    w.kernel_w = kernel_shape_[1];
    w.pad_h = (kernel_shape_[0] - 1) * dilation_[0] - pad_[0];
    w.pad_w = (kernel_shape_[1] - 1) * dilation_[1] - pad_[1];
    w.dilation_h = dilation_[0];
    w.dilation_w = dilation_[1];
    w.out_h = input_shape_[0];
    w.out_w = input_shape_[1];
    w.image_floats = num_output_ * out_area;
    for (int g = 0; g < group_; ++g) {
      GemmArgs a;
      a.math = math;
      a.choices = choices_;
      a.M = cin_g;
      a.N = num_ * area;
      a.K = cout_g * kernel_area();
      a.A = flipped;
      a.a_offset = size_t(g) * cin_g * a.K;
      a.B = top_diff;
      a.b_type = storage_;
      a.b_offset = size_t(g) * cout_g * out_area;
      a.b_window = w;
      a.C = bottom_diff;
      a.c_type = storage_;
      a.c_offset = size_t(g) * cin_g * area;
      a.ldc = a.c_group = area;
      a.c_image = channels_ * area;
      Gemm(*ctx_, a);
    }
  }

  // Depthwise 2-D convolution (one filter per channel, as MobileNets use)
  // runs as direct kernels: im2col + a GEMM per channel would launch
  // hundreds of tiny GEMMs.
  bool Depthwise() const {
    return num_spatial_axes_ == 2 && channel_axis_ == 1 && group_ == channels_ &&
           num_output_ == channels_ && group_ > 1;
  }

  // The planes shape (CPU) reads float images only; 16-bit layers take the
  // element-per-work-item kernels on every device.
  bool DepthwisePlanes() const { return planes_ && storage_ == StorageType::kFloat32; }

  std::string DepthwiseOptions() const {
    std::ostringstream s;
    s << "-DPLANES=" << (DepthwisePlanes() ? 1 : 0) << StorageOption("DATA_TYPE", storage_)
      << " -DC=" << channels_ << " -DH=" << input_shape_[0]
      << " -DW=" << input_shape_[1] << " -DHO=" << output_shape_[0] << " -DWO=" << output_shape_[1]
      << " -DKH=" << kernel_shape_[0] << " -DKW=" << kernel_shape_[1] << " -DSH=" << stride_[0]
      << " -DSW=" << stride_[1] << " -DPH=" << pad_[0] << " -DPW=" << pad_[1]
      << " -DDH=" << dilation_[0] << " -DDW=" << dilation_[1];
    return s.str();
  }

  void DepthwiseBackward(Blob* top, Blob* bottom, bool weight_grad, bool data_grad) {
    const std::string options = DepthwiseOptions();
    if (weight_grad) {
      // CPU: a work-item per channel; GPU: a work-group per weight.
      const size_t group = DepthwisePlanes() ? 1 : 64;
      const size_t range = DepthwisePlanes() ? static_cast<size_t>(channels_)
                                   : static_cast<size_t>(blobs_[0]->count()) * group;
      ctx_->Launch(ctx_->Kernel("depthwise_convolution.cl", options,
                                "depthwise_backward_weight"),
                   NDRange(range), NDRange(group), num_, bottom->data(), top->diff(),
                   blobs_[0]->diff(), LocalMemory{group * sizeof(float)});
    }
    if (data_grad) {
      cl_kernel kernel =
          ctx_->Kernel("depthwise_convolution.cl", options, "depthwise_backward_data");
      const int count = bottom->count();
      if (DepthwisePlanes()) {  // a work-item per (image, channel) input plane
        const int planes = count / (input_shape_[0] * input_shape_[1]);
        ctx_->Launch(kernel, NDRange(planes), NDRange(1), planes, top->diff(),
                     blobs_[0]->data(), bottom->diff());
      } else {
        ctx_->Launch1D(kernel, count, count, top->diff(), blobs_[0]->data(), bottom->diff());
      }
    }
  }

 protected:

  std::vector<int> OutputShape(const Blob& bottom) const override {
    return ConvolutionOutputShape(bottom);
  }
};

REGISTER_LAYER_CLASS(Convolution);
REGISTER_LAYER_TRAITS(Convolution, LayerTraits().BackwardReadsNoTop());

}  // namespace dlcaffe
