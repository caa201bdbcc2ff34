// PositionEmbedding (dlcaffe "PositionEmbedding", position_embedding_param):
// learned absolute positions, GPT-2's wpe. The row at t (axis -2) of a
// ... x T x D blob gets row position + t of a max_positions x D table added,
// position being the decode state's while a net decodes incrementally (one
// new token at a time) and 0 otherwise. The table is the layer's one blob
// (filled by weight_filler); training sums its rows' gradients over the
// leading axes. Works in place. x and y may be stored in 16 bits (mixed
// precision; the table and its gradient are float).
#include "core/blob_copy.hpp"
#include "core/storage_option.hpp"
#include "dlcaffe/filler.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "dlcaffe/math.hpp"

namespace dlcaffe {

class PositionEmbeddingLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "PositionEmbedding"; }
  bool SupportsStorage(StorageType) const override { return true; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::PositionEmbeddingParameter& p = param_.position_embedding_param();
    DLC_REQUIRE(p.max_positions() > 0 && p.max_positions() <= (1u << 24),
                Where() << "position_embedding_param.max_positions must be 1 to " << (1 << 24)
                        << ", got " << p.max_positions());
    max_positions_ = static_cast<int>(p.max_positions());
    DLC_REQUIRE(bottom[0]->num_axes() >= 2,
                Where() << "needs an input of at least 2 axes (... x T x D), got "
                        << bottom[0]->shape_string());
    const int width = bottom[0]->shape(-1);
    if (blobs_.empty()) {  // else shared or loaded already
      blobs_.push_back(std::make_shared<Blob>(*ctx_, std::vector<int>{max_positions_, width}));
      FillBlob(p.weight_filler(), blobs_[0].get());
    }
    set_param_propagate_down(0, true);
  }

  void SetDecodeState(const DecodeState& state) override {
    position_ = state.incremental ? state.position : 0;
    decoding_ = state.incremental;
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const Blob& x = *bottom[0];
    DLC_REQUIRE(x.num_axes() >= 2, Where() << "needs an input of at least 2 axes (... x T x D), "
                                              "got " << x.shape_string());
    T_ = x.shape(-2), D_ = x.shape(-1);
    DLC_REQUIRE(blobs_[0]->shape() == std::vector<int>({max_positions_, D_}),
                Where() << "the table " << blobs_[0]->shape_string() << " must be (max_positions "
                        << max_positions_ << ", " << D_ << ") for the input "
                        << x.shape_string());
    DLC_REQUIRE(position_ + T_ <= max_positions_,
                Where() << "positions " << position_ << " to " << position_ + T_ - 1
                        << " pass max_positions " << max_positions_ << " (input "
                        << x.shape_string() << ")");
    top[0]->ReshapeLike(x);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int count = bottom[0]->count();
    if (count == 0) return;
    ctx_->Launch1D(ctx_->Kernel("position_embedding.cl",
                                StorageOption("DATA_TYPE", bottom[0]->storage_type()),
                                "position_embedding_forward"), count,
                   count, T_, D_, position_, bottom[0]->data(), blobs_[0]->data(),
                   top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    DLC_REQUIRE(!decoding_, Where() << "cannot run backward while the net decodes incrementally");
    const int count = top[0]->count();
    if (count == 0) return;
    if (param_propagate_down(0)) {
      const int rows = T_ * D_;
      ctx_->Launch1D(ctx_->Kernel("position_embedding.cl",
                                  StorageOption("DATA_TYPE", top[0]->storage_type()),
                                  "position_embedding_table_backward"),
                     rows, rows, count / rows, T_, D_, top[0]->diff(), blobs_[0]->diff());
    }
    if (propagate_down[0] && bottom[0] != top[0])
      CopyBlobValues(*ctx_, *bottom[0], top[0]->diff(), bottom[0]->diff());
  }

 private:
  int max_positions_ = 0, T_ = 0, D_ = 0, position_ = 0;
  bool decoding_ = false;
};

REGISTER_LAYER_CLASS(PositionEmbedding);

}  // namespace dlcaffe
