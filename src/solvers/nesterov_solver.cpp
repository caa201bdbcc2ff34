// Nesterov's accelerated gradient (Caffe's "Nesterov"): SGD's momentum history,
// but each step looks ahead along it (see kNesterovUpdate).
#include "core/pointwise_kernel.hpp"
#include "solvers/sgd_solver.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

// Caffe's Nesterov step (g as in SGD):
//   h_new = momentum * h + rate * g
//   update = (1 + momentum) * h_new - momentum * h_old;  diff = update;  w -= update
const PointwiseKernel kNesterovUpdate("nesterov_update",
                                      {InOut("w"), InOut("diff"), InOut("h"),
                                       Scalar("grad_scale"), Scalar("decay"), IntScalar("l1"),
                                       Scalar("rate"), Scalar("momentum")},
                                      std::string(kRegularizedGradient) +
                                          "const real h_old = h;\n"
                                          "h = momentum * h_old + rate * g;\n"
                                          "diff = (1.f + momentum) * h - momentum * h_old;\n"
                                          "w = w - diff;");
}  // namespace

class NesterovSolver : public SGDSolver {
 public:
  using SGDSolver::SGDSolver;
  const char* type() const override { return "Nesterov"; }

 protected:
  void UpdateParam(int id, float rate, float grad_scale, float decay, bool l1) override {
    Blob* p = net_->learnable_params()[id];
    QueueUpdate(kNesterovUpdate, {p->count(),
                                  {p->data(), p->diff(), history(0, id).data()},
                                  {grad_scale, decay, l1, rate, param_.momentum()}});
  }
};

REGISTER_SOLVER_CLASS(Nesterov);

}  // namespace dlcaffe
