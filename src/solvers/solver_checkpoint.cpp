// A Solver's checkpoints: snapshots written atomically (weights and solver
// state, temporaries of killed writers cleaned up), restore and resume, the
// replicas agreeing on one resume point, and the run state beyond Caffe's
// (data positions, random generators) that makes a resumed run continue
// exactly.
#include "dlcaffe/solver.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <glog/logging.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "dlcaffe/data/data_state.hpp"
#include "dlcaffe/io.hpp"
#include "dlcaffe/net_hdf5.hpp"
#include "solvers/loss_scaler.hpp"
#include "solvers/solver_state_hdf5.hpp"

namespace dlcaffe {

namespace {

bool EndsWith(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

}  // namespace

std::string Solver::SnapshotFilename(const std::string& extension) const {
  return param_.snapshot_prefix() + "_iter_" + std::to_string(iter_) + extension;
}

namespace {

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Temporary files of snapshots ("<prefix>_iter_N.caffemodel.tmp.PID.K") left
// by a process that was killed while writing: removed when their process is
// gone, so that a crash loop does not fill the disk. Nothing ever reads them.
void RemoveStaleSnapshotTemporaries(const std::string& prefix) {
  const std::string dir = DirectoryOf(prefix);
  const size_t slash = prefix.find_last_of('/');
  const std::string stem =
      (slash == std::string::npos ? prefix : prefix.substr(slash + 1)) + "_iter_";
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (dirent* entry = readdir(d)) {
    const std::string name = entry->d_name;
    if (name.compare(0, stem.size(), stem) != 0) continue;
    const size_t tmp = name.find(".tmp.");
    if (tmp == std::string::npos) continue;
    const std::string ext = name.substr(0, tmp);
    if (!EndsWith(ext, ".caffemodel") && !EndsWith(ext, ".solverstate") &&
        !EndsWith(ext, ".caffemodel.h5") && !EndsWith(ext, ".solverstate.h5"))
      continue;
    const long pid = std::strtol(name.c_str() + tmp + 5, nullptr, 10);
    if (pid <= 0 || pid == getpid() || (kill(pid, 0) == 0 || errno == EPERM)) continue;
    const std::string path = dir + "/" + name;
    if (std::remove(path.c_str()) == 0)
      LOG(INFO) << "Removed " << path << ", a snapshot file left unfinished by process "
                << pid;
  }
  closedir(d);
}

}  // namespace

void Solver::CheckSnapshotWritePermissions() {
  if (!param_.snapshot() && !param_.snapshot_after_train()) return;
  if (!param_.snapshot() && param_.max_iter() == 0) return;
  DLC_REQUIRE(param_.has_snapshot_prefix(),
              "snapshots are requested but the solver has no snapshot_prefix");
  const std::string dir = DirectoryOf(param_.snapshot_prefix());
  struct stat st;
  DLC_REQUIRE(stat(dir.c_str(), &st) == 0,
              "cannot write snapshots to '" << param_.snapshot_prefix() << "': the folder "
                                            << dir << " does not exist ("
                                            << std::strerror(errno) << ")");
  DLC_REQUIRE(S_ISDIR(st.st_mode), "cannot write snapshots to '"
                                       << param_.snapshot_prefix() << "': " << dir
                                       << " is not a folder");
  // Creating a file tells what access(2) cannot: a read-only file system,
  // root squashing, quotas.
  const std::string probe = SnapshotFilename(".tempfile");
  const int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  DLC_REQUIRE(fd >= 0, "cannot write snapshots to '"
                           << param_.snapshot_prefix() << "': creating " << probe
                           << " failed: " << std::strerror(errno)
                           << ". Make sure that the folder " << dir << " is writable.");
  close(fd);
  std::remove(probe.c_str());
  RemoveStaleSnapshotTemporaries(param_.snapshot_prefix());
}

void Solver::Snapshot() {
  // The weights read below must have taken their last update.
  if (link_) link_->Settle();
  // Caffe's two formats: binary protos, or HDF5 (.caffemodel.h5 and
  // .solverstate.h5), each file written atomically either way.
  const bool hdf5 = param_.snapshot_format() == caffe::SolverParameter_SnapshotFormat_HDF5;
  // Replicas: the root writes the snapshot, with every replica's data
  // positions and generators.
  std::vector<std::string> replica_states;
  if (link_) {
    caffe::SolverState mine;
    SnapshotRunState(&mine);
    replica_states = link_->GatherAtRoot(mine.SerializeAsString());
    if (!is_root()) return;
  }
  // The weights first, then the state that names them (see solver.hpp).
  const std::string model_file = SnapshotFilename(hdf5 ? ".caffemodel.h5" : ".caffemodel");
  LOG(INFO) << "Snapshotting to " << (hdf5 ? "HDF5" : "binary proto") << " file " << model_file;
  try {
    if (hdf5) {
      SaveNetHdf5(*net_, model_file, param_.snapshot_diff());
    } else {
      caffe::NetParameter net_param;
      net_->ToProto(&net_param, param_.snapshot_diff());
      WriteProtoToBinaryFile(net_param, model_file);
    }
  } catch (const Error& e) {
    DLC_FAIL("snapshot at iteration " << iter_ << " failed: " << e.what()
                                      << ". Earlier snapshots are intact.");
  }

  caffe::SolverState state;
  state.set_iter(iter_);
  state.set_learned_net(model_file);
  state.set_current_step(current_step_);
  loss_scaler_->Save(&state);
  SnapshotSolverState(&state);
  if (link_) {
    for (const std::string& bytes : replica_states) {
      caffe::SolverState replica;
      DLC_REQUIRE(replica.ParseFromString(bytes), "a replica's data positions did not arrive whole");
      for (const auto& cursor : replica.data_cursor()) *state.add_data_cursor() = cursor;
      for (const auto& rng : replica.rng_state()) *state.add_rng_state() = rng;
    }
  } else {
    SnapshotRunState(&state);
  }
  const std::string state_file = SnapshotFilename(hdf5 ? ".solverstate.h5" : ".solverstate");
  LOG(INFO) << "Snapshotting solver state to " << (hdf5 ? "HDF5" : "binary proto") << " file "
            << state_file;
  try {
    if (hdf5)
      WriteSolverStateHdf5(state, state_file);
    else
      WriteProtoToBinaryFile(state, state_file);
  } catch (const Error& e) {
    DLC_FAIL("snapshot at iteration " << iter_ << " failed: " << e.what() << ". "
                                      << model_file
                                      << " was written but has no .solverstate, so resume "
                                         "from an earlier .solverstate (intact).");
  }
}

std::string Solver::ReadSnapshot(const std::string& state_file, caffe::SolverState* state) {
  if (IsHdf5File(state_file))
    ReadSolverStateHdf5(state_file, state);
  else
    ReadProtoFromBinaryFile(state_file, state);
  if (!state->has_learned_net()) return "";
  // Caffe stores the weights' path as written; try it as given, then next to
  // the state file.
  const std::string& weights = state->learned_net();
  if (FileExists(weights)) return weights;
  const size_t slash = state_file.find_last_of('/');
  const size_t wslash = weights.find_last_of('/');
  const std::string sibling =
      (slash == std::string::npos ? "" : state_file.substr(0, slash + 1)) +
      (wslash == std::string::npos ? weights : weights.substr(wslash + 1));
  DLC_REQUIRE(FileExists(sibling), state_file << ": its weights file " << weights
                                              << " does not exist");
  return sibling;
}

void Solver::Restore(const std::string& state_file) {
  caffe::SolverState state;
  Restore(state_file, &state);
}

void Solver::Restore(const std::string& state_file, caffe::SolverState* read) {
  caffe::SolverState& state = *read;
  const std::string weights = ReadSnapshot(state_file, &state);
  if (!weights.empty()) {
    try {
      net_->CopyTrainedLayersFrom(weights);
    } catch (const Error& e) {
      DLC_FAIL(state_file << ": restoring its weights: " << e.what());
    }
  }
  RestoreFrom(state_file, state);
}

void Solver::RestoreFrom(const std::string& source, const caffe::SolverState& state) {
  iter_ = state.iter();
  current_step_ = state.current_step();
  try {
    RestoreSolverState(state);
    loss_scaler_->Restore(state);
    RestoreRunState(state);
  } catch (const Error& e) {
    DLC_FAIL(source << ": " << e.what());
  }
}

void Solver::SynchronizeReplicas(const std::string& resume_file) {
  caffe::SolverState state;
  caffe::NetParameter weights;
  if (is_root()) {
    if (!resume_file.empty()) {
      LOG(INFO) << "Restoring previous solver status from " << resume_file;
      Restore(resume_file, &state);
    }
    net_->ToProto(&weights, false);
  }
  // Every replica starts from the root's weights (each built its own from
  // its own seed) and, resuming, from the root's solver state, which holds
  // every replica's data position.
  const std::string weight_bytes = link_->BroadcastFromRoot(weights.SerializeAsString());
  const std::string state_bytes = link_->BroadcastFromRoot(state.SerializeAsString());
  if (is_root()) return;
  DLC_REQUIRE(weights.ParseFromString(weight_bytes) && state.ParseFromString(state_bytes),
              "replica " << ctx_->replica().index
                         << ": the root's weights or solver state did not arrive whole");
  net_->CopyTrainedLayersFrom(weights);
  if (!resume_file.empty()) RestoreFrom(resume_file, state);
}

// Beyond Caffe: the data layers' positions and every random generator go into
// the solver state (fields Caffe ignores), so that a resumed run continues
// exactly as an uninterrupted one would.
namespace {

const char kContextRng[] = "context";

template <typename Visit>
void ForEachDataLayer(Net& net, const std::string& prefix, Visit visit) {
  for (const auto& layer : net.layers())
    if (auto* data = dynamic_cast<ResumableDataLayer*>(layer.get()))
      visit(prefix + layer->name(), data);
}

}  // namespace

void Solver::ForEachNetWithPrefix(
    const std::function<void(Net&, const std::string&)>& visit) {
  visit(*net_, ReplicaPrefix() + "train/");
  for (size_t i = 0; i < test_nets_.size(); ++i)
    visit(*test_nets_[i], "test" + std::to_string(i) + "/");
}

void Solver::SnapshotRunState(caffe::SolverState* state) {
  ForEachNetWithPrefix([&](Net& net, const std::string& prefix) {
    ForEachDataLayer(net, prefix, [&](const std::string& name, ResumableDataLayer* data) {
      const DataReaderState reader = data->ReaderState();
      caffe::DataCursor* cursor = state->add_data_cursor();
      cursor->set_layer_name(name);
      cursor->set_key(reader.next_key);
      cursor->set_position(reader.records_read);
      cursor->set_epoch(reader.epoch);
      caffe::RngState* rng = state->add_rng_state();
      rng->set_name(name);
      rng->set_state(reader.rng_state);
    });
  });
  caffe::RngState* rng = state->add_rng_state();
  rng->set_name(ReplicaPrefix() + kContextRng);
  rng->set_state(DataReaderState::SaveRng(ctx_->rng()));
}

void Solver::RestoreRunState(const caffe::SolverState& state) {
  if (state.data_cursor_size() == 0 && state.rng_state_size() == 0) {
    LOG(INFO) << "The solver state holds no data positions or random states (written by "
                 "Caffe?): training resumes, but not exactly where it stopped.";
    return;
  }
  std::map<std::string, const caffe::RngState*> rngs;
  for (const auto& rng : state.rng_state()) rngs[rng.name()] = &rng;
  std::map<std::string, const caffe::DataCursor*> cursors;
  for (const auto& cursor : state.data_cursor()) cursors[cursor.layer_name()] = &cursor;
  if (!is_root() && !rngs.count(ReplicaPrefix() + kContextRng)) {
    // A replica beyond those the snapshot was taken with: it starts its
    // share of the data afresh (the run goes on, not exactly as it would
    // have).
    LOG(WARNING) << "replica " << ctx_->replica().index << " of " << ctx_->replica().count
                 << ": the solver state holds no data position for it (taken with fewer "
                    "replicas); its share of the data starts from the beginning, so the run "
                    "does not continue exactly";
    return;
  }
  if (is_root()) {
    int saved_replicas = 1;
    for (const auto& rng : state.rng_state())
      if (rng.name().compare(0, 7, "replica") == 0 &&
          rng.name().find(std::string("/") + kContextRng) != std::string::npos)
        ++saved_replicas;
    const int replicas = ctx_->replica().count;
    if (saved_replicas != replicas)
      LOG(WARNING) << "the solver state was taken with " << saved_replicas
                   << " replica(s) and this run has " << replicas
                   << ": each replica's share of the data changes, so the run does not "
                      "continue exactly (resume with the same number for that)";
  }
  ForEachNetWithPrefix([&](Net& net, const std::string& prefix) {
    ForEachDataLayer(net, prefix, [&](const std::string& name, ResumableDataLayer* data) {
      auto cursor = cursors.find(name);
      DLC_REQUIRE(cursor != cursors.end() && rngs.count(name),
                  "the solver state has no position for data layer '"
                      << name << "': it belongs to another net");
      DataReaderState reader;
      reader.next_key = cursor->second->key();
      reader.records_read = cursor->second->position();
      reader.epoch = cursor->second->epoch();
      reader.rng_state = rngs[name]->state();
      data->RestoreReaderState(reader);
    });
  });
  auto context = rngs.find(ReplicaPrefix() + kContextRng);
  if (context != rngs.end()) DataReaderState::LoadRng(context->second->state(), &ctx_->rng());
}

}  // namespace dlcaffe
