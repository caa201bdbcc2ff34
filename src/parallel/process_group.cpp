#include "dlcaffe/process_group.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <iostream>
#include <map>
#include <mutex>
#include <cstdlib>
#include <cstring>
#include <thread>

#ifdef __linux__
#include <sched.h>
#endif

#include "dlcaffe/error.hpp"

#ifdef DLCAFFE_WITH_MPI
#include "parallel/host_sum.hpp"
#include "parallel/mpi_check.hpp"
#include "parallel/shared_memory_sum.hpp"
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

#ifndef DLCAFFE_WITH_MPI

struct ProcessGroup::Watchdog {};
struct ProcessGroup::GradientChannel {};
ProcessGroup::ProcessGroup() = default;

std::unique_ptr<ProcessGroup> ProcessGroup::Single() {
  return std::unique_ptr<ProcessGroup>(new ProcessGroup());
}

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
void ProcessGroup::PrepareGradientSums(size_t, size_t, bool) {}
bool ProcessGroup::sums_in_shared_memory() const { return false; }
void ProcessGroup::AllReduceSum(float*, size_t, size_t, float, int) {}
void ProcessGroup::Abort(int code) { std::exit(code); }

#else  // DLCAFFE_WITH_MPI

bool ProcessGroup::built_with_mpi() { return true; }

namespace {

constexpr size_t kMaxPiece = kMpiMaxPiece;

// mpirun binds each rank to one core by default when it starts two ranks or
// fewer (OpenMPI 4). A rank runs the gradient exchange, its summing threads
// and the OpenCL driver's threads beside training; on one core they starved
// one another: LeNet under `mpirun -np 2` on 2 H100s stalled for minutes
// where `--bind-to none` trained in 2.4 s. So a rank bound to a single CPU
// may run on every CPU of the host (those its cpuset allows); a binding to
// two or more CPUs is the user's choice and stays. Called before any thread
// of ours starts, so all of them inherit it.
std::string WidenSingleCpuBinding() {
#ifdef __linux__
  cpu_set_t bound;
  CPU_ZERO(&bound);
  if (sched_getaffinity(0, sizeof(bound), &bound) != 0 || CPU_COUNT(&bound) != 1) return "";
  cpu_set_t every;
  CPU_ZERO(&every);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) CPU_SET(cpu, &every);
  if (sched_setaffinity(0, sizeof(every), &every) != 0) return "";
  cpu_set_t now;
  CPU_ZERO(&now);
  if (sched_getaffinity(0, sizeof(now), &now) != 0 || CPU_COUNT(&now) < 2) return "";
  return "the launcher bound each process to one CPU (mpirun does by default for 2 "
         "processes or fewer), too few for training beside the gradient exchange: allowed " +
         std::to_string(CPU_COUNT(&now)) +
         " CPUs instead (to choose yourself, give each process two or more, e.g. mpirun "
         "--map-by slot:PE=4, or --bind-to none)";
#else
  return "";
#endif
}

}  // namespace

// Watches the collective in progress: one that takes longer than the
// timeout ends the job, since a blocking MPI call cannot be given up.
struct ProcessGroup::GradientChannel {
  MPI_Comm comm = MPI_COMM_NULL;
  std::unique_ptr<SharedMemorySum> shared;  // null where it does not apply
  ~GradientChannel() {
    shared.reset();  // its communicator and window first
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
};

// Collectives may be in flight on two threads at once (gradients on one,
// decisions on another): each is watched on its own.
struct ProcessGroup::Watchdog {
  explicit Watchdog(const ProcessGroup& group) : group(group) {
    thread = std::thread([this] { Run(); });
  }
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    changed.notify_all();
    thread.join();
  }
  int Begin(const char* what) {
    std::lock_guard<std::mutex> lock(mutex);
    waiting[++last_id] = {what, std::chrono::steady_clock::now()};
    return last_id;
  }
  void End(int id) {
    std::lock_guard<std::mutex> lock(mutex);
    waiting.erase(id);
  }
  void Run() {
    std::unique_lock<std::mutex> lock(mutex);
    while (!stopping) {
      changed.wait_for(lock, std::chrono::milliseconds(100));
      for (const auto& [id, entry] : waiting) {
        const double waited = std::chrono::duration<double>(
                                  std::chrono::steady_clock::now() - entry.second)
                                  .count();
        if (waited < group.timeout()) continue;
        // One write, so that it does not mix with another rank's lines.
        std::cerr << ("dlcaffe: error: rank " + std::to_string(group.rank()) + ": waited " +
                      std::to_string(static_cast<long>(waited)) + " s for " + entry.first +
                      " from the other ranks; one of them is stuck or gone (the limit is "
                      "--replica_timeout)\n")
                  << std::flush;
        MPI_Abort(MPI_COMM_WORLD, 1);
        std::_Exit(1);
      }
    }
  }

  const ProcessGroup& group;
  std::mutex mutex;
  std::condition_variable changed;
  std::map<int, std::pair<const char*, std::chrono::steady_clock::time_point>> waiting;
  int last_id = 0;
  bool stopping = false;
  std::thread thread;
};

namespace {

// A collective under the watchdog's eye for its lifetime.
class Watched {
 public:
  Watched(ProcessGroup::Watchdog* watchdog, const char* what) : watchdog_(watchdog) {
    if (watchdog_) id_ = watchdog_->Begin(what);
  }
  ~Watched() {
    if (watchdog_) watchdog_->End(id_);
  }

 private:
  ProcessGroup::Watchdog* watchdog_;
  int id_ = 0;
};

}  // namespace

ProcessGroup::ProcessGroup() = default;

std::unique_ptr<ProcessGroup> ProcessGroup::Single() {
  return std::unique_ptr<ProcessGroup>(new ProcessGroup());
}

