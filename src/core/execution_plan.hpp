// How a Net's layers run: between the Net (which layers, wired how) and the
// Layers (what each computes), the plan decides
//   - each layer's choices (layer_choices.hpp: its kernels' shape, the
//     convolution algorithms' switches, the math of its products), from the
//     net's RunOptions and the device, handed to the layer before it is set
//     up and again whenever Net::set_options changes them;
//   - which layer's kernels stand for which others (the folds) and in what
//     order the passes go;
//   - how each blob edge is stored (BlobEdge: the storage type the storage
//     pass gave it, passes/assign_storage_types.cpp; Convert layers convert).
// The folds are remade at setup, at each Net::Reshape and when the net's
// options change; Net::ForwardFromTo and BackwardFromTo are loops over the
// steps it hands out, and Net::Explain prints them.
//
// What a layer may stand for is found by plan passes (passes/plan_pass.hpp,
// registered in core/pass_registry.hpp), each a pattern in its own file over
// what layers declare they can be in an epilogue (Layer::RoleInEpilogue): a
// clamp applied by the layer before it, an inference BatchNorm (and Scale)
// folded into a convolution as a channel affine, a Scale absorbed by a
// training BatchNorm. A step then hands its layer a LayerEpilogue
// (layer_epilogue.hpp) saying what to apply.
//
// Partial passes (ForwardFromTo over a range) fold only what lies inside the
// range, and debug_info runs every layer separately (each its own top, as
// Caffe logs it). A backward pass skips what the last forward folded.
// Internal to the library.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dlcaffe/blob.hpp"
#include "dlcaffe/layer_epilogue.hpp"
#include "dlcaffe/run_options.hpp"
#include "dlcaffe/storage_type.hpp"

namespace dlcaffe {

class Net;

// What the fusion passes found that layer i's kernels may stand for.
struct LayerFusion {
  // Layer i + 1 is an in-place ReLU (negative_slope 0) on i's single top
  // that i can clamp for (used when i absorbs nothing in a pass).
  bool relu = false;
  // How many layers after i its passes stand for, and what they are: a
  // folded inference BatchNorm [+ Scale] as a channel affine, else a Scale
  // absorbed by a training BatchNorm.
  int absorbed = 0;
  bool channel_affine = false;
  // Layer i + absorbed + 1 is such a ReLU, which i also clamps for.
  bool relu_after_absorbed = false;
};

// How the values on one blob edge are stored: today a storage type
// (storage_type.hpp); a quantised type would add its scale and zero point.
struct BlobEdge {
  StorageType storage = StorageType::kFloat32;
  std::string Describe() const { return StorageTypeName(storage); }
};

// One layer's forward in a pass, with what it stands for there.
struct ForwardStep {
  int layer = 0;
  int absorbed = 0;             // layers after it folded in this pass
  bool channel_affine = false;  // those as a channel affine
  bool relu = false;            // it clamps for layer + absorbed + 1
  bool relu_diff_mask = false;  // ... and masks that ReLU's diff in backward
  // The layers after it whose forward it stands for (reshaped only):
  // layer + 1 .. next - 1.
  int next = 0;
};

// One layer's turn in a backward pass (every layer of the range, from the
// top down: Net::set_after_backward hears of each).
struct BackwardStep {
  int layer = 0;
  bool runs = false;            // its Backward runs (it needs one, and no
                                // other layer's stands for it)
  bool relu_diff_mask = false;  // it masks the diff of the ReLU it clamped for
};

// A fold the plan looks for (passes/plan_pass.hpp): marks in `fusions`
// what each layer of `net` may stand for.
using PlanPass = std::function<void(const Net& net, std::vector<LayerFusion>* fusions)>;

class ExecutionPlan {
 public:
  // Runs the plan passes over `net` unless options.fusion is off. The plan
  // keeps no reference to the net (a net rebuilt in place moves its plan):
  // the passes below take the net it was made for.
  ExecutionPlan(const Net& net, const RunOptions& options);

  // The steps of a forward pass over layers [start, end]: folds that reach
  // past `end` are left out, all of them where `separate`.
  std::vector<ForwardStep> ForwardSteps(const Net& net, int start, int end,
                                        bool separate) const;
  // The same, recording what the pass folds for the backward passes after
  // it (the Net runs what this returns).
  std::vector<ForwardStep> ForwardPass(const Net& net, int start, int end, bool separate);
  // For each layer, the index of the step of a whole forward pass that does
  // its work (the inference memory plan measures blob lifetimes in steps).
  std::vector<int> StepOfLayers(const Net& net) const;
  // The epilogue `step` hands its layer (a channel affine is computed from
  // the folded layers' parameters now, so it follows weights that change).
  LayerEpilogue ForwardEpilogue(const Net& net, const ForwardStep& step);
  // The turns of a backward pass from layer `start` down to `end`.
  std::vector<BackwardStep> BackwardPass(const Net& net, int start, int end) const;

  // What the passes found for layer i, and the shorthands the tests and the
  // gradient buckets read.
  const LayerFusion& fusion(int layer) const { return fusions_.at(layer); }
  // Whether layer i clamps the in-place ReLU right after it in passes that
  // run both.
  bool fuses_relu_after(int layer) const { return fusion(layer).relu; }
  // How many layers after i its passes stand for, in passes that run them
  // all (their forward and backward are then skipped).
  int absorbs_after(int layer) const { return fusion(layer).absorbed; }
  // Whether layer i also masked, in the last forward, the diff of the ReLU
  // it clamped for (in backward passes that run both, that ReLU's backward
  // is skipped).
  bool masks_relu_diff_after(int layer) const { return masked_relu_.at(layer) >= 0; }

  // How blob `blob` (by index) is stored as it passes from its producer to
  // its readers: the type the storage pass gave it (Convert layers sit
  // where a reader takes another).
  const BlobEdge& edge(int blob) const { return edges_.at(blob); }

  // Carries over what the last forward folded (a rebuild at the same
  // layers keeps the backward it allows).
  void TakeForwardRecord(const ExecutionPlan& previous);

 private:
  std::vector<LayerFusion> fusions_;
  std::vector<BlobEdge> edges_;
  // A folded channel affine's scale and shift, per layer that folds one.
  std::vector<std::shared_ptr<Blob>> affine_scale_, affine_shift_;
  // The last forward pass over each layer: skipped_[j], its forward was
  // stood for by an earlier layer's (so is its backward); masked_relu_[i],
  // the ReLU whose diff layer i masks in backward, else -1.
  std::vector<bool> skipped_;
  std::vector<int> masked_relu_;
};

}  // namespace dlcaffe
