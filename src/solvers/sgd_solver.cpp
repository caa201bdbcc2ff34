// Stochastic gradient descent with momentum (Caffe's "SGD").
#include "solvers/sgd_solver.hpp"

#include <glog/logging.h>

#include "core/pointwise_kernel.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

// Caffe's SGD step: h = rate * g + momentum * h;  diff = h;  w -= h.
const PointwiseKernel kSgdUpdate("sgd_update",
                                 {InOut("w"), InOut("diff"), InOut("h"), Scalar("grad_scale"),
                                  Scalar("decay"), IntScalar("l1"), Scalar("rate"),
                                  Scalar("momentum")},
                                 std::string(kRegularizedGradient) +
                                     "h = rate * g + momentum * h;\n"
                                     "diff = h;\n"
                                     "w = w - h;");
}  // namespace

SGDSolver::SGDSolver(const caffe::SolverParameter& param, Context& ctx)
    : Solver(param, ctx) {
  AddHistorySet();
}

void SGDSolver::AddHistorySet() {
  for (Blob* p : net_->learnable_params())
    history_.emplace_back(new Blob(*ctx_, p->shape()));  // zero-filled
}

void SGDSolver::ApplyUpdate() {
  const float rate = GetLearningRate();
  if (param_.display() && iter_ % param_.display() == 0)
    LOG(INFO) << "Iteration " << iter_ << ", lr = " << rate;
  const float grad_scale = ClipGradientsScale() / param_.iter_size();
  const std::string& reg = param_.regularization_type();
  DLC_REQUIRE(reg == "L2" || reg == "L1",
              "unknown regularization_type '" << reg << "' (known: L1, L2)");
  const int n = static_cast<int>(net_->learnable_params().size());
  for (int i = 0; i < n; ++i) {
    UpdateParam(i, rate * net_->params_lr()[i], grad_scale,
                param_.weight_decay() * net_->params_weight_decay()[i], reg == "L1");
  }
  if (net_->debug_info())
    for (size_t i = 0; i < net_->params().size(); ++i) net_->UpdateDebugInfo(static_cast<int>(i));
}

void SGDSolver::UpdateParam(int id, float rate, float grad_scale, float decay, bool l1) {
  Blob* p = net_->learnable_params()[id];
  kSgdUpdate.Launch(*ctx_, p->count(), {p->data(), p->diff(), history(0, id).data()},
                    {grad_scale, decay, l1, rate, param_.momentum()});
}

void SGDSolver::SnapshotSolverState(caffe::SolverState* state) {
  for (const auto& h : history_) h->ToProto(state->add_history());
}

void SGDSolver::RestoreSolverState(const caffe::SolverState& state) {
  DLC_REQUIRE(state.history_size() == (int)history_.size(),
              "the solver state holds " << state.history_size()
                                        << " history blobs but this " << type()
                                        << " solver keeps " << history_.size()
                                        << " for this net: it belongs to another net or solver");
  for (size_t i = 0; i < history_.size(); ++i) {
    DLC_REQUIRE(history_[i]->ShapeEquals(state.history(i)),
                "solver state history blob " << i << " does not match parameter shape "
                                              << history_[i]->shape_string()
                                              << ": the state belongs to another net");
    history_[i]->FromProto(state.history(i), false);
  }
}

REGISTER_SOLVER_CLASS(SGD);

}  // namespace dlcaffe
