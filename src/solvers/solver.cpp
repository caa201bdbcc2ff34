#include "dlcaffe/solver.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <utility>

#include "dlcaffe/io.hpp"
#include "dlcaffe/math.hpp"
#include "dlcaffe/detection_evaluation.hpp"
#include "solvers/loss_scaler.hpp"

namespace dlcaffe {

namespace {

caffe::NetParameter ReadNetFile(const std::string& path) {
  caffe::NetParameter param;
  ReadProtoFromTextFile(path, &param);
  UpgradeNetAsNeeded(path, &param);
  return param;
}

// Images per batch of the train net: the num of its first layer's first top
// (the data or input layer's data blob).
int TrainBatchSize(const Net& net) {
  for (const auto& tops : net.top_vecs())
    if (!tops.empty() && tops[0]->num_axes() > 0) return tops[0]->shape(0);
  return 0;
}

// The line after Caffe's display line: throughput and the time left to
// max_iter. Worded (no "Iteration", "loss =", "lr =", "net output") so that
// Caffe's parse_log.py/.sh and extract_seconds.py skip it.
std::string SpeedLine(double iters_per_s, int images_per_iter, int iter, int max_iter) {
  const long eta = std::lround(std::max(0, max_iter - iter) / iters_per_s);
  char text[160];
  std::snprintf(text, sizeof(text),
                "    Speed: %.1f images/s, ETA %ld:%02ld:%02ld (iteration %d of %d)",
                iters_per_s * images_per_iter, eta / 3600, eta / 60 % 60, eta % 60, iter,
                max_iter);
  return text;
}

}  // namespace

Solver::Solver(const caffe::SolverParameter& param, Context& ctx)
    : param_(param), ctx_(&ctx) {
  // Counts that cannot be negative (Caffe trains zero iterations, or divides
  // by zero, instead of saying so).
  for (const auto& [name, value] :
       {std::pair<const char*, int>{"max_iter", param_.max_iter()},
        {"display", param_.display()}, {"snapshot", param_.snapshot()},
        {"test_interval", param_.test_interval()}})
    DLC_REQUIRE(value >= 0, "solver: " << name << " must be 0 or more, got " << value);
  DLC_REQUIRE(param_.iter_size() >= 1, "solver: iter_size must be 1 or more, got "
                                           << param_.iter_size());
  DLC_REQUIRE(param_.average_loss() >= 1, "solver: average_loss must be 1 or more, got "
                                              << param_.average_loss());
  // Other replicas neither test nor write snapshots (set_replica_link).
  if (is_root()) CheckSnapshotWritePermissions();
  if (param_.random_seed() >= 0) ctx_->Seed(static_cast<uint64_t>(param_.random_seed()));
  InitTrainNet();
  if (is_root()) InitTestNets();
  LOG(INFO) << "Solver scaffolding done.";
}

Solver::~Solver() = default;

float Solver::loss_scale() const { return loss_scaler_->scale(); }

void Solver::InitTrainNet() {
  const int sources = param_.has_net() + param_.has_net_param() + param_.has_train_net() +
                      param_.has_train_net_param();
  DLC_REQUIRE(sources >= 1, "the solver must name a train net with one of: net, "
                            "net_param, train_net, train_net_param");
  DLC_REQUIRE(sources <= 1, "the solver names more than one train net (use only one of "
                            "net, net_param, train_net, train_net_param)");
  caffe::NetParameter net_param;
  if (param_.has_train_net_param()) {
    net_param = param_.train_net_param();
  } else if (param_.has_train_net()) {
    LOG(INFO) << "Creating training net from train_net file: " << param_.train_net();
    net_param = ReadNetFile(param_.train_net());
  } else if (param_.has_net_param()) {
    net_param = param_.net_param();
  } else {
    LOG(INFO) << "Creating training net from net file: " << param_.net();
    net_param = ReadNetFile(param_.net());
  }
  caffe::NetState state;
  state.set_phase(caffe::TRAIN);
  state.MergeFrom(net_param.state());
  state.MergeFrom(param_.train_state());
  *net_param.mutable_state() = state;
  DLC_REQUIRE(param_.solver_data_type() == caffe::FLOAT,
              "solver: solver_data_type " << caffe::Type_Name(param_.solver_data_type())
                                          << " is not supported: the master weights and the "
                                             "solver's history are FLOAT (half-precision "
                                             "layers read them as they are)");
  loss_scaler_ = std::make_unique<LossScaler>(net_param);
  net_.reset(new Net(net_param, *ctx_));
  if (ctx_->options().share_diffs) net_->PlanTrainingMemory();
  if (is_root() && loss_scaler_->active()) LOG(INFO) << loss_scaler_->Describe();
}

void Solver::InitTestNets() {
  DLC_REQUIRE(param_.eval_type() == "classification" || param_.eval_type() == "detection",
              "solver: eval_type '" << param_.eval_type()
                                    << "' is not classification or detection");
  DLC_REQUIRE(IsApVersion(param_.ap_version()),
              "solver: ap_version '" << param_.ap_version()
                                     << "' is not 11point, MaxIntegral or Integral");
  const bool generic = param_.has_net() || param_.has_net_param();
  const int specific = param_.test_net_size() + param_.test_net_param_size();
  if (generic) {
    DLC_REQUIRE(param_.test_iter_size() >= specific,
                "test_iter must be given for each test net");
  } else {
    DLC_REQUIRE(param_.test_iter_size() == specific,
                "test_iter must be given for each test net (" << specific << " test nets, "
                                                              << param_.test_iter_size()
                                                              << " test_iter)");
  }
  const int instances = param_.test_iter_size();
  if (param_.test_state_size() > 0)
    DLC_REQUIRE(param_.test_state_size() == instances,
                "test_state must be given for each test net");
  if (instances > 0)
    DLC_REQUIRE(param_.test_interval() > 0, "test nets need test_interval > 0");
  std::vector<caffe::NetParameter> params;
  for (const auto& p : param_.test_net_param()) params.push_back(p);
  for (const auto& f : param_.test_net()) params.push_back(ReadNetFile(f));
  for (int i = specific; i < instances; ++i)
    params.push_back(param_.has_net_param() ? param_.net_param() : ReadNetFile(param_.net()));
  for (int i = 0; i < instances; ++i) {
    caffe::NetState state;
    state.set_phase(caffe::TEST);
    state.MergeFrom(params[i].state());
    if (param_.test_state_size() > 0) state.MergeFrom(param_.test_state(i));
    *params[i].mutable_state() = state;
    LOG(INFO) << "Creating test net (#" << i << ")";
    test_nets_.emplace_back(new Net(params[i], *ctx_));
    test_nets_.back()->ShareTrainedLayersWith(*net_);
  }
  test_scores_.resize(instances);
}

float Solver::GetLearningRate() {
  return LearningRate(param_, iter_, &current_step_, is_root());
}

void Solver::set_replica_link(ReplicaLink* link) {
  link_ = link;
  if (link_)
    net_->set_after_backward([link](int layer_id) { link->OnLayerBackward(layer_id); });
  else
    net_->set_after_backward(nullptr);
}

int Solver::DecideWithReplicas(int wanted) { return link_ ? link_->Decide(wanted) : wanted; }

std::string Solver::ReplicaPrefix() const {
  return is_root() ? "" : "replica" + std::to_string(ctx_->replica().index) + "/";
}

void Solver::Solve(const std::string& resume_file) {
  if (is_root()) {
    LOG(INFO) << "Solving " << net_->name();
    LOG(INFO) << "Learning Rate Policy: " << param_.lr_policy();
  }
  requested_early_exit_ = false;
  if (link_) {
    SynchronizeReplicas(resume_file);
  } else if (!resume_file.empty()) {
    LOG(INFO) << "Restoring previous solver status from " << resume_file;
    Restore(resume_file);
  }
  Step(param_.max_iter() - iter_);
  // The device waits for the exchange, the host did not: end with it.
  if (link_) link_->Settle();
  // A final snapshot unless the last iteration just wrote one.
  if (param_.snapshot_after_train() &&
      (!param_.snapshot() || iter_ % param_.snapshot() != 0))
    Snapshot();
  if (requested_early_exit_) {
    if (is_root()) LOG(INFO) << "Optimization stopped early.";
    return;
  }
  // Caffe shows the loss and test results once more after the last update.
  if (is_root() && param_.display() && iter_ % param_.display() == 0) {
    const float loss = net_->Forward();
    losses_.Add(loss);
    smoothed_loss_ = losses_.mean();
    LOG(INFO) << "Iteration " << iter_ << ", loss = " << smoothed_loss_;
  }
  if (param_.test_interval() && iter_ % param_.test_interval() == 0) TestAll();
  if (is_root()) LOG(INFO) << "Optimization Done.";
}

void Solver::Step(int iters) {
  const int stop_iter = iter_ + iters;
  losses_ = LossWindow(param_.average_loss());
  smoothed_loss_ = 0.f;
  auto display_start = std::chrono::steady_clock::now();
  int display_start_iter = iter_;

  while (iter_ < stop_iter) {
    net_->ClearParamDiffs();
    if (param_.test_interval() && iter_ % param_.test_interval() == 0 &&
        (iter_ > 0 || param_.test_initialization())) {
      TestAll();
      // The root may have been asked to stop while testing.
      if (DecideWithReplicas(requested_early_exit_ ? ReplicaLink::kStopNow : 0) &
          ReplicaLink::kStopNow)
        requested_early_exit_ = true;
      if (requested_early_exit_) break;
    }
    for (const Callback& callback : callbacks_)
      if (callback.on_start) callback.on_start();
    const bool display = is_root() && param_.display() && iter_ % param_.display() == 0;
    net_->set_debug_info(display && param_.debug_info());
    float loss = 0.f;
    for (int i = 0; i < param_.iter_size(); ++i) {
      // The last pass's gradients are final: other replicas get them as
      // backward finishes them.
      if (link_ && i + 1 == param_.iter_size()) link_->StartGradientExchange();
      if (loss_scaler_->active()) net_->SetLossGradientScale(loss_scaler_->scale());
      loss += param_.check_finite() ? ForwardBackwardCheckingFinite() : net_->ForwardBackward();
    }
    if (link_) link_->FinishGradientExchange();
    loss /= param_.iter_size();
    if (!std::isfinite(loss)) FailNonFiniteLoss(loss);
    losses_.Add(loss);
    smoothed_loss_ = losses_.mean();
    if (display) {
      const auto now = std::chrono::steady_clock::now();
      const double lapse = std::chrono::duration<double>(now - display_start).count();
      const int done = iter_ - display_start_iter;
      const double per_s = done > 0 && lapse > 0 ? done / lapse : 0.0;
      LOG(INFO) << "Iteration " << iter_ << " (" << per_s << " iter/s, " << lapse << "s/"
                << param_.display() << " iters), loss = " << smoothed_loss_;
      if (per_s > 0) {  // the first display has no interval measured yet
        const int replicas = link_ ? link_->count() : 1;
        LOG(INFO) << SpeedLine(per_s, TrainBatchSize(*net_) * param_.iter_size() * replicas,
                               iter_, param_.max_iter());
        if (link_) LOG(INFO) << link_->TakeExchangeReport();
      }
      display_start = now;
      display_start_iter = iter_;
      DisplayOutputs();
    }
    for (const Callback& callback : callbacks_)
      if (callback.on_gradients_ready) callback.on_gradients_ready();
    // Every replica holds the same summed gradients, so all decide alike.
    if (GradientsMayBeApplied()) ApplyUpdate();
    if (param_.check_finite()) CheckParamsFinite(false, "after the update, the weights");
    ++iter_;
    const SolverAction request = action_request_ ? action_request_() : SolverAction::kNone;
    // A signal to any replica decides for all of them.
    const int decision =
        DecideWithReplicas((request == SolverAction::kSnapshot ? ReplicaLink::kSnapshotNow : 0) |
                           (request == SolverAction::kStop ? ReplicaLink::kStopNow : 0));
    if ((param_.snapshot() && iter_ % param_.snapshot() == 0) ||
        (decision & ReplicaLink::kSnapshotNow))
      Snapshot();
    if (decision & ReplicaLink::kStopNow) {
      requested_early_exit_ = true;
      break;
    }
  }
}

void Solver::StepWithoutSync() {
  net_->ClearParamDiffs();
  for (int i = 0; i < param_.iter_size(); ++i) {
    if (loss_scaler_->active()) net_->SetLossGradientScale(loss_scaler_->scale());
    net_->ForwardNoLoss();
    net_->Backward();
  }
  if (GradientsMayBeApplied()) ApplyUpdate();
  ++iter_;
}

void Solver::DisplayOutputs() {
  int score_index = 0;
  for (size_t j = 0; j < net_->output_blobs().size(); ++j) {
    const Blob* blob = net_->output_blobs()[j];
    const int blob_id = net_->output_blob_indices()[j];
    const std::string& name = net_->blob_names()[blob_id];
    const float weight = net_->blob_loss_weights()[blob_id];
    for (float value : blob->ReadData()) {
      std::ostringstream loss_msg;
      if (weight != 0.f) loss_msg << " (* " << weight << " = " << weight * value << " loss)";
      LOG(INFO) << "    Train net output #" << score_index++ << ": " << name << " = "
                << value << loss_msg.str();
    }
  }
}

void LossWindow::Add(float loss) {
  if (losses_.size() < static_cast<size_t>(size_)) {
    losses_.push_back(loss);
  } else {
    losses_[next_] = loss;
    next_ = (next_ + 1) % losses_.size();
  }
  double sum = 0;
  for (float l : losses_) sum += l;
  mean_ = static_cast<float>(sum / losses_.size());
}

namespace {

struct NonFinite {
  size_t count = 0;
  size_t first = 0;
  float value = 0.f;
};

NonFinite FindNonFinite(const std::vector<float>& values) {
  NonFinite found;
  for (size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i]) && found.count++ == 0) {
      found.first = i;
      found.value = values[i];
    }
  return found;
}

