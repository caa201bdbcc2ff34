#include "core/execution_plan.hpp"

#include "core/channel_affine_fold.hpp"
#include "dlcaffe/net.hpp"
#include "core/pass_registry.hpp"

namespace dlcaffe {

ExecutionPlan::ExecutionPlan(const Net& net, const RunOptions& options) {
  const size_t n = net.layers().size();
  fusions_.assign(n, LayerFusion());
  affine_scale_.assign(n, nullptr);
  affine_shift_.assign(n, nullptr);
  skipped_.assign(n, false);
  masked_relu_.assign(n, -1);
  for (const auto& blob : net.blobs()) edges_.push_back(BlobEdge{blob->storage_type()});
  if (!options.fusion) return;
  for (const auto& p : PassRegistry<PlanPass>::Passes()) p.pass(net, &fusions_);
  for (size_t i = 0; i < n; ++i) {
    if (!fusions_[i].channel_affine) continue;
    affine_scale_[i] = std::make_shared<Blob>(net.context());
    affine_shift_[i] = std::make_shared<Blob>(net.context());
  }
}

std::vector<ForwardStep> ExecutionPlan::ForwardSteps(const Net& net, int start, int end,
                                                     bool separate) const {
  std::vector<ForwardStep> steps;
  for (int i = start; i <= end;) {
    const LayerFusion& f = fusions_[i];
    ForwardStep step;
    step.layer = i;
    step.absorbed = !separate && f.absorbed && i + f.absorbed <= end ? f.absorbed : 0;
    step.channel_affine = step.absorbed && f.channel_affine;
    const int last = i + step.absorbed;  // the last layer this forward stands for
    step.relu = !separate && last < end && (step.absorbed ? f.relu_after_absorbed : f.relu);
    // In place, the layer's top diff becomes its bottom diff, so masking it
    // as it is read leaves every diff as the ReLU's backward would.
    const auto& bottom = net.bottom_vecs()[i];
    step.relu_diff_mask = step.relu &&
                          (net.layers()[i]->EpilogueSupport() & LayerEpilogue::kReluDiffMask) &&
                          bottom.size() == 1 && bottom[0] == net.top_vecs()[i][0];
    step.next = last + 1 + (step.relu ? 1 : 0);
    steps.push_back(step);
    i = step.next;
  }
  return steps;
}

std::vector<ForwardStep> ExecutionPlan::ForwardPass(const Net& net, int start, int end,
                                                    bool separate) {
  std::vector<ForwardStep> steps = ForwardSteps(net, start, end, separate);
  for (const ForwardStep& step : steps) {
    const int last = step.layer + step.absorbed;
    skipped_[step.layer] = false;
    masked_relu_[step.layer] = step.relu_diff_mask ? last + 1 : -1;
    for (int j = step.layer + 1; j < step.next; ++j) {
      skipped_[j] = j <= last;  // a clamped ReLU still runs its backward
      masked_relu_[j] = -1;
    }
  }
  return steps;
}

std::vector<int> ExecutionPlan::StepOfLayers(const Net& net) const {
  const int n = static_cast<int>(net.layers().size());
  std::vector<int> step_of(n, 0);
  if (n == 0) return step_of;
  const std::vector<ForwardStep> steps = ForwardSteps(net, 0, n - 1, false);
  for (size_t s = 0; s < steps.size(); ++s)
    for (int layer = steps[s].layer; layer < steps[s].next; ++layer)
      step_of[layer] = static_cast<int>(s);
  return step_of;
}

LayerEpilogue ExecutionPlan::ForwardEpilogue(const Net& net, const ForwardStep& step) {
  LayerEpilogue epilogue;
  epilogue.relu = step.relu;
  if (!step.absorbed) return epilogue;
  const auto& layers = net.layers();
  const int i = step.layer;
  if (step.channel_affine) {
    ComputeChannelAffine(net.context(), *layers[i], *layers[i + 1],
                         step.absorbed > 1 ? layers[i + 2].get() : nullptr,
                         net.top_vecs()[i][0]->shape(1), affine_scale_[i].get(),
                         affine_shift_[i].get());
    epilogue.channel_scale = affine_scale_[i].get();
    epilogue.channel_shift = affine_shift_[i].get();
  } else {
    epilogue.scale = layers[i + 1].get();
  }
  return epilogue;
}

std::vector<BackwardStep> ExecutionPlan::BackwardPass(const Net& net, int start,
                                                      int end) const {
  const std::vector<bool>& need_backward = net.layer_need_backward();
  // A ReLU whose owner masks its diff is skipped where this pass runs both;
  // the owner masks only then.
  std::vector<bool> relu_masked(need_backward.size(), false);
  std::vector<bool> owner_masks(need_backward.size(), false);
  for (int owner = end; owner <= start; ++owner) {
    const int relu = masked_relu_[owner];
    if (relu >= 0 && relu <= start && need_backward[owner] && !skipped_[owner])
      relu_masked[relu] = owner_masks[owner] = true;
  }
  std::vector<BackwardStep> steps;
  for (int i = start; i >= end; --i) {
    BackwardStep step;
    step.layer = i;
    step.runs = need_backward[i] && !skipped_[i] && !relu_masked[i];
    step.relu_diff_mask = owner_masks[i];
    steps.push_back(step);
  }
  return steps;
}

void ExecutionPlan::TakeForwardRecord(const ExecutionPlan& previous) {
  if (previous.skipped_.size() != skipped_.size()) return;
  skipped_ = previous.skipped_;
  masked_relu_ = previous.masked_relu_;
}

}  // namespace dlcaffe
