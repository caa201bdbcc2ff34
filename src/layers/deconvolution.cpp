// Deconvolution (Caffe "Deconvolution"): the transposed convolution, 2-D or
// N-d (base_convolution.hpp).
// Its forward is Convolution's backward-data and its backward Convolution's
// forward, with the same ConvolutionParameter:
//   out = stride * (in - 1) + dilation * (kernel - 1) + 1 - 2 * pad  (per axis)
// Forward, per chunk of images:
//   x [C][n*H*W] = bottom (GPU: in place; CPU: a copy);
//   col = W^T * x (per group); top = col2im(col) + bias, the bias added to
//   each gathered sum before it is stored (the GEMM's epilogue adds it where
//   it writes the top itself: a 1x1 kernel in place)
// Backward:
//   bias_diff += sum over n, p of top_diff
//   col = im2col(top_diff)
//   W_diff += x * col^T (per group)      bottom_diff = W * col (per group)
// Weights are C x num_output/group x kh x kw and the bias num_output (Caffe's
// layout, so .caffemodel files load).
//
// The bottoms and tops may be stored in 16 bits (mixed precision): the
// layout kernels and the GEMMs widen on load and round once on store, the
// weights, the bias and the column buffers are float.
#include <algorithm>

#include "dlcaffe/layer_registry.hpp"
#include "core/base_convolution.hpp"

namespace dlcaffe {

class DeconvolutionLayer : public BaseConvolutionLayer {
 public:
  using BaseConvolutionLayer::BaseConvolutionLayer;
  const char* type() const override { return "Deconvolution"; }
  bool SupportsStorage(StorageType) const override { return true; }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    for (size_t i = 0; i < bottom.size(); ++i) {
      for (int n0 = 0; n0 < num_; n0 += chunk_) {
        const int images = std::min(chunk_, num_ - n0);
        BufferPtr x_scratch, col_scratch;
        const MatrixView x = ColumnSide(bottom[i]->data(), n0, images, true, x_scratch);
        const MatrixView col =
            ImageColumns(top[i]->data(), n0, images, false, col_scratch, ForwardMath());
        // One rounding of a 16-bit top: the bias joins the sums before the store.
        const bool gemm_writes_top = col.mem == top[i]->data();
        WeightTransposedTimesColumns(x, images, col, ForwardMath(),
                                     bias_term_ && gemm_writes_top);
        StoreImageColumns(col, top[i]->data(), n0, images,
                          bias_term_ ? blobs_[1]->data() : nullptr);
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
      for (int n0 = 0; n0 < num_; n0 += chunk_) {
        const int images = std::min(chunk_, num_ - n0);
        BufferPtr col_scratch, x_scratch;
        const MatrixView col =
            ImageColumns(top[i]->diff(), n0, images, true, col_scratch, BackwardMath());
        if (weight_grad) {
          const MatrixView x = ColumnSide(bottom[i]->data(), n0, images, true, x_scratch);
          AccumulateWeightDiff(x, col, images, BackwardMath());
        }
        if (propagate_down[i]) {
          const MatrixView x = ColumnSide(bottom[i]->diff(), n0, images, false, x_scratch);
          WeightTimesCol(col, images, x, false, false, BackwardMath());
          StoreColumnSide(x, bottom[i]->diff(), n0, images);
        }
      }
    }
  }

 protected:
  bool reverse_dimensions() const override { return true; }

  std::vector<int> OutputShape(const Blob& bottom) const override {
    std::vector<int> extent(num_spatial_axes_), output(num_spatial_axes_);
    bool empty = false;
    for (int a = 0; a < num_spatial_axes_; ++a) {
      extent[a] = dilation_[a] * (kernel_shape_[a] - 1) + 1;
      output[a] = stride_[a] * (input_shape_[a] - 1) + extent[a] - 2 * pad_[a];
      empty = empty || output[a] <= 0;
    }
    DLC_REQUIRE(!empty, Where() << "input " << bottom.shape_string() << " with a "
                                << Join(kernel_shape_) << " kernel (dilated extent "
                                << Join(extent) << "), stride " << Join(stride_)
                                << " and pad " << Join(pad_) << " gives an empty output "
                                << Join(output));
    return output;
  }
};

REGISTER_LAYER_CLASS(Deconvolution);
REGISTER_LAYER_TRAITS(Deconvolution, LayerTraits().BackwardReadsNoTop());

}  // namespace dlcaffe