std::string Describe(const NonFinite& bad) {
  std::ostringstream s;
  s << bad.value << " at index " << bad.first << " (" << bad.count
    << (bad.count == 1 ? " value" : " values") << " not finite)";
  return s.str();
}

}  // namespace

float Solver::ForwardBackwardCheckingFinite() {
  Net& net = *net_;
  const int layers = static_cast<int>(net.layers().size());
  for (int i = 0; i < layers; ++i) {
    net.ForwardFromTo(i, i);
    for (size_t t = 0; t < net.top_vecs()[i].size(); ++t) {
      const NonFinite bad = FindNonFinite(net.top_vecs()[i][t]->ReadData());
      if (!bad.count) continue;
      // A label out of range makes a loss layer's output NaN and is reported
      // by the layer's next forward: that message names the real cause.
      ctx_->Finish();
      net.ForwardFromTo(i, i);
      std::ostringstream bottoms;
      for (size_t b = 0; b < net.bottom_ids()[i].size(); ++b)
        bottoms << (b ? ", '" : "'") << net.blob_names()[net.bottom_ids()[i][b]] << "'";
      DLC_FAIL("iteration " << iter_ << ": layer '" << net.layer_names()[i] << "' ("
                            << net.layers()[i]->type() << ") is the first whose output is "
                            << "not finite: its top '"
                            << net.blob_names()[net.top_ids()[i][t]] << "' holds "
                            << Describe(bad)
                            << (bottoms.tellp() > 0 ? ", from finite bottoms " + bottoms.str()
                                                    : std::string(", and it has no bottoms"))
                            << " (check_finite)");
    }
  }
  const float loss = net.CurrentLoss();
  if (!std::isfinite(loss)) FailNonFiniteLoss(loss);
  net.Backward();
  // Dynamic loss scaling skips a step whose gradients overflow.
  if (!loss_scaler_->adaptive()) CheckParamsFinite(true, "the gradient");
  return loss;
}

