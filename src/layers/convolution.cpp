// Convolution (Caffe "Convolution") through the GEMM: 2-D, or any number of
// spatial axes (base_convolution.hpp). The 2-D case:
//
// Forward, for a chunk of images (the whole batch unless its column buffer
// would pass the limit; see base_convolution.hpp):
//   im2col over the chunk -> col [C*kh*kw][n*Ho*Wo]   (none for 1x1 on a GPU)
//   per group g: out_g = W_g [Cout/g x C/g*kh*kw] * col_g + bias  (one GEMM)
//   out [Cout][n*Ho*Wo] is the top itself (GPU) or copied into it (CPU)
// Backward:
//   bias_diff += sum over n, p of top_diff                       (whole batch)
//   dy [Cout][n*Ho*Wo] = top_diff (GPU: in place; CPU: a copy)
//   per group: W_diff_g += dy_g * col_g^T                        (im2col again)
//              col_g = W_g^T * dy_g, then col2im -> bottom_diff  (gather, =)
// Weights are num_output x C/group x kh x kw and the bias num_output, Caffe's
// layout, so .caffemodel files load as they are. Several bottom/top pairs
// share the weights, as in Caffe.
#include <algorithm>
#include <sstream>

#include "dlcaffe/layer_registry.hpp"
#include "layers/base_convolution.hpp"

namespace dlcaffe {

class ConvolutionLayer : public BaseConvolutionLayer {
 public:
  using BaseConvolutionLayer::BaseConvolutionLayer;
  const char* type() const override { return "Convolution"; }
  // The GEMM's epilogue clamps (not the depthwise kernels).
  bool CanFuseRelu() const override { return !Depthwise(); }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    if (Depthwise()) {
      cl_kernel kernel =
          ctx_->Kernel("depthwise_convolution.cl", DepthwiseOptions(), "depthwise_forward");
      cl_mem bias = bias_term_ ? blobs_[1]->data() : blobs_[0]->data();
      for (size_t i = 0; i < bottom.size(); ++i) {
        const int count = top[i]->count();
        if (planes_) {  // a work-item per (image, channel) plane
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
    for (size_t i = 0; i < bottom.size(); ++i) {
      for (int n0 = 0; n0 < num_; n0 += chunk_) {
        const int images = std::min(chunk_, num_ - n0);
        BufferPtr col_scratch, out_scratch;
        const MatrixView col =
            ImageColumns(bottom[i]->data(), n0, images, true, col_scratch);
        const MatrixView out = ColumnSide(top[i]->data(), n0, images, false, out_scratch);
        WeightTimesCol(col, images, out, bias_term_, fuse_relu_);
        StoreColumnSide(out, top[i]->data(), n0, images);
      }
    }
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    const bool weight_grad = param_propagate_down(0);
    const bool bias_grad = bias_term_ && param_propagate_down(1);
    for (size_t i = 0; i < top.size(); ++i) {
      if (bias_grad) AccumulateBiasDiff(top[i]->diff());
      if (!weight_grad && !propagate_down[i]) continue;
      if (Depthwise()) {
        DepthwiseBackward(top[i], bottom[i], weight_grad, propagate_down[i]);
        continue;
      }
      for (int n0 = 0; n0 < num_; n0 += chunk_) {
        const int images = std::min(chunk_, num_ - n0);
        BufferPtr col_scratch, dy_scratch;
        const MatrixView dy = ColumnSide(top[i]->diff(), n0, images, true, dy_scratch);
        if (weight_grad) {
          const MatrixView col =
              ImageColumns(bottom[i]->data(), n0, images, true, col_scratch);
          AccumulateWeightDiff(dy, col, images);
        }
        if (propagate_down[i]) {
          const MatrixView col =
              ImageColumns(bottom[i]->diff(), n0, images, false, col_scratch);
          WeightTransposedTimesColumns(dy, images, col);
          StoreImageColumns(col, bottom[i]->diff(), n0, images);
        }
      }
    }
  }

 protected:
  bool reverse_dimensions() const override { return false; }

 private:
  // Depthwise 2-D convolution (one filter per channel, as MobileNets use)
  // runs as direct kernels: im2col + a GEMM per channel would launch
  // hundreds of tiny GEMMs.
  bool Depthwise() const {
    return num_spatial_axes_ == 2 && channel_axis_ == 1 && group_ == channels_ &&
           num_output_ == channels_ && group_ > 1;
  }

  std::string DepthwiseOptions() const {
    std::ostringstream s;
    s << options_ << " -DC=" << channels_ << " -DH=" << input_shape_[0]
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
      const size_t group = planes_ ? 1 : 64;
      const size_t range = planes_ ? static_cast<size_t>(channels_)
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
      if (planes_) {  // a work-item per (image, channel) input plane
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

}  // namespace dlcaffe
