// AdaDelta (Zeiler; Caffe's "AdaDelta"): steps scaled by the ratio of running
// RMS of past updates to running RMS of gradients, `momentum` being the decay
// of both. Two history sets in Caffe's order (so .solverstate files load in
// either): the squared gradients, then the squared updates.
#include "solvers/sgd_solver.hpp"

namespace dlcaffe {

class AdaDeltaSolver : public SGDSolver {
 public:
  AdaDeltaSolver(const caffe::SolverParameter& param, Context& ctx) : SGDSolver(param, ctx) {
    AddHistorySet();
  }
  const char* type() const override { return "AdaDelta"; }

 protected:
  void UpdateParam(int id, float rate, float grad_scale, float decay, bool l1) override {
    Blob* p = net_->learnable_params()[id];
    const int n = p->count();
    ctx_->Launch1D(ctx_->Kernel("solver_updates.cl", "", "adadelta_update"), n, n, p->data(),
                   p->diff(), history(0, id).data(), history(1, id).data(), grad_scale, decay,
                   (int)l1, rate, param_.momentum(), param_.delta());
  }
};

REGISTER_SOLVER_CLASS(AdaDelta);

}  // namespace dlcaffe
