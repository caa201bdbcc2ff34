#ifdef DLCAFFE_WITH_MPI
#include "parallel/shared_memory_sum.hpp"

#include <vector>

#include "parallel/host_sum.hpp"
#include "parallel/mpi_check.hpp"

namespace dlcaffe {

SharedMemorySum::SharedMemorySum(MPI_Comm comm, size_t floats, size_t buckets)
    : floats_(floats), buckets_(buckets) {
  int world_rank = 0, world_size = 1;
  MPI_Comm_rank(comm, &world_rank);
  MPI_Comm_size(comm, &world_size);
  DLC_MPI_CHECK(
      MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &host_));
  MPI_Comm_set_errhandler(host_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(host_, &rank_);
  MPI_Comm_size(host_, &size_);
  // Every rank sees the same sizes, so all decide alike.
  if (size_ != world_size || size_ < 2 || floats_ == 0) return;
  // Host rank 0 allocates every slot, contiguous; the others map them.
  const MPI_Aint bytes = rank_ == 0 ? MPI_Aint(size_) * floats_ * sizeof(float) : 0;
  void* mine = nullptr;
  DLC_MPI_CHECK(
      MPI_Win_allocate_shared(bytes, sizeof(float), MPI_INFO_NULL, host_, &mine, &window_));
  MPI_Aint size = 0;
  int unit = 0;
  void* base = nullptr;
  DLC_MPI_CHECK(MPI_Win_shared_query(window_, 0, &size, &unit, &base));
  base_ = static_cast<float*>(base);
  // One passive epoch for the window's life; MPI_Win_sync orders the loads
  // and stores around the barriers.
  DLC_MPI_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, window_));
}

SharedMemorySum::~SharedMemorySum() {
  if (window_ != MPI_WIN_NULL) {
    MPI_Win_unlock_all(window_);
    MPI_Win_free(&window_);
  }
  if (host_ != MPI_COMM_NULL) MPI_Comm_free(&host_);
}

void SharedMemorySum::Barrier() {
  DLC_MPI_CHECK(MPI_Win_sync(window_));
  DLC_MPI_CHECK(MPI_Barrier(host_));
  DLC_MPI_CHECK(MPI_Win_sync(window_));
}

void SharedMemorySum::AllReduce(float* values, size_t count, size_t offset, float scale,
                                int threads) {
  DLC_REQUIRE(offset + count <= floats_, "a gradient bucket past the shared layout ("
                                             << offset << " + " << count << " > " << floats_
                                             << " floats)");
  CopyFloats(base_ + size_t(rank_) * floats_ + offset, values, count, threads);
  Barrier();
  std::vector<const float*> slots;
  for (int r = 0; r < size_; ++r) slots.push_back(base_ + size_t(r) * floats_ + offset);
  SumOf(values, slots, count, scale, threads);
  if (buckets_ == 1) Barrier();  // no later bucket's barrier guards the slot
}

}  // namespace dlcaffe
#endif  // DLCAFFE_WITH_MPI
