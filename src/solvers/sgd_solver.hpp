// SGD and the base of Caffe's other gradient solvers (Nesterov, AdaGrad,
// RMSProp, AdaDelta, Adam derive from it, as in Caffe): per-parameter history
// blobs that are snapshotted and restored, and an update loop that hands each
// parameter its learning rate, gradient scale and weight decay.
#pragma once
#include <memory>
#include <vector>

#include "core/pointwise_kernel.hpp"
#include "dlcaffe/solver.hpp"

namespace dlcaffe {

// The first line of every update kernel's body (core/pointwise_kernel.hpp;
// w, diff, grad_scale, decay and l1 are its arguments): g, the gradient after
// scaling (clipping, iter_size) and weight decay (L1: decay * sign(w)).
inline constexpr char kRegularizedGradient[] =
    "const real g = diff * grad_scale + (l1 ? decay * sign(w) : decay * w);\n";

class SGDSolver : public Solver {
 public:
  SGDSolver(const caffe::SolverParameter& param, Context& ctx);
  const char* type() const override { return "SGD"; }

 protected:
  void ApplyUpdate() override;
  // Updates learnable parameter `id`: scale its gradient by `grad_scale`
  // (clipping, iter_size), add the weight decay (L1 or L2), and apply the
  // solver's rule with learning rate `rate`, through QueueUpdate.
  virtual void UpdateParam(int id, float rate, float grad_scale, float decay, bool l1);
  // Queues `kernel` over one parameter; ApplyUpdate launches the queue after
  // every parameter's UpdateParam, several small parameters per launch
  // (PointwiseKernel::LaunchMany).
  void QueueUpdate(const PointwiseKernel& kernel, pointwise::Segment segment);
  // Adds one more zero-filled history blob per learnable parameter (Caffe
  // keeps them all in one list: [h_0 .. h_n-1, then the next set ...]).
  void AddHistorySet();
  Blob& history(int set, int id) {
    return *history_[set * net_->learnable_params().size() + id];
  }

  void SnapshotSolverState(caffe::SolverState* state) override;
  void RestoreSolverState(const caffe::SolverState& state) override;

  std::vector<std::unique_ptr<Blob>> history_;

 private:
  // Per kernel, in first-queued order: its queued segments.
  std::vector<std::pair<const PointwiseKernel*, std::vector<pointwise::Segment>>> queued_;
};

}  // namespace dlcaffe
