// AdamW (a dlcaffe extension; Loshchilov & Hutter, "Decoupled Weight Decay
// Regularization"), written to match PyTorch's torch.optim.AdamW step for step:
//   g  = diff * grad_scale                (clipping, iter_size; no decay term)
//   m  = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
//   w -= lr * wd * w + lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// with t = iter + 1, lr = the policy's rate * lr_mult, wd = weight_decay *
// decay_mult, beta1 = momentum, beta2 = momentum2, eps = delta. Unlike Caffe's
// Adam, eps is added to the bias-corrected sqrt(v_hat), as PyTorch does.
// regularization_type "L1" decays by lr * wd * sign(w) instead.
// History: m then v, the same layout as "Adam".
#include <cmath>

#include "core/pointwise_kernel.hpp"
#include "solvers/sgd_solver.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

// Step for step as PyTorch's torch.optim.AdamW: the gradient carries no decay
// term; instead
//   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
//   update = rate * decay * w                                  (L2; L1: sign(w))
//          + step_size * m / (sqrt(v) / sqrt_bias2 + eps)
// with step_size = rate / (1 - beta1^t), sqrt_bias2 = sqrt(1 - beta2^t); the
// decay uses w before the step, as PyTorch's param.mul_(1 - lr * wd) does.
const PointwiseKernel kAdamWUpdate(
    "adamw_update",
    {InOut("w"), InOut("diff"), InOut("m"), InOut("v"), Scalar("grad_scale"), Scalar("decay"),
     IntScalar("l1"), Scalar("rate"), Scalar("step_size"), Scalar("sqrt_bias2"),
     Scalar("beta1"), Scalar("beta2"), Scalar("eps")},
    "const real g = diff * grad_scale;\n"
    "m = beta1 * m + (1.f - beta1) * g;\n"
    "v = beta2 * v + (1.f - beta2) * g * g;\n"
    "diff = rate * decay * (l1 ? sign(w) : w) + step_size * m / (sqrt(v) / sqrt_bias2 + eps);\n"
    "w = w - diff;");
}  // namespace

class AdamWSolver : public SGDSolver {
 public:
  AdamWSolver(const caffe::SolverParameter& param, Context& ctx) : SGDSolver(param, ctx) {
    AddHistorySet();
  }
  const char* type() const override { return "AdamW"; }

 protected:
  void UpdateParam(int id, float rate, float grad_scale, float decay, bool l1) override {
    const double beta1 = param_.momentum(), beta2 = param_.momentum2();
    const int t = iter_ + 1;
    const double step_size = rate / (1.0 - std::pow(beta1, t));
    const double sqrt_bias2 = std::sqrt(1.0 - std::pow(beta2, t));
    Blob* p = net_->learnable_params()[id];
    QueueUpdate(kAdamWUpdate, {p->count(),
                               {p->data(), p->diff(), history(0, id).data(), history(1, id).data()},
                               {grad_scale, decay, l1, rate, static_cast<float>(step_size),
                                static_cast<float>(sqrt_bias2), param_.momentum(),
                                param_.momentum2(), param_.delta()}});
  }
};

REGISTER_SOLVER_CLASS(AdamW);

}  // namespace dlcaffe
