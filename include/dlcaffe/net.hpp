// A Net: layers wired by blob names, built from a NetParameter, with Caffe's
// semantics: phase/level/stage include/exclude rules, in-place layers,
// fan-out through inserted Split layers (gradient accumulation), loss
// weights, parameters shared by name, lr_mult/decay_mult.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dlcaffe/caffe.pb.h"
#include "dlcaffe/blob.hpp"
#include "dlcaffe/caffe_legacy_upgrade.hpp"
#include "dlcaffe/decode_state.hpp"  // UpgradeNetAsNeeded (V0/V1 nets, inputs)
#include "dlcaffe/layer.hpp"

namespace dlcaffe {

class ExecutionPlan;
class InferenceMemoryPlan;
class TrainingMemoryPlan;

// Bytes of a net's activation blobs, data and diffs (4 per float of their
// current shapes; the buffer pool rounds allocations up by at most 1/16),
// without and with the inference memory plan.
struct ActivationMemory {
  size_t bytes_without_plan = 0;
  size_t bytes_with_plan = 0;
};

class Net {
 public:
  // `param` is used as given (its state decides which layers are kept).
  Net(const caffe::NetParameter& param, Context& ctx);
  // Reads a prototxt and sets the state to phase/level/stages. An .onnx
  // model imported for TRAIN runs backward from its outputs' diffs (it has
  // no loss layer): force_backward is set.
  Net(const std::string& prototxt_path, caffe::Phase phase, Context& ctx,
      int level = 0, const std::vector<std::string>& stages = {});
  ~Net();

  // Forward through all layers; returns the total weighted loss (this reads
  // the loss blobs, so it waits for the device).
  float Forward();
  // Forward without reading any loss back (no host synchronisation).
  void ForwardNoLoss() { ForwardFromTo(0, static_cast<int>(layers_.size()) - 1); }
  void ForwardFromTo(int start, int end);
  void Backward();
  void BackwardFromTo(int start, int end);
  // Called after each layer's turn in every backward pass, from the top layer
  // down, with the layer's index (also for layers whose backward is skipped):
  // data-parallel training starts sending a parameter's gradient once the
  // pass has enqueued every layer that writes it. Empty: none.
  void set_after_backward(std::function<void(int layer_id)> callback) {
    after_backward_ = std::move(callback);
  }
  float ForwardBackward() {
    const float loss = Forward();
    Backward();
    return loss;
  }
  // Loss scaling (solvers/loss_scaler.hpp): backward starts from each loss
  // top's weight times `scale` (1: Caffe's plain weights). Set before each
  // backward: a net that rebuilds for new input shapes writes plain weights.
  void SetLossGradientScale(float scale);
  // Reshapes every layer from the current input shapes (and redoes the memory
  // plan, if any, for the new shapes).
  void Reshape();

  // For nets whose description depends on the input shapes (an ONNX model
  // with dynamic dimensions: its shape arithmetic is folded at import), a
  // function giving the description for input shapes (by input blob name).
  // From then on Forward and Reshape rebuild the net when an input blob's
  // shape differs from the last shapes resolved: the input and other blobs
  // of the same names stay the same objects (with their values), trained
  // parameters keep their storage (so solvers, test nets sharing them and
  // snapshots carry on), and fixed blobs take the new description's values
  // where those changed. It throws naming the parameter where a learnable
  // one would change shape or vanish. The .onnx constructor sets one for
  // models with dynamic input dimensions.
  // `decodes_positions`: the descriptions compute what depends on absolute
  // positions at run time (an .onnx imported with incremental_decoding), so
  // that the net may decode incrementally, each rebuild taking over the
  // key/value caches (Layer::TakeDecodeCache).
  using InputShapes = std::map<std::string, std::vector<int>>;
  using InputShapeResolver = std::function<caffe::NetParameter(const InputShapes&)>;
  void set_input_shape_resolver(InputShapeResolver resolver, bool decodes_positions = false);
  bool follows_input_shapes() const { return static_cast<bool>(input_shape_resolver_); }

  // The inference memory plan, opt-in, for nets that never run backward (it
  // throws naming the first layer that needs backward): activation blobs whose
  // lifetimes in the forward order do not overlap share device storage, and
  // activation diffs are released (Blob::diff allocates one again if asked).
  // Net inputs, outputs, loss tops and the blobs named in `keep` keep storage
  // of their own. Afterwards only those hold their values after Forward:
  // reading another activation blob's data to the host throws. Whole passes
  // only: ForwardFromTo over part of the net, Backward and BackwardFromTo
  // throw (a later layer may have overwritten what they read). Shape changes
  // redo the plan (Reshape, or a Forward after an input was reshaped). Logs
  // and returns the activation bytes without and with it; calling it again
  // replaces the keep list.
  ActivationMemory PlanInferenceMemory(const std::vector<std::string>& keep = {});
  bool has_memory_plan() const { return memory_plan_ != nullptr; }
  // The numbers of the last (re)plan.
  const ActivationMemory& activation_memory() const { return activation_memory_; }

