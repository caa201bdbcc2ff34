#include "solvers/loss_scaler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "dlcaffe/error.hpp"

namespace dlcaffe {

namespace {
// GradScaler's first scale, where global_grad_scale is left at 1.
constexpr float kAdaptiveInitialScale = 65536.f;
}  // namespace

LossScaler::LossScaler(const caffe::NetParameter& net)
    : adaptive_(net.global_grad_scale_adaptive()),
      scale_(net.global_grad_scale()),
      growth_factor_(net.grad_scale_growth_factor()),
      backoff_factor_(net.grad_scale_backoff_factor()),
      growth_interval_(net.grad_scale_growth_interval()) {
  DLC_REQUIRE(std::isfinite(scale_) && scale_ > 0.f,
              "net '" << net.name() << "': global_grad_scale must be a positive finite number, got "
                      << scale_);
  if (!adaptive_) return;
  if (scale_ == 1.f) scale_ = kAdaptiveInitialScale;
  DLC_REQUIRE(std::isfinite(growth_factor_) && growth_factor_ > 1.f,
              "net '" << net.name() << "': grad_scale_growth_factor must be above 1, got "
                      << growth_factor_);
  DLC_REQUIRE(backoff_factor_ > 0.f && backoff_factor_ < 1.f,
              "net '" << net.name() << "': grad_scale_backoff_factor must lie in (0, 1), got "
                      << backoff_factor_);
  DLC_REQUIRE(growth_interval_ >= 1, "net '" << net.name()
                                             << "': grad_scale_growth_interval must be 1 or more, got "
                                             << growth_interval_);
}

std::string LossScaler::Describe() const {
  if (!active()) return "";
  std::ostringstream s;
  if (adaptive_)
    s << "Loss scaling: dynamic, starting at " << scale_ << " (times " << backoff_factor_
      << " on a gradient overflow, which skips the update; times " << growth_factor_
      << " after " << growth_interval_ << " good steps)";
  else
    s << "Loss scaling: static, " << scale_;
  return s.str();
}

bool LossScaler::AfterBackward(bool gradients_finite) {
  last_change_.clear();
  if (!adaptive_) return true;
  std::ostringstream s;
  if (!gradients_finite) {
    // The smallest positive float still scales: a net whose gradients are
    // Inf at any scale fails on its loss or weights instead.
    const float lowered = std::max(scale_ * backoff_factor_, std::numeric_limits<float>::min());
    s << "gradient overflow (Inf or NaN) at loss scale " << scale_
      << ": update skipped, loss scale now " << lowered;
    scale_ = lowered;
    good_steps_ = 0;
    last_change_ = s.str();
    return false;
  }
  if (++good_steps_ >= growth_interval_) {
    const float raised = scale_ * growth_factor_;
    if (std::isfinite(raised)) {
      s << good_steps_ << " steps without overflow: loss scale now " << raised;
      scale_ = raised;
      last_change_ = s.str();
    }
    good_steps_ = 0;
  }
  return true;
}

void LossScaler::Save(caffe::SolverState* state) const {
  if (!adaptive_) return;
  state->set_loss_scale(scale_);
  state->set_loss_scale_good_steps(good_steps_);
}

void LossScaler::Restore(const caffe::SolverState& state) {
  if (!adaptive_ || !state.has_loss_scale()) return;
  DLC_REQUIRE(std::isfinite(state.loss_scale()) && state.loss_scale() > 0.f,
              "the solver state's loss_scale must be a positive finite number, got "
                  << state.loss_scale());
  DLC_REQUIRE(state.loss_scale_good_steps() >= 0,
              "the solver state's loss_scale_good_steps must not be negative, got "
                  << state.loss_scale_good_steps());
  scale_ = state.loss_scale();
  good_steps_ = state.loss_scale_good_steps();
}

}  // namespace dlcaffe
