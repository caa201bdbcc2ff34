// Convert: its top is its bottom in another storage type (storage_type.hpp).
// A net in 16-bit storage puts one before a layer that reads another type
// than its bottom holds (passes/assign_storage_types.cpp); its own forward_type
// is its top's type. Forward narrows or widens the data (round to nearest
// even); backward converts the gradient back into the bottom's type.
#include "core/storage_convert.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class ConvertLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Convert"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool SupportsStorage(StorageType) const override { return true; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    DLC_REQUIRE(top[0] != bottom[0], Where() << "cannot work in place (its top is another type)");
    top[0]->ReshapeLike(*bottom[0]);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    ConvertStorage(*ctx_, bottom[0]->data(), 0, bottom[0]->storage_type(), top[0]->data(), 0,
                   top[0]->storage_type(), bottom[0]->count());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    ConvertStorage(*ctx_, top[0]->diff(), 0, top[0]->storage_type(), bottom[0]->diff(), 0,
                   bottom[0]->storage_type(), bottom[0]->count());
  }
};

REGISTER_LAYER_CLASS(Convert);

}  // namespace dlcaffe
