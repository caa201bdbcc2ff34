// Adam (Kingma & Ba; Caffe's "Adam"): beta1 = momentum, beta2 = momentum2,
// eps = delta. Two history sets in Caffe's order (so .solverstate files load in
// either): the first moments m, then the second moments v. Weight decay is
// Caffe's: added to the gradient before the moments (for decoupled decay use
// "AdamW").
#include <cmath>

#include "solvers/sgd_solver.hpp"

namespace dlcaffe {

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
    const int n = p->count();
    ctx_->Launch1D(ctx_->Kernel("solver_updates.cl", "", "adam_update"), n, n, p->data(),
                   p->diff(), history(0, id).data(), history(1, id).data(), grad_scale, decay,
                   (int)l1, static_cast<float>(rate * correction), param_.momentum(),
                   param_.momentum2(), param_.delta());
  }
};

REGISTER_SOLVER_CLASS(Adam);

}  // namespace dlcaffe
