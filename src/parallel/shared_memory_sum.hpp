// The sum over MPI ranks of a gradient bucket through the memory that the
// ranks of one host share, instead of MPI_Allreduce.
//
// OpenMPI's all-reduce of host buffers between the ranks of one host runs at
// a fraction of the memory bandwidth (measured: 2 ranks on 2 H200s, resnet50
// at batch 16: 19 ms of every 58 ms step not hidden behind backward;
// docs/data-parallel.md). Here each rank copies its bucket into a shared
// window, every rank sums its own slice of all the copies on several threads
// (host_sum.hpp), and each copies the whole result back:
//   copy in | barrier | sum my slice | [across hosts] | barrier | copy out
// With several hosts, each slice is then summed across the hosts by an
// MPI_Allreduce among the ranks that hold that slice (one per host), so the
// network carries each value once per host, not once per rank.
//
// It applies when every host runs the same number of ranks, more than one
// (the slices then line up across hosts); otherwise the caller keeps
// MPI_Allreduce. Every element is summed by one rank, over the ranks of its
// host in rank order, so all ranks get the same bits.
#pragma once
#include <mpi.h>

#include <cstddef>

namespace dlcaffe {

class SharedMemorySum {
 public:
  // Collective over `comm`.
  explicit SharedMemorySum(MPI_Comm comm);
  ~SharedMemorySum();
  SharedMemorySum(const SharedMemorySum&) = delete;
  SharedMemorySum& operator=(const SharedMemorySum&) = delete;

  // Whether the layout of ranks allows it (see above).
  bool applies() const { return applies_; }
  // values (count floats) = their sum over all ranks of `comm`; collective,
  // with the same count on every rank. `threads` sum this rank's slice.
  void AllReduce(float* values, size_t count, int threads);

 private:
  // A window of (ranks on this host + 1) x `count` floats: a slot per rank
  // and the result; collective over the host's ranks.
  void Reserve(size_t count);
  void FreeWindow();
  // Barrier among the host's ranks, making their writes to the window
  // visible to one another.
  void HostBarrier();

  bool applies_ = false;
  MPI_Comm host_ = MPI_COMM_NULL;    // the ranks of this host
  MPI_Comm across_ = MPI_COMM_NULL;  // the ranks of this host rank on every host
  int host_rank_ = 0, host_size_ = 1, hosts_ = 1;
  MPI_Win window_ = MPI_WIN_NULL;
  float* base_ = nullptr;
  size_t capacity_ = 0;  // floats per slot
};

}  // namespace dlcaffe
