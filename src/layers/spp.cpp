// SPP (Caffe "SPP"): spatial pyramid pooling. Level l (0 <= l <
// pyramid_height) pools the N x C x H x W bottom into 2^l x 2^l bins with a
// Pooling layer whose kernel, stride and pad are Caffe's:
//   kernel = ceil(H / 2^l), stride = kernel, pad = (kernel * 2^l - H + 1) / 2
// (and the same along W). As in Caffe, the layer is Split -> Pooling ->
// Flatten per level -> Concat along axis 1, so the top is
// N x C * (1 + 4 + ... + 4^(pyramid_height-1)), level by level, channel-major
// within a level; with pyramid_height 1 it is the single Pooling's
// N x C x 1 x 1 top.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class SPPLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "SPP"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    pyramid_height_ = static_cast<int>(param_.spp_param().pyramid_height());
    DLC_REQUIRE(pyramid_height_ >= 1,
                Where() << "pyramid_height must be at least 1, got " << pyramid_height_);
  }

  // The inner layers are built again whenever the bottom's size changes: the
  // pooling geometry depends on it.
  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const Blob& in = *bottom[0];
    DLC_REQUIRE(in.num_axes() == 4, Where() << "input must have 4 axes (num, channels, "
                                            << "height, width), got " << in.shape_string());
    DLC_REQUIRE(in.shape(2) > 0 && in.shape(3) > 0,
                Where() << "input " << in.shape_string() << " has no pixels");
    const std::vector<int> shape = in.shape();
    if (built_ && shape == built_shape_) {
      // Same shape: the inner layers only re-check their blobs.
      Chain([&](Layer& layer, const std::vector<Blob*>& b, const std::vector<Blob*>& t) {
        layer.set_choices(choices_);  // this layer's may have changed (Net::set_options)
        layer.Reshape(b, t);
      }, bottom, top);
      return;
    }
    Build(in.shape(2), in.shape(3));
    Chain([&](Layer& layer, const std::vector<Blob*>& b, const std::vector<Blob*>& t) {
      layer.set_choices(choices_);  // no plan decides for the inner layers: they run as this one
      layer.SetUp(b, t);
    }, bottom, top);
    built_ = true;
    built_shape_ = shape;
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    Chain([&](Layer& layer, const std::vector<Blob*>& b, const std::vector<Blob*>& t) {
      layer.Forward(b, t);
    }, bottom, top);
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    if (pyramid_height_ == 1) {
      pooling_[0]->Backward(top, {true}, bottom);
      return;
    }
    std::vector<Blob*> flat = Pointers(flattened_);
    concat_->Backward(top, std::vector<bool>(flat.size(), true), flat);
    for (int l = 0; l < pyramid_height_; ++l) {
      flatten_[l]->Backward({flattened_[l].get()}, {true}, {pooled_[l].get()});
      pooling_[l]->Backward({pooled_[l].get()}, {true}, {split_[l].get()});
    }
    split_layer_->Backward(Pointers(split_), {true}, bottom);
  }

 private:
  // Caffe's pooling for level `level` of an image of height x width.
  caffe::LayerParameter PoolingParam(int level, int height, int width) const {
    const int bins = 1 << level;
    const int kernel_h = static_cast<int>(std::ceil(height / static_cast<double>(bins)));
    const int kernel_w = static_cast<int>(std::ceil(width / static_cast<double>(bins)));
    const int pad_h = (kernel_h * bins - height + 1) / 2;
    const int pad_w = (kernel_w * bins - width + 1) / 2;
    // Pooling (in Caffe too) needs the pad smaller than the kernel.
    DLC_REQUIRE(pad_h < kernel_h && pad_w < kernel_w,
                Where() << "pyramid level " << level << ": a " << height << " x " << width
                        << " input is too small for " << bins << " x " << bins
                        << " bins (kernel " << kernel_h << " x " << kernel_w << ", pad "
                        << pad_h << " x " << pad_w << ")");
    caffe::LayerParameter p;
    p.set_name(name() + "/pool" + std::to_string(level));
    p.set_type("Pooling");
    p.set_phase(param_.phase());
    caffe::PoolingParameter* pool = p.mutable_pooling_param();
    pool->set_kernel_h(kernel_h);
    pool->set_kernel_w(kernel_w);
    pool->set_stride_h(kernel_h);
    pool->set_stride_w(kernel_w);
    pool->set_pad_h(pad_h);
    pool->set_pad_w(pad_w);
    switch (param_.spp_param().pool()) {
      case caffe::SPPParameter_PoolMethod_MAX:
        pool->set_pool(caffe::PoolingParameter_PoolMethod_MAX);
        break;
      case caffe::SPPParameter_PoolMethod_AVE:
        pool->set_pool(caffe::PoolingParameter_PoolMethod_AVE);
        break;
      case caffe::SPPParameter_PoolMethod_STOCHASTIC:
        pool->set_pool(caffe::PoolingParameter_PoolMethod_STOCHASTIC);
        break;
    }
    return p;
  }

  caffe::LayerParameter InnerParam(const std::string& suffix, const char* type) const {
    caffe::LayerParameter p;
    p.set_name(name() + "/" + suffix);
    p.set_type(type);
    p.set_phase(param_.phase());
    return p;
  }

  void Build(int height, int width) {
    pooling_.clear();
    flatten_.clear();
    split_.clear();
    pooled_.clear();
    flattened_.clear();
    for (int l = 0; l < pyramid_height_; ++l)
      pooling_.push_back(LayerRegistry::Create(PoolingParam(l, height, width), *ctx_));
    if (pyramid_height_ == 1) return;
    split_layer_ = LayerRegistry::Create(InnerParam("split", "Split"), *ctx_);
    concat_ = LayerRegistry::Create(InnerParam("concat", "Concat"), *ctx_);
    for (int l = 0; l < pyramid_height_; ++l) {
      flatten_.push_back(
          LayerRegistry::Create(InnerParam("flatten" + std::to_string(l), "Flatten"), *ctx_));
      split_.push_back(std::make_unique<Blob>(*ctx_));
      pooled_.push_back(std::make_unique<Blob>(*ctx_));
      flattened_.push_back(std::make_unique<Blob>(*ctx_));
    }
  }

  // Runs `step` on every inner layer in forward order with its blobs.
  template <typename Step>
  void Chain(const Step& step, const std::vector<Blob*>& bottom,
             const std::vector<Blob*>& top) {
    if (pyramid_height_ == 1) {
      step(*pooling_[0], bottom, top);
      return;
    }
    step(*split_layer_, bottom, Pointers(split_));
    for (int l = 0; l < pyramid_height_; ++l) {
      step(*pooling_[l], {split_[l].get()}, {pooled_[l].get()});
      step(*flatten_[l], {pooled_[l].get()}, {flattened_[l].get()});
    }
    step(*concat_, Pointers(flattened_), top);
  }

  static std::vector<Blob*> Pointers(const std::vector<std::unique_ptr<Blob>>& blobs) {
    std::vector<Blob*> result;
    for (const auto& b : blobs) result.push_back(b.get());
    return result;
  }

  int pyramid_height_ = 0;
  bool built_ = false;
  std::vector<int> built_shape_;
  std::unique_ptr<Layer> split_layer_, concat_;
  std::vector<std::unique_ptr<Layer>> pooling_, flatten_;
  // split_[l] -> pooling -> pooled_[l] -> flatten -> flattened_[l] -> concat
  std::vector<std::unique_ptr<Blob>> split_, pooled_, flattened_;
};

REGISTER_LAYER_CLASS(SPP);

}  // namespace dlcaffe
