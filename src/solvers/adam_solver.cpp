// Adam (Kingma & Ba; Caffe's "Adam"): beta1 = momentum, beta2 = momentum2,
// eps = delta. Two history sets in Caffe's order (so .solverstate files load in
// either): the first moments m, then the second moments v. Weight decay is
// Caffe's: added to the gradient before the moments (for decoupled decay use
// "AdamW").
#include <cmath>

#include "core/pointwise_kernel.hpp"
#include "solvers/sgd_solver.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

// Caffe's Adam step, m and v the first and second history sets:
//   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
//   update = corrected_rate * m / (sqrt(v) + eps)
// with corrected_rate = rate * sqrt(1 - beta2^t) / (1 - beta1^t), t = iter + 1
// (eps is added to sqrt(v), not to the bias-corrected sqrt(v_hat), as Caffe does).
const PointwiseKernel kAdamUpdate("adam_update",
                                  {InOut("w"), InOut("diff"), InOut("m"), InOut("v"),
                                   Scalar("grad_scale"), Scalar("decay"), IntScalar("l1"),
                                   Scalar("corrected_rate"), Scalar("beta1"), Scalar("beta2"),
                                   Scalar("eps")},
                                  std::string(kRegularizedGradient) +
                                      "m = beta1 * m + (1.f - beta1) * g;\n"
                                      "v = beta2 * v + (1.f - beta2) * g * g;\n"
                                      "diff = corrected_rate * m / (sqrt(v) + eps);\n"
                                      "w = w - diff;");
}  // namespace

class AdamSolver : public SGDSolver {
 public:
  AdamSolver(const caffe::SolverParameter& param, Context& ctx) : SGDSolver(param, ctx) {
    AddHistorySet();
  }
  const char* type() const override { return "Adam"; }

 protected:
  void UpdateParam(int id, float rate, float grad_scale, float decay, bool l1) override {
    const double beta1 = param_.momentum(), beta2 = param_.momentum2();
    const int t = iter_ + 1;
    const double correction = std::sqrt(1.0 - std::pow(beta2, t)) / (1.0 - std::pow(beta1, t));
    Blob* p = net_->learnable_params()[id];
    QueueUpdate(kAdamUpdate, {p->count(),
                              {p->data(), p->diff(), history(0, id).data(), history(1, id).data()},
                              {grad_scale, decay, l1, static_cast<float>(rate * correction),
                               param_.momentum(), param_.momentum2(), param_.delta()}});
  }
};

REGISTER_SOLVER_CLASS(Adam);

}  // namespace dlcaffe
