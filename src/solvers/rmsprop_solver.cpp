// RMSProp (Tieleman & Hinton; Caffe's "RMSProp"): each weight's step is divided
// by the root of a running mean of its squared gradients (decay rms_decay).
#include "solvers/sgd_solver.hpp"

namespace dlcaffe {

class RMSPropSolver : public SGDSolver {
 public:
  RMSPropSolver(const caffe::SolverParameter& param, Context& ctx) : SGDSolver(param, ctx) {
    DLC_REQUIRE(param_.momentum() == 0.f,
                "momentum cannot be used with RMSProp (the solver sets momentum: "
                    << param_.momentum() << "; remove it or set it to 0)");
    DLC_REQUIRE(param_.rms_decay() >= 0.f && param_.rms_decay() < 1.f,
                "RMSProp needs rms_decay in [0, 1), got " << param_.rms_decay());
  }
  const char* type() const override { return "RMSProp"; }

 protected:
  void UpdateParam(int id, float rate, float grad_scale, float decay, bool l1) override {
    Blob* p = net_->learnable_params()[id];
    const int n = p->count();
    ctx_->Launch1D(ctx_->Kernel("solver_updates.cl", "", "rmsprop_update"), n, n, p->data(),
                   p->diff(), history(0, id).data(), grad_scale, decay, (int)l1, rate,
                   param_.rms_decay(), param_.delta());
  }
};

REGISTER_SOLVER_CLASS(RMSProp);

}  // namespace dlcaffe
