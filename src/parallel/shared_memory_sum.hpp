// The sum over MPI ranks of gradient buckets through the memory that the
// ranks share, when every rank of the job runs on one host.
//
// OpenMPI's all-reduce of host buffers between the ranks of one host ran at
// about 1.8 GB/s (4 H100s, resnet50 at batch 16 per GPU: a 25 MB bucket took
// 14 ms), so under mpirun the exchange fell behind backward and training was
// slower than on one GPU (docs/data-parallel.md). Here every rank has a slot
// of the whole gradient layout in a window that all of them map (MPI-3
// shared memory). For each bucket a rank copies its sums into its slot (on
// several threads), the ranks meet at a barrier, and each sums every rank's
// slot of that bucket, in rank order, straight into its own staging buffer:
//   copy in | barrier | sum all slots
// Every rank computes the same operations in the same order, so all get the
// same bits, the bits the threads of one process get for the same replicas
// (host_sum.hpp): ((g0 + g1) + g2 ...) * scale.
//
// One barrier per bucket is enough: a rank writes a bucket's slot again only
// after the barrier of a later bucket (or of the next step's first), which
// every rank reaches only when done reading it. With a single bucket there is
// no later one, so a second barrier follows the sums.
//
// Across hosts it does not apply (the caller keeps MPI_Allreduce).
#pragma once
#include <mpi.h>

#include <cstddef>

namespace dlcaffe {

class SharedMemorySum {
 public:
  // Collective over `comm`; applies() says whether every rank of `comm`
  // shares this host (then the window holds `floats` per rank).
  SharedMemorySum(MPI_Comm comm, size_t floats, size_t buckets);
  ~SharedMemorySum();
  SharedMemorySum(const SharedMemorySum&) = delete;
  SharedMemorySum& operator=(const SharedMemorySum&) = delete;

  bool applies() const { return window_ != MPI_WIN_NULL; }
  // values[i] = scale * (sum over ranks of their values[i]), for the
  // gradients at [offset, offset + count) of the layout; collective, every
  // rank with the same bucket at the same time.
  void AllReduce(float* values, size_t count, size_t offset, float scale, int threads);

 private:
  // Barrier among the ranks, making their writes to the window visible.
  void Barrier();

  MPI_Comm host_ = MPI_COMM_NULL;
  MPI_Win window_ = MPI_WIN_NULL;
  int rank_ = 0, size_ = 1;
  size_t floats_ = 0, buckets_ = 0;
  float* base_ = nullptr;  // rank r's slot at base_ + r * floats_
};

}  // namespace dlcaffe
