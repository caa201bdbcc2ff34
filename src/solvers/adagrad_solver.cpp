// AdaGrad (Duchi et al.; Caffe's "AdaGrad"): each weight's step is divided by
// the root of its accumulated squared gradients. One history set: that sum.
#include "core/pointwise_kernel.hpp"
#include "solvers/sgd_solver.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

// Caffe's AdaGrad step: h += g^2;  update = rate * g / (sqrt(h) + delta).
const PointwiseKernel kAdaGradUpdate("adagrad_update",
                                     {InOut("w"), InOut("diff"), InOut("h"),
                                      Scalar("grad_scale"), Scalar("decay"), IntScalar("l1"),
                                      Scalar("rate"), Scalar("delta")},
                                     std::string(kRegularizedGradient) +
                                         "h = h + g * g;\n"
                                         "diff = rate * g / (sqrt(h) + delta);\n"
                                         "w = w - diff;");
}  // namespace

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
    QueueUpdate(kAdaGradUpdate, {p->count(),
                                 {p->data(), p->diff(), history(0, id).data()},
                                 {grad_scale, decay, l1, rate, param_.delta()}});
  }
};

REGISTER_SOLVER_CLASS(AdaGrad);

}  // namespace dlcaffe