  // The training memory plan (a solver's train net has it unless the run
  // option share_diffs is off): activation diffs whose lifetimes in the
  // passes do not overlap share device storage, and diffs no backward uses
  // are released. Net inputs, outputs, loss tops and the blobs named in
  // `keep` keep diffs of their own; reading another activation blob's diff
  // to the host outside a backward pass throws (data and parameters are
  // untouched). Shape changes redo the plan. Logs and returns the diff
  // bytes without and with it.
  ActivationMemory PlanTrainingMemory(const std::vector<std::string>& keep = {});
  bool has_training_memory_plan() const { return training_plan_ != nullptr; }
  // The numbers of its last (re)plan.
  const ActivationMemory& diff_memory() const { return diff_memory_; }

  // Incremental decoding (decode_state.hpp; `dlcaffe generate`): sets the
  // state on every layer for the next passes. Throws naming the first layer
  // that cannot follow it (DecodesIncrementally), or when the net follows
  // its inputs' shapes with descriptions that fold positions from 0 (see
  // set_input_shape_resolver). Passes with it on run forward only.
  void SetDecodeState(const DecodeState& state);
  const DecodeState& decode_state() const { return decode_state_; }
  // Caffe's debug_info: after each layer, log the mean absolute value of its
  // tops and parameters (forward) or of the diffs it wrote (backward). Reads
  // to the host, so only for debugging.
  void set_debug_info(bool value) { debug_info_ = value; }
  // How the layers run (core/execution_plan.hpp): which layer's kernels
  // stand for which others (fusion), made at setup, at each Reshape and by
  // set_options.
  const ExecutionPlan& plan() const;
  // The run options the plan follows: the context's when the net was made.
  // set_options re-decides what they govern: every layer's choices (its
  // kernels' shape and algorithms, layer_choices.hpp), which reshapes the
  // net, and the plan's fusions.
  const RunOptions& options() const { return options_; }
  void set_options(const RunOptions& options);
  // What a forward pass runs, a line per step of the plan: the layer, what
  // it stands for (folded layers, a clamped ReLU), its choices and
  // algorithm, and how its bottoms and tops are stored (--explain prints it).
  std::string Explain() const;
  // Explain, and under each step the GEMM products it ran in one forward
  // pass (run here, on the inputs as they are): their sizes, the form they
  // ran in (float, or the matrix engine's) and their configuration.
  std::string ExplainWithProducts();
  bool debug_info() const { return debug_info_; }
  // The "[Update]" line for parameter `param_id` (after a solver's update).
  void UpdateDebugInfo(int param_id) const;
  // Sets the diffs of all learnable parameters to zero.
  void ClearParamDiffs();
  // Sum of the weighted losses currently in the loss blobs (synchronises).
  float CurrentLoss() const;

  // Weights: shares data with another net's identically named layers (test
  // nets use the train net's weights without copies).
  void ShareTrainedLayersWith(const Net& other);
  // Points every parameter shared by name at its owner's storage again (after
  // an owner's storage was replaced, e.g. by ShareTrainedLayersWith).
  void ShareWeights();
  // Weights in Caffe's legacy V0/V1 `layers` format are upgraded first.
  void CopyTrainedLayersFrom(const caffe::NetParameter& param);
  // A binary .caffemodel (or a text NetParameter with blobs), legacy or not,
  // or Caffe's HDF5 weights (net_hdf5.hpp), told by the file's signature.
  void CopyTrainedLayersFrom(const std::string& path);
  void ToProto(caffe::NetParameter* param, bool write_diff = false) const;

  // Which layers of `param` are kept for its state (phase, level, stages).
  static void FilterNet(const caffe::NetParameter& param,
                        caffe::NetParameter* filtered);
  static bool StateMeetsRule(const caffe::NetState& state,
                             const caffe::NetStateRule& rule,
                             const std::string& layer_name);

  const std::string& name() const { return name_; }
  caffe::Phase phase() const { return phase_; }
  Context& context() const { return *ctx_; }
  const std::vector<std::string>& layer_names() const { return layer_names_; }
  const std::vector<std::string>& blob_names() const { return blob_names_; }
  const std::vector<std::shared_ptr<Blob>>& blobs() const { return blobs_; }
  const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }
  const std::vector<std::vector<Blob*>>& bottom_vecs() const { return bottom_vecs_; }
  const std::vector<std::vector<Blob*>>& top_vecs() const { return top_vecs_; }
  const std::vector<std::vector<int>>& top_ids() const { return top_id_vecs_; }
  const std::vector<std::vector<int>>& bottom_ids() const { return bottom_id_vecs_; }
  const std::vector<bool>& layer_need_backward() const { return layer_need_backward_; }
  const std::vector<std::vector<bool>>& bottom_need_backward() const {
    return bottom_need_backward_;
  }
  const std::vector<float>& blob_loss_weights() const { return blob_loss_weights_; }
  // Every parameter blob, and those that own their storage (the learnable
  // ones, which the solver updates), with their multipliers.
  const std::vector<std::shared_ptr<Blob>>& params() const { return params_; }
  const std::vector<Blob*>& learnable_params() const { return learnable_params_; }
  const std::vector<float>& params_lr() const { return params_lr_; }
  const std::vector<float>& params_weight_decay() const { return params_weight_decay_; }
  const std::vector<int>& param_owners() const { return param_owners_; }
  const std::vector<std::string>& param_display_names() const {
    return param_display_names_;
  }
  const std::vector<int>& learnable_param_ids() const { return learnable_param_ids_; }
  const std::vector<Blob*>& input_blobs() const { return net_input_blobs_; }
  const std::vector<Blob*>& output_blobs() const { return net_output_blobs_; }
  const std::vector<int>& output_blob_indices() const { return net_output_blob_indices_; }
  bool has_blob(const std::string& name) const { return blob_names_index_.count(name) > 0; }
  std::shared_ptr<Blob> blob_by_name(const std::string& name) const;
  bool has_layer(const std::string& name) const { return layer_names_index_.count(name) > 0; }
  Layer* layer_by_name(const std::string& name) const;