void Solver::CheckParamsFinite(bool diff, const char* what) {
  const Net& net = *net_;
  for (size_t l = 0; l < net.layers().size(); ++l) {
    const auto& blobs = net.layers()[l]->blobs();
    for (size_t p = 0; p < blobs.size(); ++p) {
      const NonFinite bad = FindNonFinite(diff ? blobs[p]->ReadDiff() : blobs[p]->ReadData());
      if (!bad.count) continue;
      DLC_FAIL("iteration " << iter_ << ": " << what << " of layer '" << net.layer_names()[l]
                            << "' (" << net.layers()[l]->type() << ") parameter #" << p
                            << " holds " << Describe(bad)
                            << " while every layer's output was finite (check_finite); "
                               "a smaller base_lr or clip_gradients may help");
    }
  }
}

void Solver::FailNonFiniteLoss(float loss) {
  // A label out of range makes the pass's loss NaN and is reported by the
  // layer's next forward: run one so that its message, the real cause, wins.
  net_->ForwardNoLoss();
  ctx_->Finish();
  net_->ForwardNoLoss();
  DLC_FAIL("iteration " << iter_ << ": the loss is " << loss
                        << " (not finite): training diverged or a layer produced NaN or Inf. "
                        << (param_.check_finite()
                                ? "Every layer's output was finite (check_finite), so a loss "
                                  "layer's own sum overflowed."
                                : "Set check_finite: true in the solver (or run dlcaffe "
                                  "train --check_finite) to name the first layer whose "
                                  "output is not finite.")
                        << " A smaller base_lr or clip_gradients often helps.");
}

