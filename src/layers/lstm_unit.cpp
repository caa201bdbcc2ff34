// LSTMUnit (Caffe "LSTMUnit"): the element-wise part of one LSTM step, as used
// by the LSTM layer's unrolled net. Bottoms: c_prev (1 x N x D), the gate
// inputs X (1 x N x 4D, gates in Caffe's order i, f, o, g) and cont (1 x N).
// Tops: c and h (1 x N x D):
//     c = cont * sigmoid(f') * c_prev + sigmoid(i') * tanh(g')
//     h = sigmoid(o') * tanh(c)
// cont takes no gradient. No learnable parameters.
// c_prev, X, c and h may be stored in 16 bits (mixed precision: widened on
// load, float arithmetic, rounded once on store); cont stays float32.
#include <string>

#include "core/storage_option.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class LSTMUnitLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "LSTMUnit"; }
  int ExactNumBottomBlobs() const override { return 3; }
  int ExactNumTopBlobs() const override { return 2; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index != 2; }
  bool SupportsStorage(StorageType) const override { return true; }
  bool KeepsBottomInFloat(int index) const override { return index == 2; }  // cont

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
    const StorageType storage = c_prev.storage_type();
    DLC_REQUIRE(gates.storage_type() == storage && top[0]->storage_type() == storage &&
                    top[1]->storage_type() == storage,
                Where() << "c_prev, the gate inputs, c and h must be stored alike; c_prev is "
                        << StorageTypeName(storage) << ", the gate inputs "
                        << StorageTypeName(gates.storage_type()) << ", c "
                        << StorageTypeName(top[0]->storage_type()) << ", h "
                        << StorageTypeName(top[1]->storage_type()));
    DLC_REQUIRE(cont.storage_type() == StorageType::kFloat32,
                Where() << "bottom[2] (cont) must be stored in float32, got "
                        << StorageTypeName(cont.storage_type()));
    options_ = StorageOption("DATA_TYPE", storage);
    top[0]->ReshapeLike(c_prev);
    top[1]->ReshapeLike(c_prev);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int count = top[0]->count();
    ctx_->Launch1D(ctx_->Kernel("lstm_unit.cl", options_, "lstm_unit_forward"), count, count,
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
    ctx_->Launch1D(ctx_->Kernel("lstm_unit.cl", options_, "lstm_unit_backward"), count, count,
                   hidden_dim_, bottom[0]->data(), bottom[1]->data(), bottom[2]->data(),
                   top[0]->data(), top[0]->diff(), top[1]->diff(),
                   static_cast<int>(propagate_down[0]), bottom[0]->diff(),
                   static_cast<int>(propagate_down[1]), bottom[1]->diff());
  }

 private:
  int hidden_dim_ = 0;
  std::string options_;  // the kernels' storage type (-DDATA_TYPE)
};

REGISTER_LAYER_CLASS(LSTMUnit);

}  // namespace dlcaffe
