// RotaryEmbedding (dlcaffe "RotaryEmbedding", rotary_embedding_param): RoPE on
// a ... x T x D blob, as Hugging Face's apply_rotary_pos_emb. The row at index
// t along axis -2 sits at position p = t + position_offset (+ the decode
// state's position while a net decodes incrementally); pair i of its
// first rotary_dim features (0: all D) turns by the angle
// p * base^(-2i / rotary_dim):
//   y_a = x_a cos - x_b sin,  y_b = x_b cos + x_a sin,
// the pairs being (i, i + rotary_dim / 2) ("rotate half": GPT-NeoX, Hugging
// Face LLaMA) or, with interleaved, (2i, 2i + 1) (GPT-J, Meta's LLaMA).
// Features past rotary_dim pass through. No parameters; cos and sin are
// computed in the kernel (no table). Backward turns the top diff back by the
// same angles. Works in place.
#include <algorithm>
#include <climits>
#include <cmath>
#include <string>

#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class RotaryEmbeddingLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "RotaryEmbedding"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::RotaryEmbeddingParameter& p = param_.rotary_embedding_param();
    DLC_REQUIRE(std::isfinite(p.base()) && p.base() > 0.f,
                Where() << "rotary_embedding_param.base must be finite and > 0, got "
                        << p.base());
    DLC_REQUIRE(p.position_offset() <= static_cast<unsigned>(INT_MAX),
                Where() << "rotary_embedding_param.position_offset " << p.position_offset()
                        << " is too large (at most " << INT_MAX << ")");
    offset_ = static_cast<int>(p.position_offset());
  }

  // While decoding incrementally the rows start at the state's position.
  void SetDecodeState(const DecodeState& state) override {
    decode_position_ = state.incremental ? state.position : 0;
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const Blob& x = *bottom[0];
    DLC_REQUIRE(x.num_axes() >= 2,
                Where() << "needs an input of at least 2 axes (... x T x D), got "
                        << x.shape_string());
    const caffe::RotaryEmbeddingParameter& p = param_.rotary_embedding_param();
    seq_ = x.shape(-2);
    dim_ = x.shape(-1);
    rotary_dim_ = p.rotary_dim() == 0
                      ? dim_
                      : static_cast<int>(std::min<unsigned>(p.rotary_dim(), INT_MAX));
    DLC_REQUIRE(rotary_dim_ <= dim_ && rotary_dim_ % 2 == 0,
                Where() << "rotary_dim " << rotary_dim_
                        << (p.rotary_dim() == 0 ? " (0: all of the last axis)" : "")
                        << " must be even and at most the last axis, " << dim_
                        << ", of the input " << x.shape_string());
    DLC_REQUIRE(seq_ <= INT_MAX - offset_ - decode_position_,
                Where() << "position_offset " << offset_ << " plus " << seq_
                        << " positions pass the largest int");
    rows_ = x.count() / std::max(1, dim_);
    top[0]->ReshapeLike(x);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    Rotate(bottom[0]->data(), top[0]->data(), bottom[0] == top[0], 1.f);
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    Rotate(top[0]->diff(), bottom[0]->diff(), bottom[0] == top[0], -1.f);
  }

 private:
  // in -> out turned by sign * angle; in place, the features past rotary_dim
  // are already where they belong.
  void Rotate(cl_mem in, cl_mem out, bool in_place, float sign) {
    if (rows_ == 0 || dim_ == 0) return;
    const int half = rotary_dim_ / 2;
    const int items = half + (in_place ? 0 : dim_ - rotary_dim_);
    const int n = rows_ * items;  // at most the blob's count
    const caffe::RotaryEmbeddingParameter& p = param_.rotary_embedding_param();
    // exp2(i * coef) = base^(-2i / rotary_dim), coef rounded once from double.
    const float coef = static_cast<float>(-2.0 * std::log2(double(p.base())) / rotary_dim_);
    const std::string options = std::string("-DINTERLEAVED=") + (p.interleaved() ? "1" : "0");
    ctx_->Launch1D(ctx_->Kernel("rotary_embedding.cl", options, "rotary_embedding"), n, n,
                   items, half, dim_, rotary_dim_, seq_, offset_ + decode_position_, coef, sign, in, out);
  }

  int offset_ = 0, seq_ = 0, dim_ = 0, rotary_dim_ = 0, rows_ = 0;
  int decode_position_ = 0;
};

REGISTER_LAYER_CLASS(RotaryEmbedding);

}  // namespace dlcaffe
