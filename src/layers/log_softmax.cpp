// LogSoftmax (dlcaffe "LogSoftmax", softmax_param): y = log(softmax(x)) along
// softmax_param.axis (default 1; negative counts from the end), as
// torch.nn.LogSoftmax and ONNX LogSoftmax (opset 13), computed stably as
// x - max - log(sum exp(x - max)). Backward: dx = dy - exp(y) * sum(dy)
// along the axis. Works in place.
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class LogSoftmaxLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "LogSoftmax"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const Blob& x = *bottom[0];
    const int axis = param_.softmax_param().axis();
    DLC_REQUIRE(axis >= -x.num_axes() && axis < x.num_axes(),
                Where() << "softmax_param.axis " << axis << " is out of range for the input "
                        << x.shape_string());
    const int a = axis < 0 ? axis + x.num_axes() : axis;
    channels_ = x.shape(a);
    outer_ = x.count(0, a);
    inner_ = x.count(a + 1);
    top[0]->ReshapeLike(x);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int positions = outer_ * inner_;
    ctx_->Launch1D(ctx_->Kernel("log_softmax.cl", "", "log_softmax_forward"), positions,
                   positions, channels_, inner_, bottom[0]->data(), top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    const int positions = outer_ * inner_;
    ctx_->Launch1D(ctx_->Kernel("log_softmax.cl", "", "log_softmax_backward"), positions,
                   positions, channels_, inner_, top[0]->data(), top[0]->diff(),
                   bottom[0]->diff());
  }

 private:
  int outer_ = 0, channels_ = 0, inner_ = 0;
};

REGISTER_LAYER_CLASS(LogSoftmax);

}  // namespace dlcaffe
