// Caffe's learning-rate policies, as functions of the iteration.
#include <cmath>

#include "dlcaffe/error.hpp"
#include "dlcaffe/solver.hpp"

#include <glog/logging.h>

namespace dlcaffe {

float LearningRate(const caffe::SolverParameter& param, int iter, int* current_step,
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
  DLC_FAIL("unknown lr_policy '" << policy
                                 << "' (known: fixed, step, exp, inv, multistep, poly, sigmoid)");
}

}  // namespace dlcaffe
