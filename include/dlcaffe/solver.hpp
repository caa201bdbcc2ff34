// The Caffe training loop: forward/backward with iter_size accumulation,
// gradient clipping, regularisation and each solver's own update; learning
// rate policies; test nets every test_interval; snapshots and resume.
#pragma once
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dlcaffe/caffe.pb.h"
#include "dlcaffe/net.hpp"
#include "dlcaffe/replica_link.hpp"

namespace dlcaffe {

// What a signal (or another outside request) asks the solver to do.
enum class SolverAction { kNone, kStop, kSnapshot };

// The displayed loss: the mean of the last `average_loss` losses (Caffe's
// solver field). The mean is summed afresh from the window each time. Caffe
// keeps a running float sum instead (smoothed += (new - oldest) / window),
// whose rounding errors never leave it: after a loss spike (e.g. 80, with
// ulp 8e-6) the display of losses near zero wanders by +-1e-5 and goes
// negative (-4.7e-6 seen with RMSProp at base_lr 0.01 on LeNet).
class LossWindow {
 public:
  explicit LossWindow(int size) : size_(size < 1 ? 1 : size) {}
  void Add(float loss);
  float mean() const { return mean_; }
  void Clear() {
    losses_.clear();
    next_ = 0;
    mean_ = 0.f;
  }

 private:
  int size_;
  std::vector<float> losses_;
  size_t next_ = 0;  // the slot the next loss replaces, once the window is full
  float mean_ = 0.f;
};

class LossScaler;

class Solver {
 public:
  Solver(const caffe::SolverParameter& param, Context& ctx);
  virtual ~Solver();
  virtual const char* type() const = 0;

  // Trains to max_iter (resuming from a .solverstate first if given).
  void Solve(const std::string& resume_file = "");
  // Runs `iters` iterations.
  void Step(int iters);
  // One training iteration without reading anything back to the host (no
  // loss, no display, no tests, no snapshots; dynamic loss scaling reads its
  // one overflow flag): what a benchmark times.
  void StepWithoutSync();
  // The loss scale backward's gradients are multiplied by (1 without loss
  // scaling; NetParameter.global_grad_scale and _adaptive).
  float loss_scale() const;
  // Restores iteration, weights and the solver's history from a .solverstate
  // (or Caffe's HDF5 .solverstate.h5, told by its signature).
  void Restore(const std::string& state_file);
  // Reads a .solverstate (or .solverstate.h5); returns the path of the weights it names (as
  // written, else beside the state file), or "" if it names none.
  static std::string ReadSnapshot(const std::string& state_file, caffe::SolverState* state);
  // Writes <prefix>_iter_N.caffemodel, then <prefix>_iter_N.solverstate,
  // each atomically (WriteFileAtomically). The .solverstate names its
  // .caffemodel (learned_net) and resume starts from a .solverstate, so a
  // failure or a kill at any point leaves every .solverstate on disk paired
  // with complete weights of its own iteration: at worst the newest
  // .caffemodel has no .solverstate yet (it is complete and usable as
  // --weights). A failed write throws dlcaffe::Error naming the file and the
  // system's reason. With snapshot_format: HDF5 the files are Caffe's
  // .caffemodel.h5 (net_hdf5.hpp) and .solverstate.h5, written the same way.
  void Snapshot();
  // Runs every test net once over its test_iter batches.
  void TestAll();

  // Polled after every iteration (e.g. set by the tool's signal handler).
  void set_action_request(std::function<SolverAction()> request) {
    action_request_ = std::move(request);
  }
  bool requested_early_exit() const { return requested_early_exit_; }

  // Data-parallel training (data_parallel.hpp): this solver is one replica of
  // several, on the context's replica (Context::replica). Gradients are
  // averaged over the replicas before each update; the decisions to stop or
  // snapshot are taken together; only the root (replica 0) logs the training,
  // runs the test nets and writes snapshots, which hold every replica's data
  // position. A solver whose context is not the root builds no test nets.
  void set_replica_link(ReplicaLink* link);
  bool is_root() const { return ctx_->replica().index == 0; }

  const caffe::SolverParameter& param() const { return param_; }
  Net& net() { return *net_; }
  const std::vector<std::unique_ptr<Net>>& test_nets() const { return test_nets_; }
  int iter() const { return iter_; }
  float smoothed_loss() const { return smoothed_loss_; }
  // Learning rate for the current iteration (Caffe's lr policies).
  float GetLearningRate();
  // Mean test outputs of the last TestAll() for test net i, by output index.
  const std::vector<float>& last_test_scores(int i) const { return test_scores_[i]; }

  // The solver-specific update of every learnable parameter from the
  // gradients in their diffs, at the current iteration's learning rate
  // (Step calls it; pycaffe's apply_update calls it alone).
  virtual void ApplyUpdate() = 0;

