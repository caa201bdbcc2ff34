// Embed (Caffe "Embed"): a lookup table. Each input value is an index into
// the input_dim x num_output weight blob (Caffe's layout, so .caffemodel
// files load); the top has the input's shape plus a num_output axis, plus the
// bias with bias_term. The weight gradient sums the rows' gradients without
// atomics (one work-item per weight row scans the batch); indices get no
// gradient.
//
// Indices are never read on the host. One that is not an integer in
// [0, input_dim) is a user error, found lazily (LateLabelCheck): that pass's
// rows are NaN and a later Forward throws.
//
// The top and its gradient may be stored in 16 bits (mixed precision); the
// indices stay float32 (a float16 holds integers exactly only up to 2048),
// and the table and its gradient are float.
#include "core/storage_option.hpp"
#include "dlcaffe/filler.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "core/late_label_check.hpp"

namespace dlcaffe {

class EmbedLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Embed"; }
  bool SupportsStorage(StorageType) const override { return true; }
  bool KeepsBottomInFloat(int) const override { return true; }  // the indices
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int bottom_index) const override { return false; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::EmbedParameter& p = param_.embed_param();
    num_output_ = static_cast<int>(p.num_output());
    input_dim_ = static_cast<int>(p.input_dim());
    DLC_REQUIRE(num_output_ > 0, Where() << "num_output must be set and positive");
    DLC_REQUIRE(input_dim_ > 0, Where() << "input_dim must be set and positive");
    bias_term_ = p.bias_term();
    if (blobs_.empty()) {  // else shared or loaded already
      blobs_.push_back(std::make_shared<Blob>(*ctx_, std::vector<int>{input_dim_, num_output_}));
      FillBlob(p.weight_filler(), blobs_[0].get());
      if (bias_term_) {
        blobs_.push_back(std::make_shared<Blob>(*ctx_, std::vector<int>{num_output_}));
        FillBlob(p.bias_filler(), blobs_[1].get());
      }
    }
    for (size_t i = 0; i < blobs_.size(); ++i) set_param_propagate_down(i, true);
    index_check_ = std::make_unique<LateLabelCheck>(*ctx_);
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    std::vector<int> top_shape = bottom[0]->shape();
    top_shape.push_back(num_output_);
    top[0]->Reshape(top_shape);
  }

  void ThrowLateErrors() override {
    if (const auto bad = index_check_->TakeBadValue())
      DLC_FAIL(Where() << "index " << bad->value << " at position " << bad->position
                       << " of the input is not an integer in [0, " << input_dim_
                       << ") (input_dim) (found after an earlier forward pass, whose output "
                          "rows for it were NaN)");
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    ThrowLateErrors();
    const int m = bottom[0]->count();
    if (m == 0) return;
    ctx_->Launch(ctx_->Kernel("embed.cl", "", "embed_check_indices"), NDRange(kCheckGroup),
                 NDRange(kCheckGroup), m, input_dim_, bottom[0]->data(), index_check_->record());
    const cl_mem bias = bias_term_ ? blobs_[1]->data() : blobs_[0]->data();  // unused without
    const int count = m * num_output_;
    ctx_->Launch1D(ctx_->Kernel("embed.cl", TopOption(*top[0]), "embed_forward"), count, count, num_output_,
                   input_dim_, (int)bias_term_, bottom[0]->data(), blobs_[0]->data(), bias,
                   top[0]->data());
    index_check_->ReadLater();
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    DLC_REQUIRE(!propagate_down[0], Where() << "cannot backpropagate to the indices");
    const int m = bottom[0]->count();
    if (param_propagate_down(0)) {
      ctx_->Launch1D(ctx_->Kernel("embed.cl", TopOption(*top[0]), "embed_weight_backward"), input_dim_,
                     input_dim_, num_output_, m, bottom[0]->data(), top[0]->diff(),
                     blobs_[0]->diff());
    }
    if (bias_term_ && param_propagate_down(1)) {
      ctx_->Launch1D(ctx_->Kernel("embed.cl", TopOption(*top[0]), "embed_bias_backward"), num_output_,
                     num_output_, m, top[0]->diff(), blobs_[1]->diff());
    }
  }

 private:
  // The kernels' option for the top's storage type.
  static std::string TopOption(const Blob& top) {
    return StorageOption("DATA_TYPE", top.storage_type());
  }

  static constexpr size_t kCheckGroup = 64;  // EMBED_GROUP in embed.cl

  int num_output_ = 0, input_dim_ = 0;
  bool bias_term_ = true;
  std::unique_ptr<LateLabelCheck> index_check_;
};

REGISTER_LAYER_CLASS(Embed);

}  // namespace dlcaffe