std::unique_ptr<ProcessGroup> ProcessGroup::Join(int* argc, char*** argv) {
  if (LauncherWorldSize() <= 1) return Single();
  int provided = 0;
  DLC_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
  const std::string binding_note = WidenSingleCpuBinding();
  // Gradients are exchanged by a thread of their own, and the training
  // thread waits for it before its own collectives, so calls come from two
  // threads, never at the same time (the gradients' on a communicator of
  // their own all the same); the watchdog may end the job from a third.
  DLC_REQUIRE(provided >= MPI_THREAD_SERIALIZED,
              "the MPI library offers thread support level " << provided
                  << "; data-parallel training needs MPI_THREAD_SERIALIZED or more");
  // Errors come back as codes (and become dlcaffe::Error) instead of aborting.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::unique_ptr<ProcessGroup> group(new ProcessGroup());
  group->uses_mpi_ = true;
  group->binding_note_ = binding_note;
  MPI_Comm_rank(MPI_COMM_WORLD, &group->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &group->size_);
  MPI_Comm local;
  DLC_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, group->rank_,
                                    MPI_INFO_NULL, &local));
  MPI_Comm_rank(local, &group->local_rank_);
  MPI_Comm_free(&local);
  group->gradients_ = std::make_unique<GradientChannel>();
  DLC_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &group->gradients_->comm));
  MPI_Comm_set_errhandler(group->gradients_->comm, MPI_ERRORS_RETURN);
  group->watchdog_ = std::make_unique<Watchdog>(*group);
  return group;
}

ProcessGroup::~ProcessGroup() {
  watchdog_.reset();
  gradients_.reset();
  if (uses_mpi_) MPI_Finalize();
}

std::string ProcessGroup::Broadcast(const std::string& value) {
  if (!uses_mpi_) return value;
  Watched watched(watchdog_.get(), "a broadcast");
  uint64_t size = value.size();
  DLC_MPI_CHECK(MPI_Bcast(&size, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD));
  std::string result = rank_ == 0 ? value : std::string(size, '\0');
  for (size_t done = 0; done < size; done += kMaxPiece) {
    const int piece = static_cast<int>(std::min<size_t>(kMaxPiece, size - done));
    DLC_MPI_CHECK(MPI_Bcast(&result[done], piece, MPI_BYTE, 0, MPI_COMM_WORLD));
  }
  return result;
}

std::vector<std::string> ProcessGroup::Gather(const std::string& value) {
  if (!uses_mpi_) return {value};
  DLC_REQUIRE(value.size() < kMaxPiece, "rank " << rank_ << ": " << value.size()
                                                << " bytes are too many to gather");
  Watched watched(watchdog_.get(), "a gather");
  const int size = static_cast<int>(value.size());
  std::vector<int> sizes(size_);
  DLC_MPI_CHECK(MPI_Gather(&size, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD));
  std::vector<int> displacements(size_, 0);
  size_t total = 0;
  for (int r = 0; r < size_; ++r) {
    displacements[r] = static_cast<int>(total);
    total += sizes[r];
  }
  DLC_REQUIRE(rank_ != 0 || total < kMaxPiece, "gathering " << total << " bytes: too many");
  std::string all(rank_ == 0 ? total : 0, '\0');
  DLC_MPI_CHECK(MPI_Gatherv(value.data(), size, MPI_BYTE, &all[0], sizes.data(),
                            displacements.data(), MPI_BYTE, 0, MPI_COMM_WORLD));
  std::vector<std::string> values;
  if (rank_ == 0)
    for (int r = 0; r < size_; ++r) values.push_back(all.substr(displacements[r], sizes[r]));
  return values;
}

std::vector<uint64_t> ProcessGroup::AllGather(uint64_t value) {
  if (!uses_mpi_) return {value};
  Watched watched(watchdog_.get(), "an all-gather");
  std::vector<uint64_t> values(size_);
  DLC_MPI_CHECK(
      MPI_Allgather(&value, 1, MPI_UINT64_T, values.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD));
  return values;
}

int ProcessGroup::AllReduceOr(int value) {
  if (!uses_mpi_) return value;
  Watched watched(watchdog_.get(), "the agreement on stopping and snapshots");
  int result = 0;
  DLC_MPI_CHECK(MPI_Allreduce(&value, &result, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD));
  return result;
}

void ProcessGroup::PrepareGradientSums(size_t floats, size_t buckets, bool shared_memory) {
  if (!uses_mpi_) return;
  gradients_->shared.reset();
  if (!shared_memory) return;  // the same on every rank
  Watched watched(watchdog_.get(), "the shared memory for gradients");
  auto shared = std::make_unique<SharedMemorySum>(gradients_->comm, floats, buckets);
  if (shared->applies()) gradients_->shared = std::move(shared);
}

bool ProcessGroup::sums_in_shared_memory() const { return gradients_ && gradients_->shared; }

void ProcessGroup::AllReduceSum(float* values, size_t count, size_t offset, float scale,
                                int threads) {
  if (!uses_mpi_) return;
  Watched watched(watchdog_.get(), "gradients");
  if (gradients_->shared)
    return gradients_->shared->AllReduce(values, count, offset, scale, threads);
  for (size_t done = 0; done < count; done += kMaxPiece) {
    const int piece = static_cast<int>(std::min<size_t>(kMaxPiece, count - done));
    DLC_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values + done, piece, MPI_FLOAT, MPI_SUM,
                                gradients_->comm));
  }
  SumInto(values, {}, count, scale, threads);
}

void ProcessGroup::Abort(int code) {
  if (uses_mpi_) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

#endif  // DLCAFFE_WITH_MPI

}  // namespace dlcaffe
