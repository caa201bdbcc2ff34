// Data-parallel training, Caffe's `-gpu 0,1` and PyTorch's
// DistributedDataParallel: one replica of the solver per device, on the
// devices of this process (one thread each) and on those of every process
// of an MPI launch (`mpirun -np N dlcaffe train ...`, ProcessGroup).
//
// Each replica runs the net with the prototxt's batch size on its own share
// of the training set (ReplicaInfo), so N replicas train on N × batch images
// per iteration. Before each update the gradients are averaged over the
// replicas (summed and divided by N, as Caffe does), so all replicas take the
// same step and keep the same weights, and N replicas × batch B train like
// one replica with batch N × B. BatchNorm statistics stay per replica, as in
// Caffe; the root's are the ones tested and saved.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "dlcaffe/caffe.pb.h"
#include "dlcaffe/process_group.hpp"
#include "dlcaffe/run_options.hpp"
#include "dlcaffe/solver.hpp"

namespace dlcaffe {

struct DataParallelOptions {
  // This process's devices (Context::Create specs); one replica each. A
  // device may be named twice (two replicas share it: for tests).
  std::vector<std::string> devices;
  // What every replica's context runs with (its device aside).
  RunOptions run_options = RunOptions::FromEnvironment();
  // .solverstate to resume from (read by the root), and .caffemodel files to
  // start from (read by the root); at most one of them.
  std::string resume_file;
  std::vector<std::string> weights;
  // Gradients travel in buckets of at most this size; with bucket_taper
  // the last ones backward finishes are smaller (1/16 of it, doubling up),
  // since the last bucket's exchange cannot overlap backward.
  size_t bucket_bytes = size_t(25) << 20;
  bool bucket_taper = true;
  // Host threads that sum a bucket of the local replicas; 0: half the
  // host's cores, 1 to 8. Results do not depend on it.
  int exchange_threads = 0;
  // Where to write a timeline of each step's exchange ("": none; under MPI
  // each rank writes FILE.rankR). bench/exchange_trace.py sums it up.
  std::string exchange_trace;
  // For finding where a step's time goes, never for training: "copies" sends
  // the gradients to the host and back without summing them, "none" sends
  // nothing; either way the replicas train apart. "" (all) is the exchange.
  std::string exchange_diagnosis;
  // Polled on every replica after each iteration (signals).
  std::function<SolverAction()> action_request;
  // Called on each of this process's replicas (on its thread) once it has
  // trained: e.g. to keep the root's net. Solver::is_root() tells which.
  std::function<void(Solver&)> on_trained;
};

// Trains to the solver's max_iter. Throws dlcaffe::Error naming the replica
// (its index, rank and device) whose failure stopped the run. In a launch of
// several processes a failure instead prints that message and ends every
// process (MPI_Abort), since the others cannot go on without this one.
void TrainDataParallel(const caffe::SolverParameter& param, const DataParallelOptions& options,
                       ProcessGroup& processes);

}  // namespace dlcaffe
