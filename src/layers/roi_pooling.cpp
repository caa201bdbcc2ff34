// ROIPooling (Fast R-CNN "ROIPooling", roi_pooling_param): max pooling of
// regions of interest into a fixed grid of bins (caffe.proto's
// ROIPoolingParameter has the geometry, as Fast R-CNN's Caffe computes it).
// Bottoms: the N x C x H x W feature map and the R x 5 regions (batch index,
// x1, y1, x2, y2 in image pixels; R x 5 x 1 x 1 too). Top: R x C x pooled_h x
// pooled_w. Backward reaches the feature map (each bin's max gets its
// diff), gathered per input element, so without atomics; the regions get a
// zero gradient. The bins' bounds
// are computed exactly in integers (src/cl/roi_pooling.cl): Fast R-CNN's
// float bin size can move one by a row where the quotient is whole, and
// OpenCL's float division differs between devices there.
#include <algorithm>
#include <cmath>

#include "core/grow_buffer.hpp"
#include "core/zero_gradients.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class ROIPoolingLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "ROIPooling"; }
  int ExactNumBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index == 0; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::ROIPoolingParameter& p = param_.roi_pooling_param();
    DLC_REQUIRE(p.pooled_h() > 0 && p.pooled_w() > 0,
                Where() << "roi_pooling_param.pooled_h and pooled_w must be positive, got "
                        << p.pooled_h() << " and " << p.pooled_w());
    DLC_REQUIRE(std::isfinite(p.spatial_scale()) && p.spatial_scale() > 0.f,
                Where() << "roi_pooling_param.spatial_scale must be positive, got "
                        << p.spatial_scale());
    pooled_h_ = static_cast<int>(p.pooled_h()), pooled_w_ = static_cast<int>(p.pooled_w());
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const Blob& map = *bottom[0];
    const Blob& rois = *bottom[1];
    DLC_REQUIRE(map.num_axes() == 4,
                Where() << "bottom 0 must be N x C x H x W, got " << map.shape_string());
    DLC_REQUIRE(rois.num_axes() >= 2 && rois.count(1) == 5,
                Where() << "bottom 1 must be R x 5 regions (batch index, x1, y1, x2, y2), got "
                        << rois.shape_string());
    regions_ = rois.shape(0);
    top[0]->Reshape({regions_, map.shape(1), pooled_h_, pooled_w_});
    GrowBuffer(*ctx_, &argmax_, top[0]->count() * sizeof(int));
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int count = top[0]->count();
    if (count == 0) return;
    const Blob& map = *bottom[0];
    ctx_->Launch1D(ctx_->Kernel("roi_pooling.cl", "", "roi_pool_forward"), count, count,
                   map.shape(1), map.shape(2), map.shape(3), pooled_h_, pooled_w_,
                   param_.roi_pooling_param().spatial_scale(), map.shape(0), map.data(),
                   bottom[1]->data(), top[0]->data(), argmax_->mem());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    // The regions get a zero gradient, as caffe-fast-rcnn gives them none
    // (a Split above them sums it).
    WriteZeroGradients({false, propagate_down.size() > 1 && propagate_down[1]}, bottom);
    const int count = bottom[0]->count();
    if (!propagate_down[0] || count == 0) return;
    const Blob& map = *bottom[0];
    ctx_->Launch1D(ctx_->Kernel("roi_pooling.cl", "", "roi_pool_backward"), count, count,
                   map.shape(1), map.shape(2), map.shape(3), pooled_h_, pooled_w_,
                   param_.roi_pooling_param().spatial_scale(), regions_, top[0]->diff(),
                   bottom[1]->data(), argmax_->mem(), bottom[0]->diff());
  }

 private:
  int pooled_h_ = 0, pooled_w_ = 0, regions_ = 0;
  BufferPtr argmax_;  // per top element: where its max lies in its (n, c) plane, or -1
};

REGISTER_LAYER_CLASS(ROIPooling);

}  // namespace dlcaffe
