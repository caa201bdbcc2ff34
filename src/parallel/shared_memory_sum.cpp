#ifdef DLCAFFE_WITH_MPI
#include "parallel/shared_memory_sum.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "parallel/host_sum.hpp"
#include "parallel/mpi_check.hpp"

namespace dlcaffe {

SharedMemorySum::SharedMemorySum(MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  DLC_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host_));
  MPI_Comm_set_errhandler(host_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(host_, &host_rank_);
  MPI_Comm_size(host_, &host_size_);
  DLC_MPI_CHECK(MPI_Comm_split(comm, host_rank_, rank, &across_));
  MPI_Comm_set_errhandler(across_, MPI_ERRORS_RETURN);
  MPI_Comm_size(across_, &hosts_);
  // Every host the same number of ranks: the smallest and largest agree.
  int sizes[2] = {-host_size_, host_size_}, extremes[2] = {0, 0};
  DLC_MPI_CHECK(MPI_Allreduce(sizes, extremes, 2, MPI_INT, MPI_MAX, comm));
  applies_ = -extremes[0] == extremes[1] && host_size_ > 1;
}

SharedMemorySum::~SharedMemorySum() {
  FreeWindow();
  if (across_ != MPI_COMM_NULL) MPI_Comm_free(&across_);
  if (host_ != MPI_COMM_NULL) MPI_Comm_free(&host_);
}

void SharedMemorySum::FreeWindow() {
  if (window_ == MPI_WIN_NULL) return;
  MPI_Win_unlock_all(window_);
  MPI_Win_free(&window_);
  base_ = nullptr;
  capacity_ = 0;
}

void SharedMemorySum::Reserve(size_t count) {
  // Every rank asks for the same counts in the same order, so all agree on
  // when the window grows.
  if (count <= capacity_) return;
  FreeWindow();
  // Host rank 0 holds it all, contiguous; the others map it.
  const MPI_Aint bytes = host_rank_ == 0 ? MPI_Aint(host_size_ + 1) * count * sizeof(float) : 0;
  void* mine = nullptr;
  DLC_MPI_CHECK(MPI_Win_allocate_shared(bytes, sizeof(float), MPI_INFO_NULL, host_, &mine,
                                        &window_));
  MPI_Aint size = 0;
  int unit = 0;
  void* base = nullptr;
  DLC_MPI_CHECK(MPI_Win_shared_query(window_, 0, &size, &unit, &base));
  base_ = static_cast<float*>(base);
  capacity_ = count;
  // One passive epoch for the window's life; MPI_Win_sync orders the loads
  // and stores around the barriers.
  DLC_MPI_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, window_));
}

void SharedMemorySum::HostBarrier() {
  DLC_MPI_CHECK(MPI_Win_sync(window_));
  DLC_MPI_CHECK(MPI_Barrier(host_));
  DLC_MPI_CHECK(MPI_Win_sync(window_));
}

void SharedMemorySum::AllReduce(float* values, size_t count, int threads) {
  if (count == 0) return;
  Reserve(count);
  float* result = base_ + size_t(host_size_) * capacity_;
  std::memcpy(base_ + size_t(host_rank_) * capacity_, values, count * sizeof(float));
  HostBarrier();
  // This rank's slice: the sum of every rank's copy of it, in rank order.
  const size_t begin = count * host_rank_ / host_size_;
  const size_t end = count * (host_rank_ + 1) / host_size_;
  float* slice = result + begin;
  std::memcpy(slice, base_ + begin, (end - begin) * sizeof(float));
  std::vector<const float*> others;
  for (int r = 1; r < host_size_; ++r) others.push_back(base_ + size_t(r) * capacity_ + begin);
  SumInto(slice, others, end - begin, 1.f, threads);
  for (size_t done = begin; hosts_ > 1 && done < end; done += kMpiMaxPiece) {
    const int piece = static_cast<int>(std::min(kMpiMaxPiece, end - done));
    DLC_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, result + done, piece, MPI_FLOAT, MPI_SUM, across_));
  }
  HostBarrier();
  std::memcpy(values, result, count * sizeof(float));
}

}  // namespace dlcaffe
#endif  // DLCAFFE_WITH_MPI
