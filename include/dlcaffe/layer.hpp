// Layer base class. SetUp = check bottom/top counts -> LayerSetUp -> Reshape;
// then Forward(bottom, top) and Backward(top, propagate_down, bottom), both as
// OpenCL kernels enqueued on the context's queue (no host synchronisation).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "dlcaffe/caffe.pb.h"
#include "dlcaffe/blob.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/decode_state.hpp"
#include "dlcaffe/error.hpp"
#include "dlcaffe/layer_choices.hpp"
#include "dlcaffe/layer_epilogue.hpp"

namespace dlcaffe {

class Layer {
 public:
  Layer(const caffe::LayerParameter& param, Context& ctx);
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  // Checks blob counts, runs LayerSetUp and Reshape, and sets the loss weights
  // (a loss layer's top diff holds its loss weight, as in Caffe).
  void SetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top);

  // Layer-specific one-time setup: read parameters, create learnable blobs.
  virtual void LayerSetUp(const std::vector<Blob*>& bottom,
                          const std::vector<Blob*>& top) {}
  // Shapes the tops (and internal buffers) from the bottoms; called whenever
  // the bottom shapes may have changed.
  virtual void Reshape(const std::vector<Blob*>& bottom,
                       const std::vector<Blob*>& top) = 0;

  virtual void Forward(const std::vector<Blob*>& bottom,
                       const std::vector<Blob*>& top) = 0;
  // Writes bottom diffs for the bottoms with propagate_down set, and
  // *accumulates* into the parameter diffs (the solver clears them).
  virtual void Backward(const std::vector<Blob*>& top,
                        const std::vector<bool>& propagate_down,
                        const std::vector<Blob*>& bottom) = 0;
  // Throws the user error (a label or index out of range) that an earlier
  // Forward found on the device, once the device's record of it has come
  // back; Forward calls it first, and Net::Forward after reading the loss, so
  // that a single pass (dlcaffe test --iterations=1) reports it too.
  virtual void ThrowLateErrors() {}
  // Incremental decoding (decode_state.hpp), set by Net::SetDecodeState
  // before the next pass. Only layers that see other positions than a row's
  // own, or absolute positions, act on it; a layer that mixes positions
  // without following it says so in DecodesIncrementally.
  virtual void SetDecodeState(const DecodeState& state) {}
  // False for layers whose output at a position depends on other positions
  // and that keep no cache of them: a net holding one cannot decode
  // incrementally (its output would silently differ).
  virtual bool DecodesIncrementally() const { return true; }
  // A net rebuilt for new input shapes while decoding (an imported model
  // follows the token input's length): the layer of the same name in the
  // net as it was hands over what it keeps of the earlier positions (the
  // key/value cache). Called after SetDecodeState.
  virtual void TakeDecodeCache(Layer& earlier) {}

  virtual const char* type() const = 0;
  const std::string& name() const { return param_.name(); }
  const caffe::LayerParameter& layer_param() const { return param_; }
  Context& context() const { return *ctx_; }

  // Learnable parameters (weights, biases), in Caffe's order and layout.
  std::vector<std::shared_ptr<Blob>>& blobs() { return blobs_; }
  const std::vector<std::shared_ptr<Blob>>& blobs() const { return blobs_; }

  float loss(int top_index) const {
    return top_index < (int)loss_.size() ? loss_[top_index] : 0.f;
  }
  void set_loss(int top_index, float value);

  // Blob count constraints, as in Caffe (-1: no constraint).
  virtual int ExactNumBottomBlobs() const { return -1; }
  virtual int MinBottomBlobs() const { return -1; }
  virtual int MaxBottomBlobs() const { return -1; }
  virtual int ExactNumTopBlobs() const { return -1; }
  virtual int MinTopBlobs() const { return -1; }
  virtual int MaxTopBlobs() const { return -1; }
  virtual bool EqualNumBottomTopBlobs() const { return false; }
  // Loss layers get an implicit loss_weight of 1 on their first top.
  virtual bool AutoTopBlobs() const { return false; }
  virtual bool AllowForceBackward(int bottom_index) const { return true; }
  // Whether Forward sets the tops' shapes from the data (NonZero, TopK with
  // a run-time k): Reshape gives them a placeholder, and the Net runs such a
  // layer even where that is empty (it skips other layers whose every top is).
  virtual bool SizesTopsInForward() const { return false; }

