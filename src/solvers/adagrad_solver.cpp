// AdaGrad (Duchi et al.; Caffe's "AdaGrad"): each weight's step is divided by
// the root of its accumulated squared gradients. One history set: that sum.
#include "solvers/sgd_solver.hpp"

namespace dlcaffe {

class AdaGradSolver : public SGDSolver {
 public:
  AdaGradSolver(const caffe::SolverParameter& param, Context& ctx) : SGDSolver(param, ctx) {
    DLC_REQUIRE(param_.momentum() == 0.f,
                "momentum cannot be used with AdaGrad (the solver sets momentum: "
                    << param_.momentum() << "; remove it or set it to 0)");
  }
  const char* type() const override { return "AdaGrad"; }

 protected:
  void UpdateParam(int id, float rate, float grad_scale, float decay, bool l1) override {
    Blob* p = net_->learnable_params()[id];
    const int n = p->count();
    ctx_->Launch1D(ctx_->Kernel("solver_updates.cl", "", "adagrad_update"), n, n, p->data(),
                   p->diff(), history(0, id).data(), grad_scale, decay, (int)l1, rate,
                   param_.delta());
  }
};

REGISTER_SOLVER_CLASS(AdaGrad);

}  // namespace dlcaffe
