// IntegerDivide (dlcaffe; ONNX Div and Mod of run-time integers: a
// detector's flat top-k index split into anchor and class): the bottom's
// whole numbers divided by integer_divide_param.divisor in integer
// arithmetic on the device (src/cl/integer_divide.cl). Integers are held as
// floats, exact below 2^24; the element is truncated to a whole number
// first. No gradient (the result is piecewise constant).
#include <vector>

#include "core/zero_gradients.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class IntegerDivideLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "IntegerDivide"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void LayerSetUp(const std::vector<Blob*>&, const std::vector<Blob*>&) override {
    DLC_REQUIRE(param_.integer_divide_param().divisor() != 0, Where() << "the divisor is 0");
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    top[0]->Reshape(bottom[0]->shape());
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::IntegerDivideParameter& p = param_.integer_divide_param();
    const int n = top[0]->count();
    ctx_->Launch1D(ctx_->Kernel("integer_divide.cl", "", "integer_divide"), n, n,
                   static_cast<int>(p.operation()), static_cast<cl_long>(p.divisor()),
                   bottom[0]->data(), top[0]->data());
  }

  void Backward(const std::vector<Blob*>&, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    WriteZeroGradients(propagate_down, bottom);
  }
};

REGISTER_LAYER_CLASS(IntegerDivide);

}  // namespace dlcaffe