void Solver::TestAll() {
  for (size_t i = 0; i < test_nets_.size() && !requested_early_exit_; ++i)
    Test(static_cast<int>(i));
}

void Solver::Test(int test_net_id) {
  LOG(INFO) << "Iteration " << iter_ << ", Testing net (#" << test_net_id << ")";
  Net& test_net = *test_nets_[test_net_id];
  test_net.ShareTrainedLayersWith(*net_);
  // Outputs are summed on the device and read once at the end.
  const auto& outputs = test_net.output_blobs();
  std::vector<std::unique_ptr<Blob>> sums;
  double loss = 0;
  const int test_iter = param_.test_iter(test_net_id);
  // Caffe SSD's eval_type "detection": the outputs are DetectionEvaluate's
  // rows, gathered over the iterations into each output's mAP.
  const bool detection = param_.eval_type() == "detection";
  std::vector<DetectionEvaluation> evaluations(detection ? outputs.size() : 0);
  for (int i = 0; i < test_iter; ++i) {
    if (action_request_ && action_request_() == SolverAction::kStop) {
      requested_early_exit_ = true;
      LOG(INFO) << "Test interrupted.";
      return;
    }
    if (param_.test_compute_loss())
      loss += test_net.Forward();
    else
      test_net.ForwardNoLoss();
    if (detection) {
      for (size_t j = 0; j < outputs.size(); ++j) evaluations[j].Add(outputs[j]->ReadData());
    } else if (i == 0) {
      for (const Blob* out : outputs) {
        sums.emplace_back(new Blob(*ctx_, out->shape()));
        CopyFloats(*ctx_, out->count(), out->data(), 0, sums.back()->data(), 0);
      }
    } else {
      for (size_t j = 0; j < outputs.size(); ++j)
        Axpy(*ctx_, outputs[j]->count(), 1.f, outputs[j]->data(), 0, sums[j]->data(), 0);
    }
  }
  if (param_.test_compute_loss()) LOG(INFO) << "Test loss: " << loss / test_iter;
  std::vector<float>& scores = test_scores_[test_net_id];
  scores.clear();
  if (detection) {
    for (size_t j = 0; j < evaluations.size(); ++j) {
      const std::string& name = test_net.blob_names()[test_net.output_blob_indices()[j]];
      if (param_.show_per_class_result())
        for (const auto& [label, ap] : evaluations[j].ClassAps(param_.ap_version()))
          LOG(INFO) << "class" << label << ": " << ap;
      scores.push_back(evaluations[j].MeanAp(param_.ap_version()));
      LOG(INFO) << "    Test net output #" << j << ": " << name << " = " << scores.back();
    }
    return;
  }
  int score_index = 0;
  for (size_t j = 0; j < sums.size(); ++j) {
    const int blob_id = test_net.output_blob_indices()[j];
    const std::string& name = test_net.blob_names()[blob_id];
    const float weight = test_net.blob_loss_weights()[blob_id];
    for (float sum : sums[j]->ReadData()) {
      const float mean = sum / test_iter;
      scores.push_back(mean);
      std::ostringstream loss_msg;
      if (weight != 0.f) loss_msg << " (* " << weight << " = " << weight * mean << " loss)";
      LOG(INFO) << "    Test net output #" << score_index++ << ": " << name << " = "
                << mean << loss_msg.str();
    }
  }
}