  // Caffe's solver callbacks: in every iteration of Step, on_start runs
  // before the forward passes (after any testing), on_gradients_ready after
  // the backward passes, before the update. Either may be empty.
  struct Callback {
    std::function<void()> on_start;
    std::function<void()> on_gradients_ready;
  };
  void add_callback(Callback callback) { callbacks_.push_back(std::move(callback)); }

 protected:
  virtual void SnapshotSolverState(caffe::SolverState* state) = 0;
  virtual void RestoreSolverState(const caffe::SolverState& state) = 0;
  // The factor every solver's update multiplies the gradients by: global L2
  // norm clipping (the factor is 1 if clip_gradients < 0 or the norm is
  // within it; synchronises) over iter_size and the loss scale (the
  // gradients hold scale times the true ones: loss_scaler.hpp).
  float GradientScale();
  std::string SnapshotFilename(const std::string& extension) const;

  caffe::SolverParameter param_;
  Context* ctx_;
  std::unique_ptr<Net> net_;
  std::vector<std::unique_ptr<Net>> test_nets_;
  int iter_ = 0;
  int current_step_ = 0;

 private:
  void InitTrainNet();
  void InitTestNets();
  void Test(int test_net_id);
  void CheckSnapshotWritePermissions();
  // check_finite: the forward layer by layer, each layer's tops checked on
  // the host, then the loss, the backward and the gradients checked.
  float ForwardBackwardCheckingFinite();
  // Dynamic loss scaling's decision after backward (always true without
  // it): false when a gradient overflowed and the update must be skipped.
  bool GradientsMayBeApplied();
  void CheckParamsFinite(bool diff, const char* what);
  // A non-finite loss: throws naming the iteration (and any deferred input
  // error, e.g. a label out of range, that explains it).
  [[noreturn]] void FailNonFiniteLoss(float loss);
  void DisplayOutputs();
  void SnapshotRunState(caffe::SolverState* state);
  void RestoreRunState(const caffe::SolverState& state);
  // Restore, handing back the state it read.
  void Restore(const std::string& state_file, caffe::SolverState* read);
  // Applies a state read by ReadSnapshot, but for the weights (`source`
  // names it in messages).
  void RestoreFrom(const std::string& source, const caffe::SolverState& state);
  // Replicas: the root's weights (and, resuming, its solver state) on every
  // replica before the first iteration.
  void SynchronizeReplicas(const std::string& resume_file);
  // Replica names in the solver state: "" for the root, "replicaN/" else.
  std::string ReplicaPrefix() const;
  // The or of every replica's stop/snapshot wishes (just `wanted` alone).
  int DecideWithReplicas(int wanted);
  void ForEachNetWithPrefix(const std::function<void(Net&, const std::string&)>& visit);

  // Loss scaling for half-precision gradients (NetParameter
  // .global_grad_scale; solvers/loss_scaler.hpp).
  std::unique_ptr<LossScaler> loss_scaler_;
  LossWindow losses_{1};
  float smoothed_loss_ = 0.f;
  std::vector<std::vector<float>> test_scores_;
  std::function<SolverAction()> action_request_;
  bool requested_early_exit_ = false;
  ReplicaLink* link_ = nullptr;
  std::vector<Callback> callbacks_;
};

// Solvers register by their `type` string, like layers.
class SolverRegistry {
 public:
  using Creator = std::function<std::unique_ptr<Solver>(const caffe::SolverParameter&,
                                                        Context&)>;
  static void Add(const std::string& type, Creator creator);
  static std::unique_ptr<Solver> Create(const caffe::SolverParameter& param, Context& ctx);
  static std::vector<std::string> Types();
};

struct SolverRegisterer {
  SolverRegisterer(const std::string& type, SolverRegistry::Creator creator) {
    SolverRegistry::Add(type, std::move(creator));
  }
};

// Reads a solver prototxt and applies Caffe's upgrades: the old solver_type
// enum becomes `type`, and the snapshot_prefix rules (unset: the solver file
// without extension; a directory: that directory + the solver file's stem).
caffe::SolverParameter ReadSolverParams(const std::string& path);

// Caffe's learning-rate policies. `current_step` is the multistep position
// (advanced here, as Caffe does, one step per call at most, and logged unless
// `log_steps` is false).
float LearningRate(const caffe::SolverParameter& param, int iter, int* current_step,
                   bool log_steps = true);

}  // namespace dlcaffe

#define REGISTER_SOLVER_CLASS(type)                                              \
  static ::dlcaffe::SolverRegisterer g_register_solver_##type(                   \
      #type, [](const caffe::SolverParameter& param, ::dlcaffe::Context& ctx) {  \
        return std::unique_ptr<::dlcaffe::Solver>(new type##Solver(param, ctx)); \
      })