  // The parts of an epilogue (layer_epilogue.hpp) this layer's kernels can
  // apply, as LayerEpilogue::Part bits; the execution plan folds only those.
  virtual unsigned EpilogueSupport() const { return 0; }
  // What this layer can be in the epilogue of the layer before it, working
  // in place on `top` (layer_epilogue.hpp): a clamp, a folded BatchNorm, a
  // channel scale; the plan's passes fold it only then.
  virtual EpilogueRole RoleInEpilogue(const Blob& top) const { return EpilogueRole::kNone; }
  // Whether this layer's kernels read its bottoms and write its tops (data
  // and diff) in `type` (storage_type.hpp; float32 always). A net in 16-bit
  // storage keeps a layer that cannot in float32, converting its bottoms
  // (passes/assign_storage_types.cpp).
  virtual bool SupportsStorage(StorageType type) const { return type == StorageType::kFloat32; }
  // Bottoms and tops that stay float32 when the layer stores another type
  // (a loss's labels, which 16 bits cannot all hold, and its loss).
  virtual bool KeepsBottomInFloat(int /*index*/) const { return false; }
  virtual bool KeepsTopInFloat(int /*index*/) const { return false; }
  // What the execution plan decided for this layer (layer_choices.hpp):
  // the Net sets them before SetUp and again when it re-decides them
  // (Net::set_options), then reshapes the layer, whose Reshape follows them.
  // A layer made outside a Net has its context's options' choices.
  void set_choices(const LayerChoices& choices) { choices_ = choices; }
  const LayerChoices& choices() const { return choices_; }
  // What the layer's kernels run at its current shapes where it has more
  // than one way (a convolution's algorithm), for --explain; "" otherwise.
  virtual std::string DescribeAlgorithm() const { return ""; }

  // What the next passes apply for the layers folded into this one (an
  // empty epilogue: none). The Net sets it; tests may too.
  void set_epilogue(const LayerEpilogue& epilogue) { epilogue_ = epilogue; }
  const LayerEpilogue& epilogue() const { return epilogue_; }

  bool param_propagate_down(int param_id) const {
    return param_id < (int)param_propagate_down_.size() &&
           param_propagate_down_[param_id];
  }
  void set_param_propagate_down(int param_id, bool value);

 protected:
  LayerEpilogue epilogue_;
  LayerChoices choices_;
  // "layer 'conv1' (Convolution): " — the prefix of every error a layer throws.
  std::string Where() const;

  caffe::LayerParameter param_;
  Context* ctx_;
  std::vector<std::shared_ptr<Blob>> blobs_;
  std::vector<bool> param_propagate_down_;
  std::vector<float> loss_;

 private:
  void CheckBlobCounts(const std::vector<Blob*>& bottom,
                       const std::vector<Blob*>& top) const;
  void SetLossWeights(const std::vector<Blob*>& top);
};

// Base for loss layers: one loss_weight of 1 on top[0] by default, and labels
// never receive gradients.
class LossLayer : public Layer {
 public:
  using Layer::Layer;
  void LayerSetUp(const std::vector<Blob*>& bottom,
                  const std::vector<Blob*>& top) override;
  void Reshape(const std::vector<Blob*>& bottom,
               const std::vector<Blob*>& top) override;
  int ExactNumBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AutoTopBlobs() const override { return true; }
  bool AllowForceBackward(int bottom_index) const override {
    return bottom_index != 1;
  }
};

}  // namespace dlcaffe