float Solver::GradientScale() {
  const float unscale = 1.f / (param_.iter_size() * loss_scaler_->scale());
  const float clip = param_.clip_gradients();
  if (clip < 0) return unscale;
  double sumsq = 0;
  for (Blob* p : net_->learnable_params()) sumsq += Sumsq(*ctx_, p->count(), p->diff(), 0);
  // The norm of the true gradients: the diffs hold loss-scale times them.
  const double norm = std::sqrt(sumsq) / loss_scaler_->scale();
  if (norm <= clip) return unscale;
  const float factor = static_cast<float>(clip / norm);
  if (is_root()) LOG(INFO) << "Gradient clipping: scaling down gradients (L2 norm " << norm << " > "
            << clip << ") by scale factor " << factor;
  return factor * unscale;
}

bool Solver::GradientsMayBeApplied() {
  if (!loss_scaler_->adaptive()) return true;
  std::vector<cl_mem> diffs;
  std::vector<int> counts;
  for (Blob* p : net_->learnable_params()) {
    diffs.push_back(p->diff());
    counts.push_back(p->count());
  }
  const bool apply = loss_scaler_->AfterBackward(AllFinite(*ctx_, diffs, counts));
  if (is_root() && !loss_scaler_->last_change().empty())
    LOG(INFO) << "Iteration " << iter_ << ": " << loss_scaler_->last_change();
  return apply;
}

}  // namespace dlcaffe
