// Data-parallel runs in one process (TrainDataParallel with two replicas on
// the default device): exact resume of a multi-replica run, a stop asked of
// one replica that stops all, a failing replica that ends the run with its
// name instead of leaving the others waiting, and the exchange's options
// (summing threads, the timeline, the diagnoses).
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "caffe.pb.h"
#include "dlcaffe/data_parallel.hpp"
#include "dlcaffe/io.hpp"
#include "dlcaffe/solver.hpp"
#include "util/datum_database.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

// Records of 1 × 6 × 6 pixels (i * 29 + j * 7) % 256, label i % 3; the
// record `odd_one` (if any) is 1 × 5 × 5 instead.
std::string MakeDataset(int records, int odd_one = -1) {
  const std::string path = TempDir() + "/db";
  WriteDatumDatabase(path, records, [odd_one](int i) {
    const int side = i == odd_one ? 5 : 6;
    return RawDatum(1, side, side, i % 3, [i](int j) { return i * 29 + j * 7; });
  });
  return path;
}

// Random crops and mirrors, and a dropout: each replica draws its own, and
// exact resume must restore every replica's generators.
caffe::SolverParameter Solver(const std::string& source, const std::string& prefix, int iters) {
  caffe::SolverParameter param;
  ReadProtoFromTextString(R"(name: "crops"
layer { name: "data" type: "Data" top: "data" top: "label"
  transform_param { scale: 0.00390625 crop_size: 4 mirror: true }
  data_param { source: ")" + source + R"(" batch_size: 3 backend: LMDB } }
layer { name: "ip1" type: "InnerProduct" bottom: "data" top: "ip1"
  inner_product_param { num_output: 6 weight_filler { type: "gaussian" std: 0.3 } } }
layer { name: "drop" type: "Dropout" bottom: "ip1" top: "ip1" dropout_param { dropout_ratio: 0.3 } }
layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2"
  inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.3 } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" }
)",
                          "the test's net", param.mutable_net_param());
  param.set_type("SGD");
  param.set_base_lr(0.1f);
  param.set_momentum(0.9f);
  param.set_lr_policy("fixed");
  param.set_max_iter(iters);
  param.set_display(0);
  param.set_snapshot(0);
  param.set_snapshot_prefix(prefix);
  param.set_snapshot_after_train(true);
  param.set_random_seed(77);
  return param;
}

DataParallelOptions TwoReplicas() {
  DataParallelOptions options;
  options.devices = {"", ""};
  options.bucket_bytes = 100;
  return options;
}

std::string ModelBytes(const std::string& prefix, int iter) {
  return ReadFileBytes(prefix + "_iter_" + std::to_string(iter) + ".caffemodel");
}

TEST(ReplicaRuns, ResumeOfATwoReplicaRunIsExact) {
  const std::string dir = TempDir();
  const std::string source = MakeDataset(17);
  auto processes = ProcessGroup::Single();
  // Uninterrupted to 12, with a snapshot at 5 on the way.
  caffe::SolverParameter straight = Solver(source, dir + "/straight", 12);
  straight.set_snapshot(5);
  TrainDataParallel(straight, TwoReplicas(), *processes);
  // Resumed from that snapshot at 5, to 12.
  caffe::SolverParameter resumed = Solver(source, dir + "/resumed", 12);
  DataParallelOptions options = TwoReplicas();
  options.resume_file = dir + "/straight_iter_5.solverstate";
  TrainDataParallel(resumed, options, *processes);

  // The snapshot holds both replicas' data positions and generators.
  caffe::SolverState state;
  ReadProtoFromBinaryFile(options.resume_file, &state);
  std::vector<std::string> cursors;
  for (const auto& cursor : state.data_cursor()) cursors.push_back(cursor.layer_name());
  EXPECT_EQ(cursors, (std::vector<std::string>{"train/data", "replica1/train/data"}));
  int context_rngs = 0;
  for (const auto& rng : state.rng_state())
    context_rngs += rng.name() == "context" || rng.name() == "replica1/context";
  EXPECT_EQ(context_rngs, 2);

  const std::string want = ModelBytes(dir + "/straight", 12);
  ASSERT_FALSE(want.empty());
  EXPECT_TRUE(ModelBytes(dir + "/resumed", 12) == want)
      << "the resumed run's weights at iteration 12 differ from the uninterrupted run's";
  EXPECT_FALSE(ModelBytes(dir + "/straight", 5) == want);  // training moved them
}

