#include "dlcaffe/data_parallel.hpp"

#include <glog/logging.h>

#include <condition_variable>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include <unistd.h>

#include "dlcaffe/context.hpp"
#include "dlcaffe/error.hpp"
#include "replica_group.hpp"

namespace dlcaffe {

namespace {

// This machine's name, for the log of a job across hosts.
std::string HostName() {
  char name[256] = {};
  return gethostname(name, sizeof(name) - 1) == 0 ? std::string(name) : std::string("(unknown)");
}

// FNV-1a: the same on every host, unlike std::hash.
uint64_t Fingerprint(const std::string& bytes) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : bytes) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

// What must be alike on every process: the train net's layers and the shapes
// of its parameters.
std::string NetOutline(const Net& net) {
  std::ostringstream outline;
  for (size_t l = 0; l < net.layers().size(); ++l) {
    outline << net.layer_names()[l] << ":" << net.layers()[l]->type();
    for (const auto& blob : net.layers()[l]->blobs()) outline << "," << blob->shape_string();
    outline << ";";
  }
  return outline.str();
}

// Every process must train the same solver with as many devices (checked
// first: what follows depends on both) and on the same net; a mismatch found
// here is reported by all of them alike.
void CheckProcessesAgree(ProcessGroup& processes, const caffe::SolverParameter& param,
                         int local_count) {
  if (processes.size() == 1) return;
  const std::vector<uint64_t> counts = processes.AllGather(local_count);
  const std::vector<uint64_t> solvers = processes.AllGather(Fingerprint(param.SerializeAsString()));
  for (int r = 1; r < processes.size(); ++r) {
    DLC_REQUIRE(counts[r] == counts[0], "rank " << r << " trains on " << counts[r]
                                                << " device(s) and rank 0 on " << counts[0]
                                                << ": give every process as many (--device)");
    DLC_REQUIRE(solvers[r] == solvers[0],
                "rank " << r << "'s solver differs from rank 0's: every process must read "
                        << "the same solver file (--solver, with the same --stage/--level)");
  }
}

void CheckNetsAgree(ProcessGroup& processes, const Net& net) {
  if (processes.size() == 1) return;
  const std::vector<uint64_t> nets = processes.AllGather(Fingerprint(NetOutline(net)));
  for (int r = 1; r < processes.size(); ++r)
    DLC_REQUIRE(nets[r] == nets[0],
                "rank " << r << "'s train net differs from rank 0's (layers, or the shapes "
                        << "of their parameters): every process must read the same net");
}

// Replica 0 keeps the solver's seed (one replica trains as before); the
// others get seeds of their own, so that their crops, mirrors and dropout
// differ, reproducibly.
int64_t ReplicaSeed(int64_t seed, int replica) {
  if (replica == 0) return seed;
  // Replica k's seed is the k-th of the sequence that starts at `seed`,
  // kept non-negative (random_seed < 0 means none).
  return static_cast<int64_t>(
      MixSeed(static_cast<uint64_t>(seed) + 0x9e3779b97f4a7c15ull * (replica - 1)) >> 1);
}

}  // namespace

