// CausalMask (dlcaffe "CausalMask", no parameters): the causal mask of
// attention scores ... x Tq x Tk. Query q sees key k where
// k <= q + (Tk - Tq) (aligned at the end, so that queries for the last Tq
// positions of a sequence of Tk see their past: Tq = Tk is the lower
// triangle); there the top is the bottom, elsewhere -INFINITY, so that a
// following Softmax over the last axis gives those keys weight 0. Backward
// passes the diff where kept and writes 0 where masked. The kernel derives
// the condition from the index (no Tq x Tk mask buffer). Works in place.
// Tq > Tk is an error: the first queries would see no key, and a softmax
// over a row of -INFINITY is NaN.
#include <limits>

#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class CausalMaskLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "CausalMask"; }
  bool DecodesIncrementally() const override { return false; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const Blob& x = *bottom[0];
    DLC_REQUIRE(x.num_axes() >= 2,
                Where() << "needs scores of at least 2 axes (... x Tq x Tk), got "
                        << x.shape_string());
    tq_ = x.shape(-2);
    tk_ = x.shape(-1);
    DLC_REQUIRE(tq_ <= tk_, Where() << "the scores " << x.shape_string() << " have more queries ("
                                    << tq_ << ", axis -2) than keys (" << tk_
                                    << ", axis -1): the first " << tq_ - tk_
                                    << " would see no key");
    count_ = x.count();
    top[0]->ReshapeLike(x);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    Mask(bottom[0]->data(), top[0]->data(), -std::numeric_limits<float>::infinity());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    Mask(top[0]->diff(), bottom[0]->diff(), 0.f);
  }

 private:
  void Mask(cl_mem in, cl_mem out, float fill) {
    ctx_->Launch1D(ctx_->Kernel("causal_mask.cl", "", "causal_mask"), count_, count_, tq_, tk_,
                   fill, in, out);
  }

  int tq_ = 0, tk_ = 0, count_ = 0;
};

REGISTER_LAYER_CLASS(CausalMask);

}  // namespace dlcaffe
