// Nesterov's accelerated gradient (Caffe's "Nesterov"): SGD's momentum history,
// but each step looks ahead along it (see nesterov_update in solver_updates.cl).
#include "solvers/sgd_solver.hpp"

namespace dlcaffe {

class NesterovSolver : public SGDSolver {
 public:
  using SGDSolver::SGDSolver;
  const char* type() const override { return "Nesterov"; }

 protected:
  void UpdateParam(int id, float rate, float grad_scale, float decay, bool l1) override {
    Blob* p = net_->learnable_params()[id];
    const int n = p->count();
    ctx_->Launch1D(ctx_->Kernel("solver_updates.cl", "", "nesterov_update"), n, n, p->data(),
                   p->diff(), history(0, id).data(), grad_scale, decay, (int)l1, rate,
                   param_.momentum());
  }
};

REGISTER_SOLVER_CLASS(Nesterov);

}  // namespace dlcaffe
