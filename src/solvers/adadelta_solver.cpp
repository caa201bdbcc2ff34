// AdaDelta (Zeiler; Caffe's "AdaDelta"): steps scaled by the ratio of running
// RMS of past updates to running RMS of gradients, `momentum` being the decay
// of both. Two history sets in Caffe's order (so .solverstate files load in
// either): the squared gradients, then the squared updates.
#include "core/pointwise_kernel.hpp"
#include "solvers/sgd_solver.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

// Caffe's AdaDelta step, with h the gradient history (first set) and h2 the
// update history (second set):
//   h = momentum * h + (1 - momentum) * g^2
//   u = g * sqrt((h2 + delta) / (h + delta))
//   h2 = momentum * h2 + (1 - momentum) * u^2
//   update = rate * u
const PointwiseKernel kAdaDeltaUpdate(
    "adadelta_update",
    {InOut("w"), InOut("diff"), InOut("h"), InOut("h2"), Scalar("grad_scale"), Scalar("decay"),
     IntScalar("l1"), Scalar("rate"), Scalar("momentum"), Scalar("delta")},
    std::string(kRegularizedGradient) +
        "h = momentum * h + (1.f - momentum) * g * g;\n"
        "const real u = g * sqrt((h2 + delta) / (h + delta));\n"
        "h2 = momentum * h2 + (1.f - momentum) * u * u;\n"
        "diff = rate * u;\n"
        "w = w - diff;");
}  // namespace

class AdaDeltaSolver : public SGDSolver {
 public:
  AdaDeltaSolver(const caffe::SolverParameter& param, Context& ctx) : SGDSolver(param, ctx) {
    AddHistorySet();
  }
  const char* type() const override { return "AdaDelta"; }

 protected:
  void UpdateParam(int id, float rate, float grad_scale, float decay, bool l1) override {
    Blob* p = net_->learnable_params()[id];
    QueueUpdate(kAdaDeltaUpdate,
                {p->count(),
                 {p->data(), p->diff(), history(0, id).data(), history(1, id).data()},
                 {grad_scale, decay, l1, rate, param_.momentum(), param_.delta()}});
  }
};

REGISTER_SOLVER_CLASS(AdaDelta);

}  // namespace dlcaffe
