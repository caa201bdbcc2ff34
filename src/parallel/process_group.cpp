#include "dlcaffe/process_group.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "dlcaffe/error.hpp"

#ifdef DLCAFFE_WITH_MPI
#include <mpi.h>
#endif

namespace dlcaffe {

namespace {

// The launchers set these in every process they start (OpenMPI's mpirun,
// PMIx-based and PMI-based launchers such as srun).
int LauncherWorldSize() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"})
    if (const char* value = std::getenv(name)) return std::atoi(value);
  if (std::getenv("PMIX_RANK") || std::getenv("PMI_RANK")) return 2;  // size unknown: > 1
  return 1;
}

}  // namespace

std::unique_ptr<ProcessGroup> ProcessGroup::Single() {
  return std::unique_ptr<ProcessGroup>(new ProcessGroup());
}

#ifndef DLCAFFE_WITH_MPI

bool ProcessGroup::built_with_mpi() { return false; }

std::unique_ptr<ProcessGroup> ProcessGroup::Join(int*, char***) {
  const int launched = LauncherWorldSize();
  DLC_REQUIRE(launched <= 1,
              "this process was started by an MPI launcher as one of " << launched
                  << " processes, but this dlcaffe was built without MPI; install "
                     "libopenmpi-dev (scripts/install_deps.sh) and rebuild");
  return Single();
}

ProcessGroup::~ProcessGroup() = default;
std::string ProcessGroup::Broadcast(const std::string& value) { return value; }
std::vector<std::string> ProcessGroup::Gather(const std::string& value) { return {value}; }
std::vector<uint64_t> ProcessGroup::AllGather(uint64_t value) { return {value}; }
int ProcessGroup::AllReduceOr(int value) { return value; }
void ProcessGroup::AllReduceSum(float*, size_t) {}
void ProcessGroup::Abort(int code) { std::exit(code); }

#else  // DLCAFFE_WITH_MPI

bool ProcessGroup::built_with_mpi() { return true; }

namespace {

std::string MpiErrorText(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, length);
}

