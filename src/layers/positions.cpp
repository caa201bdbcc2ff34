// Positions (dlcaffe "Positions", positions_param): the absolute positions of
// the bottom's rows along `axis`, position + 0 ... position + T - 1 as
// floats (a T-vector), position being the decode state's while the net
// decodes incrementally and 0 otherwise. An imported language model's
// arange over its token axis (position ids, the angles of rotary tables)
// becomes this layer when it is imported for decoding, so that what the
// model computes from positions follows the key/value cache. The bottom is
// read for its shape only; nothing flows back through it.
#include "core/zero_gradients.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class PositionsLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Positions"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int) const override { return false; }

  void SetDecodeState(const DecodeState& state) override {
    position_ = state.incremental ? state.position : 0;
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int rank = bottom[0]->num_axes(), axis = param_.positions_param().axis();
    DLC_REQUIRE(axis >= -rank && axis < rank,
                Where() << "positions_param.axis " << axis << " is out of range for the bottom "
                        << bottom[0]->shape_string());
    DLC_REQUIRE(bottom[0] != top[0], Where() << "cannot work in place");
    top[0]->Reshape({bottom[0]->shape(axis < 0 ? axis + rank : axis)});
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int T = top[0]->count();
    if (T == 0) return;
    ctx_->Launch1D(ctx_->Kernel("positions.cl", "", "positions_forward"), T, T, position_,
                   top[0]->data());
  }

  void Backward(const std::vector<Blob*>&, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    WriteZeroGradients(propagate_down, bottom);
  }

 private:
  int position_ = 0;
};

REGISTER_LAYER_CLASS(Positions);

}  // namespace dlcaffe