 private:
  using BlobsByName = std::map<std::string, std::shared_ptr<Blob>>;
  // A rebuild (FollowInputShapes): Init reusing `reused` blobs by name.
  Net(const caffe::NetParameter& param, Context& ctx, const BlobsByName& reused,
      const RunOptions& options);
  Net& operator=(Net&& other) noexcept;
  void Init(const caffe::NetParameter& param);
  // Rebuilds the net when the inputs' shapes differ from those last resolved.
  void FollowInputShapes();
  void AppendTop(const caffe::LayerParameter& layer_param, int layer_id, int top_id,
                 std::map<std::string, int>* available_blobs);
  int AppendBottom(const caffe::LayerParameter& layer_param, int layer_id,
                   int bottom_id, std::map<std::string, int>* available_blobs);
  void AppendParam(const caffe::LayerParameter& layer_param, int layer_id, int param_id);
  void ForwardDebugInfo(int layer_id) const;
  // (Re)makes the execution plan for the current shapes and options.
  void MakePlan();
  void BackwardDebugInfo(int layer_id) const;

  Context* ctx_;
  RunOptions options_;
  std::string name_;
  caffe::Phase phase_ = caffe::TRAIN;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<std::string> layer_names_;
  std::map<std::string, int> layer_names_index_;
  std::vector<bool> layer_need_backward_;
  std::vector<std::shared_ptr<Blob>> blobs_;
  std::vector<std::string> blob_names_;
  std::map<std::string, int> blob_names_index_;
  std::vector<bool> blob_need_backward_;
  std::vector<std::vector<Blob*>> bottom_vecs_;
  std::vector<std::vector<int>> bottom_id_vecs_;
  std::vector<std::vector<bool>> bottom_need_backward_;
  std::vector<std::vector<Blob*>> top_vecs_;
  std::vector<std::vector<int>> top_id_vecs_;
  std::vector<float> blob_loss_weights_;
  std::vector<std::vector<int>> param_id_vecs_;
  std::vector<int> param_owners_;
  std::vector<std::string> param_display_names_;
  std::vector<std::pair<int, int>> param_layer_indices_;
  std::map<std::string, int> param_names_index_;
  std::vector<int> net_input_blob_indices_;
  std::vector<int> net_output_blob_indices_;
  std::vector<Blob*> net_input_blobs_;
  std::vector<Blob*> net_output_blobs_;
  std::vector<std::shared_ptr<Blob>> params_;
  std::vector<Blob*> learnable_params_;
  std::vector<int> learnable_param_ids_;
  std::vector<float> params_lr_;
  std::vector<bool> has_params_lr_;
  std::vector<float> params_weight_decay_;
  std::vector<bool> has_params_decay_;
  bool debug_info_ = false;
  // While ExplainWithProducts runs its pass: each layer's products.
  std::vector<std::vector<std::string>>* step_products_ = nullptr;
  std::string ExplainSteps(const std::vector<std::vector<std::string>>* products) const;
  DecodeState decode_state_;
  std::function<void(int)> after_backward_;
  std::unique_ptr<ExecutionPlan> plan_;
  std::unique_ptr<InferenceMemoryPlan> memory_plan_;
  ActivationMemory activation_memory_;
  std::unique_ptr<TrainingMemoryPlan> training_plan_;
  ActivationMemory diff_memory_;
  // The description without its layers (state, force_backward, ...), so
  // that a rebuild keeps them.
  caffe::NetParameter settings_;
  // Input shape following (set_input_shape_resolver): the resolver, the
  // shapes it last resolved, and a hash of each layer blob's values in that
  // description (a fixed blob whose values stay is kept, e.g. trained
  // BatchNorm statistics).
  InputShapeResolver input_shape_resolver_;
  bool resolver_decodes_positions_ = false;
  std::vector<std::vector<int>> resolved_input_shapes_;  // of input_blobs(), in order
  std::map<std::string, std::vector<size_t>> resolved_blob_hashes_;
  const BlobsByName* reused_blobs_ = nullptr;  // during a rebuild's Init only
};

}  // namespace dlcaffe
