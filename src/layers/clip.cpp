// Clip (Caffe "Clip"): y = min(max(x, min), max); the gradient is zero where x
// lies outside [min, max]. In place, a copy of x is kept: y alone cannot tell
// a clipped element from one that sits exactly on a bound.
#include "dlcaffe/layer_registry.hpp"
#include "layers/neuron_layer.hpp"

namespace dlcaffe {

class ClipLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "Clip"; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    DLC_REQUIRE(param_.has_clip_param(), Where() << "needs clip_param { min: .. max: .. }");
    const caffe::ClipParameter& p = param_.clip_param();
    DLC_REQUIRE(p.min() <= p.max(), Where() << "clip_param.min (" << p.min()
                                            << ") must not exceed clip_param.max ("
                                            << p.max() << ")");
    min_ = p.min();
    max_ = p.max();
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    KeepBottomIfInPlace(bottom, top);
    const int n = bottom[0]->count();
    ctx_->Launch1D(ctx_->Kernel("clip.cl", "", "clip_forward"), n, n, min_, max_,
                   bottom[0]->data(), top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    const int n = bottom[0]->count();
    ctx_->Launch1D(ctx_->Kernel("clip.cl", "", "clip_backward"), n, n, min_, max_,
                   BottomForBackward(bottom, top), top[0]->diff(), bottom[0]->diff());
  }

 protected:
  bool BackwardReadsBottom() const override { return true; }

 private:
  float min_ = 0.f, max_ = 0.f;
};

REGISTER_LAYER_CLASS(Clip);

}  // namespace dlcaffe
