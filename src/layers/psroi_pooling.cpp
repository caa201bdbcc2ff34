// PSROIPooling (R-FCN "PSROIPooling", psroi_pooling_param): position-
// sensitive average pooling of regions of interest (caffe.proto's
// PSROIPoolingParameter; the bins in src/cl/psroi_pooling.cl, as R-FCN's
// kernel computes them). Bottoms: the N x (output_dim * G * G) x H x W score
// maps and the R x 5 regions (batch index, x1, y1, x2, y2 in image pixels).
// Top: R x output_dim x G x G. Backward reaches the score maps, gathered per
// input element (no atomics); the regions get a zero gradient, as R-FCN
// gives them none.
#include <cmath>

#include "core/exact_division.hpp"
#include "core/zero_gradients.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class PSROIPoolingLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "PSROIPooling"; }
  int ExactNumBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index == 0; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::PSROIPoolingParameter& p = param_.psroi_pooling_param();
    DLC_REQUIRE(p.output_dim() > 0 && p.group_size() > 0,
                Where() << "psroi_pooling_param.output_dim and group_size must be given "
                           "(positive), got " << p.output_dim() << " and " << p.group_size());
    DLC_REQUIRE(std::isfinite(p.spatial_scale()) && p.spatial_scale() > 0.f,
                Where() << "psroi_pooling_param.spatial_scale must be positive, got "
                        << p.spatial_scale());
    output_dim_ = p.output_dim(), group_ = p.group_size();
    build_options_ = ExactDivisionOption(ctx_->info());
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const Blob &map = *bottom[0], &rois = *bottom[1];
    DLC_REQUIRE(map.num_axes() == 4 && map.shape(1) == output_dim_ * group_ * group_,
                Where() << "bottom 0 must be N x " << output_dim_ * group_ * group_ << " x H x W"
                        << " (output_dim " << output_dim_ << " x group_size^2 " << group_ * group_
                        << " score maps), got " << map.shape_string());
    DLC_REQUIRE(rois.num_axes() >= 2 && rois.count(1) == 5,
                Where() << "bottom 1 must be R x 5 regions (batch index, x1, y1, x2, y2), got "
                        << rois.shape_string());
    top[0]->Reshape({rois.shape(0), output_dim_, group_, group_});
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int count = top[0]->count();
    if (count == 0) return;
    const Blob& map = *bottom[0];
    ctx_->Launch1D(Kernel("psroi_pool_forward"), count, count, output_dim_, group_,
                   map.shape(2), map.shape(3), param_.psroi_pooling_param().spatial_scale(),
                   map.shape(0), map.data(), bottom[1]->data(), top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    WriteZeroGradients({false, propagate_down[1]}, bottom);
    if (!propagate_down[0]) return;
    const Blob& map = *bottom[0];
    const int count = map.count();
    if (count == 0) return;
    ctx_->Launch1D(Kernel("psroi_pool_backward"), count, count, output_dim_, group_,
                   map.shape(2), map.shape(3), param_.psroi_pooling_param().spatial_scale(),
                   bottom[1]->shape(0), top[0]->diff(), bottom[1]->data(), bottom[0]->diff());
  }

 private:
  cl_kernel Kernel(const char* name) {
    return ctx_->Kernel("psroi_pooling.cl", build_options_, name);
  }

  int output_dim_ = 0, group_ = 0;
  std::string build_options_;  // bin edges as the host's (core/exact_division.hpp)
};

REGISTER_LAYER_CLASS(PSROIPooling);

}  // namespace dlcaffe
