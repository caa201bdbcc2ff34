// Stochastic gradient descent with momentum (Caffe's "SGD").
#include <glog/logging.h>

#include "dlcaffe/solver.hpp"

namespace dlcaffe {

class SGDSolver : public Solver {
 public:
  SGDSolver(const caffe::SolverParameter& param, Context& ctx) : Solver(param, ctx) {
    for (Blob* p : net_->learnable_params())
      history_.emplace_back(new Blob(*ctx_, p->shape()));  // zero-filled
  }
  const char* type() const override { return "SGD"; }

 protected:
  void ApplyUpdate() override {
    const float rate = GetLearningRate();
    if (param_.display() && iter_ % param_.display() == 0)
      LOG(INFO) << "Iteration " << iter_ << ", lr = " << rate;
    const float grad_scale = ClipGradientsScale() / param_.iter_size();
    const std::string& reg = param_.regularization_type();
    DLC_REQUIRE(reg == "L2" || reg == "L1",
                "unknown regularization_type '" << reg << "' (known: L1, L2)");
    cl_kernel kernel = ctx_->Kernel("sgd_update.cl", "", "sgd_update");
    const auto& params = net_->learnable_params();
    for (size_t i = 0; i < params.size(); ++i) {
      const int n = params[i]->count();
      const float decay = param_.weight_decay() * net_->params_weight_decay()[i];
      const float local_rate = rate * net_->params_lr()[i];
      ctx_->Launch1D(kernel, n, n, params[i]->data(), params[i]->diff(),
                     history_[i]->data(), grad_scale, decay, (int)(reg == "L1"), local_rate,
                     param_.momentum());
    }
  }

  void SnapshotSolverState(caffe::SolverState* state) override {
    for (const auto& h : history_) h->ToProto(state->add_history());
  }

  void RestoreSolverState(const caffe::SolverState& state) override {
    DLC_REQUIRE(state.history_size() == (int)history_.size(),
                "the solver state holds " << state.history_size()
                                          << " history blobs but the net has "
                                          << history_.size()
                                          << " learnable parameters: it belongs to another net");
    for (size_t i = 0; i < history_.size(); ++i) {
      DLC_REQUIRE(history_[i]->ShapeEquals(state.history(i)),
                  "solver state history blob " << i << " does not match parameter shape "
                                                << history_[i]->shape_string()
                                                << ": the state belongs to another net");
      history_[i]->FromProto(state.history(i), false);
    }
  }

 private:
  std::vector<std::unique_ptr<Blob>> history_;
};

REGISTER_SOLVER_CLASS(SGD);

}  // namespace dlcaffe