void TrainDataParallel(const caffe::SolverParameter& param, const DataParallelOptions& options,
                       ProcessGroup& processes) {
  const int local_count = static_cast<int>(options.devices.size());
  DLC_REQUIRE(local_count >= 1, "data-parallel training needs at least one device");
  DLC_REQUIRE(options.resume_file.empty() || options.weights.empty(),
              "give a solver state to resume or weights to start from, not both");
  CheckProcessesAgree(processes, param, local_count);
  ExchangeOptions exchange;
  exchange.bucket_bytes = options.bucket_bytes;
  exchange.bucket_taper = options.bucket_taper;
  exchange.sum_threads = options.exchange_threads;
  exchange.trace_path = options.exchange_trace;
  if (options.exchange_diagnosis == "copies") {
    exchange.mode = ExchangeOptions::Mode::kCopiesOnly;
  } else if (options.exchange_diagnosis == "none") {
    exchange.mode = ExchangeOptions::Mode::kNothing;
  } else {
    DLC_REQUIRE(options.exchange_diagnosis.empty(),
                "the exchange diagnosis must be 'copies' or 'none' (or empty), not '"
                    << options.exchange_diagnosis << "'");
  }
  if (exchange.mode != ExchangeOptions::Mode::kAll)
    LOG(WARNING) << "Exchange diagnosis '" << options.exchange_diagnosis
                 << "': gradients are not averaged, the replicas train apart: a measurement "
                    "of speed, not a training";
  ReplicaGroup group(processes, local_count, exchange);
  // What the replicas draw alike (shuffled list orders) comes from one seed:
  // the solver's, else the root's random one.
  const uint64_t shared_seed = std::stoull(processes.Broadcast(std::to_string(
      param.random_seed() >= 0 ? static_cast<uint64_t>(param.random_seed())
                               : static_cast<uint64_t>(std::random_device()()))));
  std::vector<std::unique_ptr<Context>> contexts;
  std::vector<std::unique_ptr<Solver>> solvers;
  // The exchange reads and writes the nets' gradients on the contexts'
  // devices: it stops (declared last, destroyed first) before they go. On an
  // H100 a failing replica's run otherwise ended in heap corruption.
  struct StopExchange {
    ReplicaGroup& group;
    ~StopExchange() { group.Stop(); }
  } stop_exchange{group};
  for (int i = 0; i < local_count; ++i) {
    const int replica = group.global_index(i);
    RunOptions run_options = options.run_options;
    run_options.device = options.devices[i];
    contexts.push_back(Context::Create(run_options));
    contexts.back()->set_replica({replica, group.count(), shared_seed});
    LOG(INFO) << "Replica " << replica << " of " << group.count() << ": OpenCL device "
              << contexts.back()->info().Describe();
    caffe::SolverParameter replica_param = param;
    // Without a random_seed the root stays unseeded, as one device trains;
    // the others still need generators of their own.
    const int64_t base_seed = param.random_seed() >= 0 ? param.random_seed()
                                                       : static_cast<int64_t>(shared_seed >> 1);
    replica_param.set_random_seed(replica == 0 ? param.random_seed()
                                               : ReplicaSeed(base_seed, replica));
    // The other replicas build the same nets: the root's log says it once.
    const int log_level = FLAGS_minloglevel;
    if (replica != 0) FLAGS_minloglevel = std::max(log_level, 1);
    try {
      solvers.push_back(SolverRegistry::Create(replica_param, *contexts.back()));
    } catch (...) {
      FLAGS_minloglevel = log_level;
      throw;
    }
    FLAGS_minloglevel = log_level;
  }
  CheckNetsAgree(processes, solvers[0]->net());
  for (int i = 0; i < local_count; ++i) {
    group.Attach(i, solvers[i]->net(), *contexts[i]);
    solvers[i]->set_replica_link(&group.link(i));
    solvers[i]->set_action_request(options.action_request);
  }
  if (group.global_index(0) == 0) {
    // The others get the root's weights before the first iteration.
    for (const std::string& file : options.weights) {
      LOG(INFO) << "Finetuning from " << file;
      solvers[0]->net().CopyTrainedLayersFrom(file);
      for (const auto& test_net : solvers[0]->test_nets()) test_net->CopyTrainedLayersFrom(file);
    }
  }
  // Where each process runs, said once by the root (the others log warnings
  // only): a job across hosts shows them all.
  const std::vector<std::string> hosts = processes.Gather(HostName());
  std::string where;
  for (size_t rank = 0; rank < hosts.size(); ++rank)
    where += (rank ? ", " : "") + std::string("rank ") + std::to_string(rank) + " on " + hosts[rank];
  LOG(INFO) << "Data-parallel training: " << group.count() << " replicas ("
            << processes.size() << " process(es) × " << local_count << " device(s); " << where
            << "), gradients averaged in buckets of " << options.bucket_bytes / double(1 << 20)
            << " MB" << (options.bucket_taper ? " (smaller at the end of backward)" : "")
            << (processes.sums_in_shared_memory() ? "; the processes sum them in shared memory"
                                                  : "");

  if (!processes.binding_note().empty()) LOG(INFO) << "MPI: " << processes.binding_note();

  std::mutex mutex;
  std::condition_variable finished_one;
  int finished = 0;
  std::vector<std::thread> threads;
  for (int i = 0; i < local_count; ++i)
    threads.emplace_back([&, i] {
      try {
        solvers[i]->Solve(options.resume_file);
        if (options.on_trained) options.on_trained(*solvers[i]);
      } catch (...) {
        group.Fail(group.Describe(i), std::current_exception());
      }
      std::lock_guard<std::mutex> lock(mutex);
      ++finished;
      finished_one.notify_all();
    });
  {
    std::unique_lock<std::mutex> lock(mutex);
    finished_one.wait(lock, [&] { return finished == local_count || group.failed(); });
  }
  if (group.failed() && processes.size() > 1) {
    // The other processes wait for this one's gradients: end them all.
    // One write, so that it does not mix with another rank's message.
    std::cerr << ("dlcaffe: error: " + group.FailureMessage() + "\n") << std::flush;
    processes.Abort(1);
  }
  for (auto& thread : threads) thread.join();
  if (group.failed()) DLC_FAIL(group.FailureMessage());
}

}  // namespace dlcaffe
