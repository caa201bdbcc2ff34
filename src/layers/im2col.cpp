// Im2col (Caffe "Im2col"): im2col as a layer. The top is N x (C * kernel
// area) x output spatial shape, each image's slab the column buffer a
// convolution would multiply; convolution_param gives kernel, stride, pad,
// dilation, axis and force_nd_im2col (num_output and group are not used).
// Backward is col2im. 2-D or any number of spatial axes, as Convolution.
#include <algorithm>

#include "dlcaffe/layer_registry.hpp"
#include "core/base_convolution.hpp"

namespace dlcaffe {

class Im2colLayer : public BaseConvolutionLayer {
 public:
  using BaseConvolutionLayer::BaseConvolutionLayer;
  const char* type() const override { return "Im2col"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  // The geometry only: no parameter blobs. The top's channels are the column
  // rows, so the base's column side is the top, with one group.
  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    SetUpGeometry(*bottom[0]);
    group_ = 1;
    bias_term_ = false;
    image_channels_ = channels_;
    num_output_ = column_channels_ = column_rows();
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    for (int n0 = 0; n0 < num_; n0 += chunk_) {
      const int images = std::min(chunk_, num_ - n0);
      BufferPtr col = Scratch(1LL * column_rows() * images * column_area());
      Im2col(bottom[0]->data(), n0, images, col->mem(), StorageType::kFloat32);
      FromColumnOrder(col->mem(), n0, images, top[0]->data());
    }
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    for (int n0 = 0; n0 < num_; n0 += chunk_) {
      const int images = std::min(chunk_, num_ - n0);
      BufferPtr col = Scratch(1LL * column_rows() * images * column_area());
      ToColumnOrder(top[0]->diff(), n0, images, col->mem(), StorageType::kFloat32);
      Col2im(col->mem(), n0, images, bottom[0]->diff());
    }
  }

 protected:
  bool reverse_dimensions() const override { return false; }
  std::vector<int> OutputShape(const Blob& bottom) const override {
    return ConvolutionOutputShape(bottom);
  }
};

REGISTER_LAYER_CLASS(Im2col);

}  // namespace dlcaffe