#define DLC_MPI_CHECK(call)                                                    \
  do {                                                                         \
    const int dlc_mpi_err_ = (call);                                           \
    DLC_REQUIRE(dlc_mpi_err_ == MPI_SUCCESS,                                   \
                #call " failed: " << MpiErrorText(dlc_mpi_err_));              \
  } while (0)

// Waits for a non-blocking operation by polling (MPI progresses it inside
// MPI_Test), giving the processor away between polls, and gives up after
// `timeout_s` naming what it waited for (the caller names the rank).
void Await(MPI_Request* request, double timeout_s, const char* what) {
  const auto start = std::chrono::steady_clock::now();
  for (long polls = 0;; ++polls) {
    int done = 0;
    DLC_MPI_CHECK(MPI_Test(request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    DLC_REQUIRE(waited < timeout_s,
                "waited " << static_cast<long>(waited) << " s for " << what
                        << " from the other ranks; one of them is stuck or gone (the "
                           "limit is --replica_timeout)");
    if (waited < 0.01)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

// MPI counts are int: large buffers go in pieces.
constexpr size_t kMaxPiece = size_t(1) << 30;

}  // namespace

std::unique_ptr<ProcessGroup> ProcessGroup::Join(int* argc, char*** argv) {
  if (LauncherWorldSize() <= 1) return Single();
  int provided = 0;
  DLC_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
  // Gradients are exchanged by a thread of their own while the training
  // thread waits, so calls come from two threads, never at the same time.
  DLC_REQUIRE(provided >= MPI_THREAD_SERIALIZED,
              "the MPI library offers thread support level " << provided
                  << "; data-parallel training needs MPI_THREAD_SERIALIZED or more");
  // Errors come back as codes (and become dlcaffe::Error) instead of aborting.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::unique_ptr<ProcessGroup> group(new ProcessGroup());
  group->uses_mpi_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &group->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &group->size_);
  MPI_Comm local;
  DLC_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, group->rank_,
                                    MPI_INFO_NULL, &local));
  MPI_Comm_rank(local, &group->local_rank_);
  MPI_Comm_free(&local);
  return group;
}

ProcessGroup::~ProcessGroup() {
  if (uses_mpi_) MPI_Finalize();
}

std::string ProcessGroup::Broadcast(const std::string& value) {
  if (!uses_mpi_) return value;
  uint64_t size = value.size();
  MPI_Request request;
  DLC_MPI_CHECK(MPI_Ibcast(&size, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD, &request));
  Await(&request, timeout_s_, "a broadcast's size");
  std::string result = rank_ == 0 ? value : std::string(size, '\0');
  for (size_t done = 0; done < size; done += kMaxPiece) {
    const int piece = static_cast<int>(std::min<size_t>(kMaxPiece, size - done));
    DLC_MPI_CHECK(MPI_Ibcast(&result[done], piece, MPI_BYTE, 0, MPI_COMM_WORLD, &request));
    Await(&request, timeout_s_, "broadcast data");
  }
  return result;
}

std::vector<std::string> ProcessGroup::Gather(const std::string& value) {
  if (!uses_mpi_) return {value};
  DLC_REQUIRE(value.size() < kMaxPiece, "rank " << rank_ << ": " << value.size()
                                                << " bytes are too many to gather");
  const int size = static_cast<int>(value.size());
  std::vector<int> sizes(size_);
  MPI_Request request;
  DLC_MPI_CHECK(
      MPI_Igather(&size, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD, &request));
  Await(&request, timeout_s_, "a gather's sizes");
  std::vector<int> displacements(size_, 0);
  size_t total = 0;
  for (int r = 0; r < size_; ++r) {
    displacements[r] = static_cast<int>(total);
    total += sizes[r];
  }
  DLC_REQUIRE(rank_ != 0 || total < kMaxPiece, "gathering " << total << " bytes: too many");
  std::string all(rank_ == 0 ? total : 0, '\0');
  DLC_MPI_CHECK(MPI_Igatherv(value.data(), size, MPI_BYTE, &all[0], sizes.data(),
                             displacements.data(), MPI_BYTE, 0, MPI_COMM_WORLD, &request));
  Await(&request, timeout_s_, "gathered data");
  std::vector<std::string> values;
  if (rank_ == 0)
    for (int r = 0; r < size_; ++r) values.push_back(all.substr(displacements[r], sizes[r]));
  return values;
}

std::vector<uint64_t> ProcessGroup::AllGather(uint64_t value) {
  if (!uses_mpi_) return {value};
  std::vector<uint64_t> values(size_);
  MPI_Request request;
  DLC_MPI_CHECK(MPI_Iallgather(&value, 1, MPI_UINT64_T, values.data(), 1, MPI_UINT64_T,
                               MPI_COMM_WORLD, &request));
  Await(&request, timeout_s_, "an all-gather");
  return values;
}

int ProcessGroup::AllReduceOr(int value) {
  if (!uses_mpi_) return value;
  int result = 0;
  MPI_Request request;
  DLC_MPI_CHECK(
      MPI_Iallreduce(&value, &result, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD, &request));
  Await(&request, timeout_s_, "the agreement on stopping and snapshots");
  return result;
}

void ProcessGroup::AllReduceSum(float* values, size_t count) {
  if (!uses_mpi_) return;
  for (size_t done = 0; done < count; done += kMaxPiece) {
    const int piece = static_cast<int>(std::min<size_t>(kMaxPiece, count - done));
    MPI_Request request;
    DLC_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, values + done, piece, MPI_FLOAT, MPI_SUM,
                                 MPI_COMM_WORLD, &request));
    Await(&request, timeout_s_, "gradients");
  }
}

void ProcessGroup::Abort(int code) {
  if (uses_mpi_) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

#endif  // DLCAFFE_WITH_MPI

}  // namespace dlcaffe
