// The processes of one training run started by an MPI launcher (`mpirun -np
// N dlcaffe train ...`, OpenMPI), or a group of one for a process started on
// its own. Data-parallel training (data_parallel.hpp) exchanges gradients,
// weights and decisions between the processes through it.
//
// Every collective below must be called by every process, in the same order,
// and by one thread at a time. (The gradients, AllReduceSum, travel on an
// MPI communicator of their own, so that a library with MPI_THREAD_MULTIPLE
// could run them beside the others.) None waits forever: the collectives are MPI's
// blocking ones (its fastest), watched by a thread of the group's own; one
// that has not completed after timeout() seconds makes it print a message
// naming this rank and what it waited for, and end the job (MPI_Abort). A
// process that died is normally reported sooner by mpirun, which ends the
// whole job too.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dlcaffe {

class ProcessGroup {
 public:
  // Joins the MPI job this process was started in (MPI_Init_thread), or
  // returns a group of one when no MPI launcher started it. A build without
  // MPI refuses a launch of several processes (it would train N unrelated
  // copies that overwrite each other's snapshots).
  static std::unique_ptr<ProcessGroup> Join(int* argc, char*** argv);
  // A group of one, without MPI.
  static std::unique_ptr<ProcessGroup> Single();
  ~ProcessGroup();  // MPI_Finalize
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Rank among the processes of this host (picks this process's GPU).
  int local_rank() const { return local_rank_; }
  bool uses_mpi() const { return uses_mpi_; }
  // Whether this build can join an MPI job at all.
  static bool built_with_mpi();
  // What Join changed about the CPUs this process may run on ("" if nothing;
  // see WidenSingleCpuBinding in process_group.cpp), for the log.
  const std::string& binding_note() const { return binding_note_; }

  double timeout() const { return timeout_s_; }
  void set_timeout(double seconds) { timeout_s_ = seconds; }

  // Rank 0's `value` on every rank.
  std::string Broadcast(const std::string& value);
  // At rank 0: every rank's value by rank; elsewhere: empty.
  std::vector<std::string> Gather(const std::string& value);
  // Every rank's value by rank, on every rank.
  std::vector<uint64_t> AllGather(uint64_t value);
  // The bitwise or of every rank's value.
  int AllReduceOr(int value);
  // Prepares AllReduceSum for gradients laid out in `floats` values cut into
  // `buckets` buckets (collective, the same on every rank). When every rank
  // runs on this one host, the sums then go through memory the ranks share
  // (parallel/shared_memory_sum.hpp) instead of MPI_Allreduce where
  // `shared_memory` (RunOptions::shared_memory_sum) allows it.
  void PrepareGradientSums(size_t floats, size_t buckets, bool shared_memory);
  bool sums_in_shared_memory() const;
  // values[i] = scale * (sum over ranks of values[i]), in place, every rank
  // getting the same bits; the values are the gradients at [offset, offset +
  // count) of the prepared layout. `threads` copy and sum on the host.
  void AllReduceSum(float* values, size_t count, size_t offset, float scale, int threads);
  // Ends every process of the job with `code` (MPI_Abort); a group of one
  // exits.
  [[noreturn]] void Abort(int code);

  // Ends the job when a collective outlasts timeout() (process_group.cpp).
  struct Watchdog;
  // The communicator the gradients travel on (process_group.cpp).
  struct GradientChannel;

 private:
  ProcessGroup();
  std::unique_ptr<Watchdog> watchdog_;
  std::unique_ptr<GradientChannel> gradients_;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  bool uses_mpi_ = false;
  double timeout_s_ = 600;
  std::string binding_note_;
};

}  // namespace dlcaffe