TEST(ReplicaRuns, AStopAskedOfOneReplicaStopsAllAtTheSameIteration) {
  const std::string dir = TempDir();
  auto processes = ProcessGroup::Single();
  DataParallelOptions options = TwoReplicas();
  // One replica (whichever polls seventh) is asked to stop.
  std::atomic<int> polls{0};
  options.action_request = [&polls]() {
    return ++polls == 7 ? SolverAction::kStop : SolverAction::kNone;
  };
  std::mutex mutex;
  std::vector<int> stopped_at(2, -1);
  std::vector<bool> early(2, false);
  options.on_trained = [&](dlcaffe::Solver& solver) {
    std::lock_guard<std::mutex> lock(mutex);
    const int replica = solver.net().context().replica().index;
    stopped_at[replica] = solver.iter();
    early[replica] = solver.requested_early_exit();
  };
  TrainDataParallel(Solver(MakeDataset(11), dir + "/stop", 100), options, *processes);
  // Each replica polls once per iteration, and no replica passes an
  // iteration's decision before both polled: the seventh poll is one
  // replica's after iteration 4. Both stopped there, and one snapshot of it
  // was written.
  EXPECT_EQ(stopped_at[0], 4);
  EXPECT_EQ(stopped_at[1], 4);
  EXPECT_TRUE(early[0] && early[1]);
  EXPECT_TRUE(FileExists(dir + "/stop_iter_" + std::to_string(stopped_at[0]) + ".solverstate"));
  EXPECT_FALSE(FileExists(dir + "/stop_iter_100.solverstate"));
}

// Each replica draws its own crops, mirrors and dropout masks, with or
// without a random_seed (without one, replica 0's generator starts unseeded
// as on one device, and the others' from the run's shared random seed).
TEST(ReplicaRuns, ReplicasDrawFromGeneratorsOfTheirOwn) {
  for (const bool seeded : {true, false}) {
    caffe::SolverParameter param = Solver(MakeDataset(9), TempDir() + "/r", 3);
    param.set_snapshot_after_train(false);
    if (!seeded) param.clear_random_seed();
    std::mutex mutex;
    std::vector<Rng> generators(2);
    DataParallelOptions options = TwoReplicas();
    options.on_trained = [&](dlcaffe::Solver& solver) {
      std::lock_guard<std::mutex> lock(mutex);
      generators[solver.net().context().replica().index] = solver.net().context().rng();
    };
    auto processes = ProcessGroup::Single();
    TrainDataParallel(param, options, *processes);
    EXPECT_NE(generators[0], generators[1]) << (seeded ? "with" : "without") << " random_seed";
  }
}

TEST(ReplicaRuns, AFailingReplicaEndsTheRunNamingItself) {
  const std::string dir = TempDir();
  auto processes = ProcessGroup::Single();
  // Record 3 is 5 × 5: replica 1 of 2 reads records 1 and 3 in its first
  // batch, which cannot hold both; replica 0 never sees record 3 there.
  const std::string source = MakeDataset(12, 3);
  std::string message;
  try {
    TrainDataParallel(Solver(source, dir + "/fail", 50), TwoReplicas(), *processes);
  } catch (const Error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("replica 1 of 2"), std::string::npos) << message;
  EXPECT_NE(message.find("00000003"), std::string::npos) << message;
  EXPECT_NE(message.find("one size"), std::string::npos) << message;
  EXPECT_FALSE(FileExists(dir + "/fail_iter_50.caffemodel"));
}

TEST(ReplicaRuns, AnUnknownDeviceIsAnErrorBeforeTraining) {
  auto processes = ProcessGroup::Single();
  DataParallelOptions options;
  options.devices = {"", "ocl:97:0"};
  EXPECT_THROW(
      TrainDataParallel(Solver(MakeDataset(6), TempDir() + "/x", 5), options, *processes),
      Error);
}

using Weights = std::vector<std::vector<float>>;

