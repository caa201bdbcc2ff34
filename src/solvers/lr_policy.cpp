// Caffe's learning-rate policies, as functions of the iteration.
#include <algorithm>
#include <cmath>

#include "dlcaffe/error.hpp"
#include "dlcaffe/solver.hpp"

#include <glog/logging.h>

namespace dlcaffe {

namespace {

// The policy's rate at `iter`, before any warm-up.
float PolicyRate(const caffe::SolverParameter& param, int iter, int* current_step,
                 bool log_steps) {
  const std::string& policy = param.lr_policy();
  const double base = param.base_lr(), gamma = param.gamma(), power = param.power();
  if (policy == "fixed") return static_cast<float>(base);
  if (policy == "step") {
    DLC_REQUIRE(param.stepsize() > 0, "lr_policy 'step' needs stepsize > 0");
    *current_step = iter / param.stepsize();
    return static_cast<float>(base * std::pow(gamma, *current_step));
  }
  if (policy == "exp") return static_cast<float>(base * std::pow(gamma, iter));
  if (policy == "inv") return static_cast<float>(base * std::pow(1.0 + gamma * iter, -power));
  if (policy == "multistep") {
    if (*current_step < param.stepvalue_size() && iter >= param.stepvalue(*current_step)) {
      ++*current_step;
      if (log_steps) LOG(INFO) << "MultiStep Status: Iteration " << iter << ", step = " << *current_step;
    }
    return static_cast<float>(base * std::pow(gamma, *current_step));
  }
  if (policy == "poly") {
    DLC_REQUIRE(param.max_iter() > 0, "lr_policy 'poly' needs max_iter > 0");
    return static_cast<float>(
        base * std::pow(1.0 - static_cast<double>(iter) / param.max_iter(), power));
  }
  if (policy == "sigmoid") {
    DLC_REQUIRE(param.stepsize() > 0, "lr_policy 'sigmoid' needs stepsize > 0");
    return static_cast<float>(
        base * (1.0 / (1.0 + std::exp(-gamma * (iter - double(param.stepsize()))))));
  }
  if (policy == "cosine") {
    DLC_REQUIRE(param.max_iter() > 0, "lr_policy 'cosine' needs max_iter > 0");
    const double progress = std::min(1.0, static_cast<double>(iter) / param.max_iter());
    const double min_lr = param.min_lr();
    return static_cast<float>(min_lr + (base - min_lr) * 0.5 * (1.0 + std::cos(M_PI * progress)));
  }
  DLC_FAIL("unknown lr_policy '"
           << policy << "' (known: fixed, step, exp, inv, multistep, poly, sigmoid, cosine)");
}

}  // namespace

float LearningRate(const caffe::SolverParameter& param, int iter, int* current_step,
                   bool log_steps) {
  const float rate = PolicyRate(param, iter, current_step, log_steps);
  DLC_REQUIRE(param.warmup_iter() >= 0, "warmup_iter must be >= 0, got " << param.warmup_iter());
  // A linear warm-up: large early steps of adaptive solvers (Adam's first
  // moments are noisy) would otherwise blow up a transformer's training.
  if (iter < param.warmup_iter())
    return static_cast<float>(rate * (static_cast<double>(iter) + 1.0) / param.warmup_iter());
  return rate;
}

}  // namespace dlcaffe
