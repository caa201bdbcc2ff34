// RMSProp (Tieleman & Hinton; Caffe's "RMSProp"): each weight's step is divided
// by the root of a running mean of its squared gradients (decay rms_decay).
#include "core/pointwise_kernel.hpp"
#include "solvers/sgd_solver.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

// Caffe's RMSProp step:
//   h = rms_decay * h + (1 - rms_decay) * g^2;  update = rate * g / (sqrt(h) + delta).
const PointwiseKernel kRMSPropUpdate("rmsprop_update",
                                     {InOut("w"), InOut("diff"), InOut("h"),
                                      Scalar("grad_scale"), Scalar("decay"), IntScalar("l1"),
                                      Scalar("rate"), Scalar("rms_decay"), Scalar("delta")},
                                     std::string(kRegularizedGradient) +
                                         "h = rms_decay * h + (1.f - rms_decay) * g * g;\n"
                                         "diff = rate * g / (sqrt(h) + delta);\n"
                                         "w = w - diff;");
}  // namespace

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
    QueueUpdate(kRMSPropUpdate,
                {p->count(),
                 {p->data(), p->diff(), history(0, id).data()},
                 {grad_scale, decay, l1, rate, param_.rms_decay(), param_.delta()}});
  }
};

REGISTER_SOLVER_CLASS(RMSProp);

}  // namespace dlcaffe
