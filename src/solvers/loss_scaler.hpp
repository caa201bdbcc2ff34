// Loss scaling for half-precision gradients, in NVIDIA Caffe's words
// (NetParameter.global_grad_scale, global_grad_scale_adaptive): backward
// starts from the loss gradient times the scale, so that small gradients
// stay above half precision's smallest values, and the update divides the
// weight gradients by it again.
//
// Static (a fixed global_grad_scale): every step is taken; a gradient that
// overflows fails training as any non-finite value does.
// Dynamic (global_grad_scale_adaptive), as PyTorch's GradScaler: a step
// whose gradients hold Inf or NaN is skipped and the scale multiplied by
// grad_scale_backoff_factor; after grad_scale_growth_interval good steps in
// a row it is multiplied by grad_scale_growth_factor.
#pragma once
#include <string>

#include "dlcaffe/caffe.pb.h"

namespace dlcaffe {

class LossScaler {
 public:
  // Reads and checks the net's settings (a bad one is an Error naming it).
  explicit LossScaler(const caffe::NetParameter& net);

  // Whether backward's gradients are scaled at all.
  bool active() const { return adaptive_ || scale_ != 1.f; }
  bool adaptive() const { return adaptive_; }
  float scale() const { return scale_; }
  // One line for the log when training starts ("" when inactive).
  std::string Describe() const;

  // After backward (dynamic scaling only): whether the step's gradients may
  // be applied, given whether they were all finite; moves the scale.
  bool AfterBackward(bool gradients_finite);
  // What the last AfterBackward changed, for the log ("" when nothing):
  // "gradient overflow (Inf or NaN) at loss scale 65536: update skipped,
  // loss scale now 32768".
  const std::string& last_change() const { return last_change_; }

  // The scale and the run of good steps, in and out of a .solverstate.
  void Save(caffe::SolverState* state) const;
  void Restore(const caffe::SolverState& state);

 private:
  bool adaptive_ = false;
  float scale_ = 1.f;
  float growth_factor_ = 2.f;
  float backoff_factor_ = 0.5f;
  int growth_interval_ = 2000;
  int good_steps_ = 0;
  std::string last_change_;
};

}  // namespace dlcaffe
