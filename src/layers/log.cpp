// Log (Caffe "Log"): y = log_base(shift + scale * x); base -1 (the default)
// means e. The gradient needs x, so in-place use keeps a copy of it.
#include <cmath>

#include "dlcaffe/layer_registry.hpp"
#include "layers/neuron_layer.hpp"

namespace dlcaffe {

class LogLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "Log"; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::LogParameter& p = param_.log_param();
    const bool natural = p.base() == -1.f;
    DLC_REQUIRE(natural || (p.base() > 0.f && p.base() != 1.f && std::isfinite(p.base())),
                Where() << "log_param.base must be positive, finite and not 1 (or -1 for e), got "
                        << p.base());
    scale_ = p.scale();
    shift_ = p.shift();
    base_scale_ = natural ? 1.f : static_cast<float>(1.0 / std::log(double(p.base())));
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    KeepBottomIfInPlace(bottom, top);
    const int n = bottom[0]->count();
    ctx_->Launch1D(ctx_->Kernel("log.cl", "", "log_forward"), n, n, scale_, shift_, base_scale_,
                   bottom[0]->data(), top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    const int n = bottom[0]->count();
    ctx_->Launch1D(ctx_->Kernel("log.cl", "", "log_backward"), n, n, scale_, shift_, base_scale_,
                   BottomForBackward(bottom, top), top[0]->diff(), bottom[0]->diff());
  }

 protected:
  bool BackwardReadsBottom() const override { return true; }

 private:
  float scale_ = 1.f, shift_ = 0.f, base_scale_ = 1.f;
};

REGISTER_LAYER_CLASS(Log);

}  // namespace dlcaffe