// Trains two replicas with `options` (devices and buckets: TwoReplicas');
// returns each one's weights, by replica index.
std::vector<Weights> TrainTwo(const caffe::SolverParameter& param, DataParallelOptions options) {
  std::mutex mutex;
  std::vector<Weights> weights(2);
  options.on_trained = [&](dlcaffe::Solver& solver) {
    std::lock_guard<std::mutex> lock(mutex);
    for (const Blob* p : solver.net().learnable_params())
      weights[solver.net().context().replica().index].push_back(p->ReadData());
  };
  auto processes = ProcessGroup::Single();
  TrainDataParallel(param, options, *processes);
  return weights;
}

// The number of summing threads changes nothing: each element is summed in
// the same order.
TEST(ReplicaRuns, SummingThreadsDoNotChangeTheWeights) {
  caffe::SolverParameter param = Solver(MakeDataset(13), TempDir() + "/t", 6);
  param.set_snapshot_after_train(false);
  DataParallelOptions one = TwoReplicas(), three = TwoReplicas();
  one.exchange_threads = 1;
  three.exchange_threads = 3;
  one.bucket_bytes = three.bucket_bytes = 1 << 20;  // one bucket: a whole net's split
  EXPECT_EQ(TrainTwo(param, one), TrainTwo(param, three));
}

// The timeline: a line per replica and per bucket at every step, each
// phase no earlier than the one before it.
TEST(ReplicaRuns, TheExchangeTraceHasEveryStepInOrder) {
  const int iters = 5;
  caffe::SolverParameter param = Solver(MakeDataset(13), TempDir() + "/t", iters);
  param.set_snapshot_after_train(false);
  DataParallelOptions options = TwoReplicas();
  options.exchange_trace = TempDir() + "/exchange.trace";
  options.bucket_taper = false;
  TrainTwo(param, options);
  std::ifstream trace(options.exchange_trace);
  std::map<std::string, int> lines;
  std::map<int, double> exchange_done;  // replica 0's, by step
  std::map<int, double> latest_write;   // by step
  std::string line;
  while (std::getline(trace, line)) {
    std::istringstream words(line);
    std::string kind, name;
    int step = 0, index = 0;
    words >> kind >> step >> index;
    std::vector<double> times;
    double value = 0;
    while (words >> name >> value)
      if (name != "floats" && name != "start") times.push_back(value);
    ++lines[kind];
    EXPECT_GE(step, 1);
    EXPECT_LE(step, iters);
    for (size_t k = 1; k < times.size(); ++k)
      EXPECT_LE(times[k - 1], times[k]) << "phases out of order: " << line;
    if (kind == "replica" && index == 0) exchange_done[step] = times.back();
    if (kind == "bucket") latest_write[step] = std::max(latest_write[step], times.back());
  }
  // 123 floats of parameters (6x16 + 6 and 3x6 + 3) in equal buckets of 25.
  EXPECT_EQ(lines["replica"], 2 * iters);
  EXPECT_EQ(lines["bucket"], 5 * iters);
  for (const auto& [step, written] : latest_write)
    EXPECT_LE(written, exchange_done[step] + 1e-3) << "step " << step;
}

// The diagnoses leave the replicas training apart (their data differ), and
// say so; an unknown one is refused before training.
TEST(ReplicaRuns, ExchangeDiagnosesLeaveTheReplicasApart) {
  caffe::SolverParameter param = Solver(MakeDataset(13), TempDir() + "/t", 4);
  param.set_snapshot_after_train(false);
  EXPECT_EQ(TrainTwo(param, TwoReplicas())[0], TrainTwo(param, TwoReplicas())[1]);
  for (const char* diagnosis : {"none", "copies"}) {
    DataParallelOptions options = TwoReplicas();
    options.exchange_diagnosis = diagnosis;
    const std::vector<Weights> apart = TrainTwo(param, options);
    EXPECT_NE(apart[0], apart[1]) << diagnosis;
  }
  DataParallelOptions bad = TwoReplicas();
  bad.exchange_diagnosis = "some";
  try {
    TrainTwo(param, bad);
    ADD_FAILURE() << "an unknown diagnosis was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'some'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
