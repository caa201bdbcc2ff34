// Stochastic gradient descent with momentum (Caffe's "SGD").
#include "solvers/sgd_solver.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <sstream>

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
  for (Blob* p : net_->learnable_params()) {
    history_.emplace_back(new Blob(*ctx_, p->shape()));
    history_.back()->SetData(0.f);  // the moments start at zero
  }
}

void SGDSolver::ApplyUpdate() {
  const float rate = GetLearningRate();
  if (is_root() && param_.display() && iter_ % param_.display() == 0)
    LOG(INFO) << "Iteration " << iter_ << ", lr = " << rate;
  const float grad_scale = GradientScale();
  const std::string& reg = param_.regularization_type();
  DLC_REQUIRE(reg == "L2" || reg == "L1",
              "unknown regularization_type '" << reg << "' (known: L1, L2)");
  const int n = static_cast<int>(net_->learnable_params().size());
  queued_.clear();  // nothing left from an update that threw
  for (int i = 0; i < n; ++i) {
    // Every solver's step scales with the rate: a fixed parameter (lr_mult
    // 0: BatchNorm statistics, an imported model's constants, which may
    // change shape with the input) stays as it is.
    if (net_->params_lr()[i] == 0.f) continue;
    UpdateParam(i, rate * net_->params_lr()[i], grad_scale,
                param_.weight_decay() * net_->params_weight_decay()[i], reg == "L1");
  }
  for (auto& [kernel, segments] : queued_) kernel->LaunchMany(*ctx_, segments);
  queued_.clear();
  // The copies layers derive from their weights (Blob::data_version) are
  // made again from the updated values.
  for (int i = 0; i < n; ++i)
    if (net_->params_lr()[i] != 0.f) net_->learnable_params()[i]->MarkDataWritten();
  if (net_->debug_info())
    for (size_t i = 0; i < net_->params().size(); ++i) net_->UpdateDebugInfo(static_cast<int>(i));
}

void SGDSolver::UpdateParam(int id, float rate, float grad_scale, float decay, bool l1) {
  Blob* p = net_->learnable_params()[id];
  QueueUpdate(kSgdUpdate, {p->count(),
                           {p->data(), p->diff(), history(0, id).data()},
                           {grad_scale, decay, l1, rate, param_.momentum()}});
}

void SGDSolver::QueueUpdate(const PointwiseKernel& kernel, pointwise::Segment segment) {
  auto queue = std::find_if(queued_.begin(), queued_.end(),
                            [&](const auto& q) { return q.first == &kernel; });
  if (queue == queued_.end()) queue = queued_.insert(queued_.end(), {&kernel, {}});
  queue->second.push_back(std::move(segment));
}

void SGDSolver::SnapshotSolverState(caffe::SolverState* state) {
  for (const auto& h : history_) h->ToProto(state->add_history());
}

void SGDSolver::RestoreSolverState(const caffe::SolverState& state) {
  // Learnable parameter i by name, for the messages: "layer 'ip1' param 0".
  const auto param_name = [this](size_t i) {
    const Blob* p = net_->learnable_params()[i % net_->learnable_params().size()];
    for (size_t l = 0; l < net_->layers().size(); ++l)
      for (size_t b = 0; b < net_->layers()[l]->blobs().size(); ++b)
        if (net_->layers()[l]->blobs()[b].get() == p)
          return "layer '" + net_->layer_names()[l] + "' param " + std::to_string(b);
    return "learnable parameter " + std::to_string(i);
  };
  if (state.history_size() != (int)history_.size()) {
    std::ostringstream names;
    for (size_t i = 0; i < net_->learnable_params().size(); ++i)
      names << (i ? ", " : "") << param_name(i);
    DLC_FAIL("the solver state holds " << state.history_size() << " history blobs but this "
                                       << type() << " solver keeps " << history_.size()
                                       << " for this net (" << history_.size() / std::max<size_t>(1, net_->learnable_params().size())
                                       << " per learnable parameter: " << names.str()
                                       << "): it belongs to another net or solver");
  }
  for (size_t i = 0; i < history_.size(); ++i) {
    if (!history_[i]->ShapeEquals(state.history(i))) {
      const caffe::BlobProto& h = state.history(i);
      std::ostringstream given;
      if (h.has_num() || h.has_channels() || h.has_height() || h.has_width())
        given << h.num() << " " << h.channels() << " " << h.height() << " " << h.width();
      else
        for (int d = 0; d < h.shape().dim_size(); ++d) given << (d ? " " : "") << h.shape().dim(d);
      DLC_FAIL("solver state history blob " << i << " (of " << param_name(i) << ") has shape "
                                            << given.str() << " but the parameter has shape "
                                            << history_[i]->shape_string()
                                            << ": the state belongs to another net");
    }
    try {
      history_[i]->FromProto(state.history(i), false);
    } catch (const Error& e) {
      DLC_FAIL("solver state history blob " << i << " (of " << param_name(i) << "): " << e.what());
    }
  }
}

REGISTER_SOLVER_CLASS(SGD);

}  // namespace dlcaffe
