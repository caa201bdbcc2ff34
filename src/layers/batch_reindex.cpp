// BatchReindex (Caffe "BatchReindex"): top row i is bottom row indices[i],
// where the second bottom holds the (float-valued) indices, one per top row.
// Indices may repeat or skip rows; the gradient of a bottom row is the sum of
// the top diffs of every top row that copied it. That sum is a gather (one
// work-item per bottom element scans the index list), so backward needs no
// atomics and no host-side sorting.
//
// Caffe checks the indices on the host; reading them back would stall the
// queue, so an index outside [0, bottom rows) instead yields a top row of NaN
// (visible downstream, never silently plausible) and no gradient.
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class BatchReindexLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "BatchReindex"; }
  int ExactNumBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index == 0; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    DLC_REQUIRE(bottom[1]->num_axes() == 1,
                Where() << "the indices (bottom 1) must be a 1-D blob, got shape "
                        << bottom[1]->shape_string());
    DLC_REQUIRE(bottom[0]->num_axes() >= 1,
                Where() << "the data (bottom 0) needs a batch axis, got shape "
                        << bottom[0]->shape_string());
    std::vector<int> shape = bottom[0]->shape();
    shape[0] = bottom[1]->shape(0);
    top[0]->Reshape(shape);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int n = top[0]->count();
    ctx_->Launch1D(ctx_->Kernel("batch_reindex.cl", "", "batch_reindex_forward"), n, n,
                   bottom[0]->count(1), bottom[0]->shape(0), bottom[1]->data(),
                   bottom[0]->data(), top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    DLC_REQUIRE(!propagate_down[1], Where() << "cannot backpropagate to the indices");
    if (!propagate_down[0]) return;
    const int n = bottom[0]->count();
    ctx_->Launch1D(ctx_->Kernel("batch_reindex.cl", "", "batch_reindex_backward"), n, n,
                   bottom[0]->count(1), bottom[1]->count(), bottom[1]->data(),
                   top[0]->diff(), bottom[0]->diff());
  }
};

REGISTER_LAYER_CLASS(BatchReindex);

}  // namespace dlcaffe
