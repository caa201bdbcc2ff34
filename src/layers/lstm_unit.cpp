// LSTMUnit (Caffe "LSTMUnit"): the element-wise part of one LSTM step, as used
// by the LSTM layer's unrolled net. Bottoms: c_prev (1 x N x D), the gate
// inputs X (1 x N x 4D, gates in Caffe's order i, f, o, g) and cont (1 x N).
// Tops: c and h (1 x N x D):
//     c = cont * sigmoid(f') * c_prev + sigmoid(i') * tanh(g')
//     h = sigmoid(o') * tanh(c)
// cont takes no gradient. No learnable parameters.
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class LSTMUnitLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "LSTMUnit"; }
  int ExactNumBottomBlobs() const override { return 3; }
  int ExactNumTopBlobs() const override { return 2; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index != 2; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const Blob& c_prev = *bottom[0];
    const Blob& gates = *bottom[1];
    const Blob& cont = *bottom[2];
    DLC_REQUIRE(c_prev.num_axes() == 3 && c_prev.shape(0) == 1,
                Where() << "bottom[0] (c_prev) must be 1 x streams x cells, got "
                        << c_prev.shape_string());
    const int num = c_prev.shape(1);
    hidden_dim_ = c_prev.shape(2);
    DLC_REQUIRE(gates.num_axes() == 3 && gates.shape(0) == 1 && gates.shape(1) == num &&
                    gates.shape(2) == 4 * hidden_dim_,
                Where() << "bottom[1] (gate inputs) must be 1 x " << num << " x "
                        << 4 * hidden_dim_ << " for c_prev " << c_prev.shape_string()
                        << ", got " << gates.shape_string());
    DLC_REQUIRE(cont.num_axes() == 2 && cont.shape(0) == 1 && cont.shape(1) == num,
                Where() << "bottom[2] (cont) must be 1 x " << num << ", got "
                        << cont.shape_string());
    top[0]->ReshapeLike(c_prev);
    top[1]->ReshapeLike(c_prev);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int count = top[0]->count();
    ctx_->Launch1D(ctx_->Kernel("lstm_unit.cl", "", "lstm_unit_forward"), count, count,
                   hidden_dim_, bottom[0]->data(), bottom[1]->data(), bottom[2]->data(),
                   top[0]->data(), top[1]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    DLC_REQUIRE(!propagate_down[2],
                Where() << "cannot backpropagate to the sequence continuation indicators "
                           "(bottom[2], cont)");
    if (!propagate_down[0] && !propagate_down[1]) return;
    const int count = top[0]->count();
    ctx_->Launch1D(ctx_->Kernel("lstm_unit.cl", "", "lstm_unit_backward"), count, count,
                   hidden_dim_, bottom[0]->data(), bottom[1]->data(), bottom[2]->data(),
                   top[0]->data(), top[0]->diff(), top[1]->diff(),
                   static_cast<int>(propagate_down[0]), bottom[0]->diff(),
                   static_cast<int>(propagate_down[1]), bottom[1]->diff());
  }

 private:
  int hidden_dim_ = 0;
};

REGISTER_LAYER_CLASS(LSTMUnit);

}  // namespace dlcaffe
