// Input (Caffe "Input"): tops whose shapes come from input_param.shape (one
// shape for every top, or one per top); the application writes their data.
// No computation.
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class InputLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Input"; }
  // Its tops hold what the caller writes (converted by Blob::WriteData).
  bool SupportsStorage(StorageType) const override { return true; }
  int ExactNumBottomBlobs() const override { return 0; }
  int MinTopBlobs() const override { return 1; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::InputParameter& p = param_.input_param();
    const int num_shapes = p.shape_size(), num_tops = static_cast<int>(top.size());
    DLC_REQUIRE(num_shapes == 0 || num_shapes == 1 || num_shapes == num_tops,
                Where() << "give input_param.shape once, once per top or not at all: "
                        << num_tops << " top(s), " << num_shapes << " shape(s)");
    if (num_shapes == 0) return;
    for (int i = 0; i < num_tops; ++i) top[i]->Reshape(p.shape(num_shapes == 1 ? 0 : i));
  }

  // The shapes are set once; the application may reshape the tops itself.
  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {}
  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {}
  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {}
};

REGISTER_LAYER_CLASS(Input);

}  // namespace dlcaffe
