// Data-parallel training through the real tool: `mpirun -np 2 dlcaffe train`
// (one replica per process) and `dlcaffe train --device=0,0` (two replicas in
// threads of one process) learn MNIST like one process does, log once (only
// the root logs, tests and snapshots), and a 2-rank run resumed from a 2-rank
// snapshot continues bit for bit as the uninterrupted run (every replica's
// data position and random generators are in the snapshot).
// How runs end (signals to one rank, a killed rank, mismatched solvers):
// test_mpi_stops.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <regex>

#include "caffe.pb.h"
#include "dlcaffe/io.hpp"
#include "parallel/mpi_launch.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

// Caffe's LeNet solver (models/lenet/lenet_solver.prototxt) on MNIST, but for
// the rate: two replicas step with 2 × 64 images, so the rate doubles (the
// linear scaling rule), and 500 such steps see what the single-process
// end-to-end test's 1000 steps of 64 see (one epoch).
std::string LeNetSolver(const std::string& dir, int max_iter, int test_interval, int display,
                        int snapshot) {
  return WriteFile(dir, "lenet_solver.prototxt",
                   R"(net: "models/lenet/lenet_train_test.prototxt"
test_iter: 100
test_interval: )" + std::to_string(test_interval) + R"(
test_initialization: false
base_lr: 0.02
momentum: 0.9
weight_decay: 0.0005
lr_policy: "inv"
gamma: 0.0001
power: 0.75
display: )" + std::to_string(display) + R"(
max_iter: )" + std::to_string(max_iter) + R"(
snapshot: )" + std::to_string(snapshot) + R"(
snapshot_prefix: ")" + dir + R"(/lenet"
random_seed: 1701
type: "SGD"
)");
}

// The values of "<marker><number>" in the log, in order.
std::vector<double> Values(const std::string& log, const std::string& marker) {
  std::vector<double> values;
  for (size_t at = log.find(marker); at != std::string::npos; at = log.find(marker, at + 1))
    values.push_back(std::atof(log.c_str() + at + marker.size()));
  return values;
}

caffe::SolverState ReadState(const std::string& path) {
  caffe::SolverState state;
  try {
    ReadProtoFromBinaryFile(path, &state);
  } catch (const std::exception& e) {
    ADD_FAILURE() << path << ": " << e.what();
  }
  return state;
}

caffe::NetParameter ReadWeights(const std::string& path) {
  caffe::NetParameter weights;
  try {
    ReadProtoFromBinaryFile(path, &weights);
  } catch (const std::exception& e) {
    ADD_FAILURE() << path << ": " << e.what();
  }
  return weights;
}

bool HasRng(const caffe::SolverState& state, const std::string& name) {
  for (const auto& rng : state.rng_state())
    if (rng.name() == name) return true;
  return false;
}

const caffe::DataCursor* FindCursor(const caffe::SolverState& state, const std::string& name) {
  for (const auto& cursor : state.data_cursor())
    if (cursor.layer_name() == name) return &cursor;
  return nullptr;
}

// Every blob of every layer, bit for bit: "" if equal, else the first
// difference. `values` counts the floats compared.
std::string CompareWeights(const caffe::NetParameter& a, const caffe::NetParameter& b,
                           size_t* values) {
  *values = 0;
  if (a.layer_size() != b.layer_size())
    return std::to_string(a.layer_size()) + " layers against " + std::to_string(b.layer_size());
  for (int l = 0; l < a.layer_size(); ++l) {
    const auto& la = a.layer(l);
    const auto& lb = b.layer(l);
    if (la.name() != lb.name()) return "layer " + la.name() + " against " + lb.name();
    if (la.blobs_size() != lb.blobs_size()) return la.name() + ": blob counts differ";
    for (int k = 0; k < la.blobs_size(); ++k) {
      const auto& x = la.blobs(k);
      const auto& y = lb.blobs(k);
      if (x.data_size() != y.data_size())
        return la.name() + " blob " + std::to_string(k) + ": sizes differ";
      for (int i = 0; i < x.data_size(); ++i) {
        const float u = x.data(i), v = y.data(i);
        if (std::memcmp(&u, &v, sizeof(float)) != 0)
          return la.name() + " blob " + std::to_string(k) + " value " + std::to_string(i) +
                 ": " + std::to_string(u) + " against " + std::to_string(v);
      }
      *values += x.data_size();
    }
  }
  return "";
}

void ExpectSnapshotLoggedOnce(const std::string& log, const std::string& prefix, int iter) {
  const std::string stem = prefix + "_iter_" + std::to_string(iter);
  EXPECT_EQ(Count(log, "Snapshotting to binary proto file " + stem + ".caffemodel\n"), 1) << log;
  EXPECT_EQ(Count(log, "Snapshotting solver state to binary proto file " + stem +
                           ".solverstate\n"),
            1)
      << log;
}

}  // namespace

// 2 processes × 500 iterations × 64 images (one epoch in all), tested at 250
// and 500 over the 10,000 test images: the single-process bar (97%), with
// every log line, test and snapshot once.
TEST(MpiTraining, TwoRanksLearnLeNetOnMnist) {
  DLC_REQUIRE_MPI_AND_MNIST();
  const std::string dir = TempDir();
  const std::string solver = LeNetSolver(dir, 500, 250, 100, 250);
  Launch launch(MpirunDlcaffe(2, {"train", "--solver=" + solver}));
  const LaunchResult r = launch.Wait(240);
  std::cout << "mpirun -np 2 LeNet, 500 iterations: " << r.seconds << " s" << std::endl;
  ASSERT_FALSE(r.timed_out) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string& log = r.output;

  // It trained across the two processes, and only the root logged.
  EXPECT_EQ(Count(log, "Data-parallel training: 2 replicas (2 process(es) "), 1) << log;
  // The root names each process's host (here both the same machine's).
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof(host) - 1), 0);
  EXPECT_EQ(Count(log, "rank 0 on " + std::string(host) + ", rank 1 on " + host + ")"), 1) << log;
  EXPECT_EQ(Count(log, "Starting Optimization\n"), 1) << log;
  EXPECT_EQ(Count(log, "Creating training net"), 1) << log;
  EXPECT_EQ(Count(log, "Creating test net (#0)"), 1) << log;
  EXPECT_EQ(Count(log, "Solving LeNet\n"), 1) << log;
  for (int iter : {0, 100, 200, 300, 400})
    EXPECT_EQ(Count(log, "] Iteration " + std::to_string(iter) + " ("), 1) << iter << "\n" << log;
  EXPECT_EQ(Count(log, "    Speed: "), 4) << log;
  EXPECT_EQ(Count(log, "    Gradient exchange: "), 4) << log;
  EXPECT_EQ(Count(log, "] Iteration 500, loss = "), 1) << log;
  // One test at 250, one at the end.
  EXPECT_EQ(Count(log, "Testing net (#0)"), 2) << log;
  EXPECT_EQ(Count(log, "] Iteration 250, Testing net (#0)\n"), 1) << log;
  EXPECT_EQ(Count(log, "] Iteration 500, Testing net (#0)\n"), 1) << log;
  const std::vector<double> accuracy = Values(log, "    Test net output #0: accuracy = ");
  ASSERT_EQ(accuracy.size(), 2u) << log;
  std::cout << "test accuracy at 250: " << accuracy[0] << ", at 500: " << accuracy[1]
            << std::endl;
  EXPECT_GE(accuracy[1], 0.97);
  EXPECT_LE(accuracy[1], 1.0);
  EXPECT_EQ(Count(log, "Optimization Done.\n"), 1) << log;
  EXPECT_EQ(Count(log, "Optimization stopped early."), 0) << log;
  EXPECT_EQ(Count(log, "dlcaffe: error"), 0) << log;
  EXPECT_EQ(WarningOrErrorLines(log), 0) << log;

  // Snapshots at 250 and 500 (its iteration is a multiple of snapshot: no
  // second one after training), each written once, by the root.
  EXPECT_EQ(Count(log, "Snapshotting to binary proto file "), 2) << log;
  EXPECT_EQ(Count(log, "Snapshotting solver state to binary proto file "), 2) << log;
  ExpectSnapshotLoggedOnce(log, dir + "/lenet", 250);
  ExpectSnapshotLoggedOnce(log, dir + "/lenet", 500);
  EXPECT_EQ(SnapshotFiles(dir),
            (std::set<std::string>{"lenet_iter_250.caffemodel", "lenet_iter_250.solverstate",
                                   "lenet_iter_500.caffemodel", "lenet_iter_500.solverstate"}));
  const caffe::SolverState state = ReadState(dir + "/lenet_iter_500.solverstate");
  EXPECT_EQ(state.iter(), 500);
  EXPECT_EQ(state.learned_net(), dir + "/lenet_iter_500.caffemodel");
  EXPECT_TRUE(HasRng(state, "context"));
  EXPECT_TRUE(HasRng(state, "replica1/context"));
  EXPECT_GT(ReadWeights(dir + "/lenet_iter_500.caffemodel").layer_size(), 0);
}

// Two replicas in threads of one process, on the same device named twice.
TEST(MpiTraining, TwoReplicasInOneProcessLearn) {
  DLC_REQUIRE_MPI_AND_MNIST();
  const std::string dir = TempDir();
  const std::string solver = LeNetSolver(dir, 200, 200, 50, 100);
  Launch launch({DlcaffePath(), "train", "--solver=" + solver, "--device=0,0"});
  const LaunchResult r = launch.Wait(240);
  std::cout << "dlcaffe --device=0,0 LeNet, 200 iterations: " << r.seconds << " s" << std::endl;
  ASSERT_FALSE(r.timed_out) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string& log = r.output;

  EXPECT_EQ(Count(log, "Data-parallel training: 2 replicas (1 process(es) "), 1) << log;
  EXPECT_EQ(Count(log, "] Replica 0 of 2: "), 1) << log;
  EXPECT_EQ(Count(log, "] Replica 1 of 2: "), 1) << log;
  EXPECT_EQ(Count(log, "Creating training net"), 1) << log;
  EXPECT_EQ(Count(log, "Creating test net (#0)"), 1) << log;
  EXPECT_EQ(Count(log, "Solving LeNet\n"), 1) << log;
  for (int iter : {0, 50, 100, 150})
    EXPECT_EQ(Count(log, "] Iteration " + std::to_string(iter) + " ("), 1) << iter << "\n" << log;
  EXPECT_EQ(Count(log, "Testing net (#0)"), 1) << log;
  EXPECT_EQ(Count(log, "] Iteration 200, Testing net (#0)\n"), 1) << log;
  EXPECT_EQ(Count(log, "Optimization Done.\n"), 1) << log;
  EXPECT_EQ(WarningOrErrorLines(log), 0) << log;
  EXPECT_EQ(Count(log, "Snapshotting to binary proto file "), 2) << log;
  ExpectSnapshotLoggedOnce(log, dir + "/lenet", 100);
  ExpectSnapshotLoggedOnce(log, dir + "/lenet", 200);
  EXPECT_EQ(SnapshotFiles(dir),
            (std::set<std::string>{"lenet_iter_100.caffemodel", "lenet_iter_100.solverstate",
                                   "lenet_iter_200.caffemodel", "lenet_iter_200.solverstate"}));

  // The loss falls: from about ln 10 at the start to a fraction of it.
  const size_t first = log.find("] Iteration 0 (");
  ASSERT_NE(first, std::string::npos) << log;
  const size_t loss_at = log.find("loss = ", first);
  const double start_loss = std::atof(log.c_str() + loss_at + 7);
  const std::vector<double> last = Values(log, "] Iteration 200, loss = ");
  ASSERT_EQ(last.size(), 1u) << log;
  std::cout << "loss " << start_loss << " -> " << last[0] << std::endl;
  EXPECT_GT(start_loss, 2.0) << log;
  EXPECT_LT(last[0], 0.5) << log;
  EXPECT_LT(last[0], start_loss / 4) << log;
  const std::vector<double> accuracy = Values(log, "    Test net output #0: accuracy = ");
  ASSERT_EQ(accuracy.size(), 1u) << log;
  std::cout << "test accuracy at 200: " << accuracy[0] << std::endl;
  EXPECT_GE(accuracy[0], 0.95);
}

// 2 ranks to 2K without a stop, and 2 ranks resumed from the first run's
// snapshot at K to 2K: the same weights, bit for bit. Random crops and
// mirrors (each replica's Data layer generator), dropout (each replica's
// context generator) and momentum (the solver's history) must all resume.
TEST(MpiTraining, TwoRankResumeFromTwoRankSnapshotIsExact) {
  DLC_REQUIRE_MPI_AND_MNIST();
  constexpr int K = 20;
  const std::string dir = TempDir();
  const std::string net =
      WriteFile(dir, "lenet_train.prototxt",
                LeNetTrainNet("scale: 0.00390625 crop_size: 24 mirror: true",
                              R"(layer { name: "drop1" type: "Dropout" bottom: "ip1" top: "ip1"
  dropout_param { dropout_ratio: 0.5 } })"));
  const auto solver = [&](const std::string& name) {
    const std::string out = dir + "/" + name;
    std::filesystem::create_directory(out);
    return WriteFile(dir, name + "_solver.prototxt", "net: \"" + net + R"("
base_lr: 0.01
momentum: 0.9
weight_decay: 0.0005
lr_policy: "inv"
gamma: 0.0001
power: 0.75
display: 10
max_iter: )" + std::to_string(2 * K) + R"(
snapshot: )" + std::to_string(K) + R"(
snapshot_prefix: ")" + out + R"(/lenet"
random_seed: 1701
type: "SGD"
)");
  };
  const std::string whole_dir = dir + "/whole", resumed_dir = dir + "/resumed";
  const std::string whole_solver = solver("whole"), resumed_solver = solver("resumed");

  Launch whole(MpirunDlcaffe(2, {"train", "--solver=" + whole_solver}));
  const LaunchResult w = whole.Wait(120);
  ASSERT_FALSE(w.timed_out) << w.output;
  ASSERT_EQ(w.exit_code, 0) << w.output;
  const std::string k_state = whole_dir + "/lenet_iter_" + std::to_string(K) + ".solverstate";
  const std::string k_weights = whole_dir + "/lenet_iter_" + std::to_string(K) + ".caffemodel";
  const std::string end_weights =
      "/lenet_iter_" + std::to_string(2 * K) + ".caffemodel";
  ASSERT_TRUE(FileExists(k_state)) << w.output;

  // The snapshot holds both replicas' data positions, at their own shares
  // (replica r reads records r, r + 2, ...: K × 64 records each so far).
  const caffe::SolverState state = ReadState(k_state);
  EXPECT_EQ(state.iter(), K);
  const caffe::DataCursor* root = FindCursor(state, "train/mnist");
  const caffe::DataCursor* other = FindCursor(state, "replica1/train/mnist");
  ASSERT_NE(root, nullptr) << state.DebugString();
  ASSERT_NE(other, nullptr) << state.DebugString();
  EXPECT_NE(root->key(), other->key()) << state.DebugString();
  EXPECT_EQ(root->position(), uint64_t(K) * 64) << state.DebugString();
  EXPECT_EQ(other->position(), uint64_t(K) * 64) << state.DebugString();
  for (const char* rng : {"context", "train/mnist", "replica1/context", "replica1/train/mnist"})
    EXPECT_TRUE(HasRng(state, rng)) << rng << "\n" << state.DebugString();

  Launch resumed(
      MpirunDlcaffe(2, {"train", "--solver=" + resumed_solver, "--snapshot=" + k_state}));
  const LaunchResult r = resumed.Wait(120);
  ASSERT_FALSE(r.timed_out) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::cout << "uninterrupted run: " << w.seconds << " s, resumed run: " << r.seconds << " s"
            << std::endl;
  EXPECT_EQ(Count(r.output, "Restoring previous solver status from " + k_state), 1) << r.output;
  // Same replica count: no warning that the run cannot continue exactly.
  EXPECT_EQ(Count(r.output, "does not continue exactly"), 0) << r.output;
  EXPECT_EQ(WarningOrErrorLines(w.output), 0) << w.output;
  EXPECT_EQ(WarningOrErrorLines(r.output), 0) << r.output;
  EXPECT_EQ(Count(r.output, "] Iteration " + std::to_string(K) + " ("), 1) << r.output;
  EXPECT_EQ(Count(r.output, "] Iteration 0 ("), 0) << r.output;
  EXPECT_EQ(SnapshotFiles(resumed_dir),
            (std::set<std::string>{"lenet_iter_" + std::to_string(2 * K) + ".caffemodel",
                                   "lenet_iter_" + std::to_string(2 * K) + ".solverstate"}));

  const caffe::NetParameter at_k = ReadWeights(k_weights);
  const caffe::NetParameter whole_end = ReadWeights(whole_dir + end_weights);
  const caffe::NetParameter resumed_end = ReadWeights(resumed_dir + end_weights);
  size_t values = 0;
  EXPECT_EQ(CompareWeights(whole_end, resumed_end, &values), "");
  // Every parameter was compared: on 24 × 24 crops, conv1 520, conv2 25,050,
  // ip1 225,500, ip2 5,010.
  EXPECT_EQ(values, 256080u);
  // ... and they moved between K and 2K (the comparison is not of two copies of
  // the starting point).
  EXPECT_NE(CompareWeights(at_k, whole_end, &values), "");
}

// The ranks of one host sum their gradients through shared memory
// (parallel/shared_memory_sum.hpp); DLCAFFE_SHARED_MEMORY_SUM=off keeps
// MPI_Allreduce. Of two values both give the one float (a + b) * 0.5, so 20
// steps of 2 ranks end with the same weights bit for bit, and the log says
// which way they went. The shared run binds each rank to one core, as mpirun
// does by default for two ranks: each then runs on every CPU instead, and
// the log says so (process_group.cpp, WidenSingleCpuBinding).
TEST(MpiTraining, SharedMemorySumsAsMpiAllreduceDoes) {
  DLC_REQUIRE_MPI_AND_MNIST();
  const std::string dir = TempDir();
  const std::string net =
      WriteFile(dir, "lenet_train.prototxt", LeNetTrainNet("scale: 0.00390625"));
  const auto run = [&](const std::string& name, bool shared) {
    const std::string out = dir + "/" + name;
    std::filesystem::create_directory(out);
    const std::string solver = WriteFile(dir, name + "_solver.prototxt", "net: \"" + net + R"("
base_lr: 0.01
momentum: 0.9
lr_policy: "fixed"
display: 10
max_iter: 20
snapshot_prefix: ")" + out + R"(/lenet"
random_seed: 1701
type: "SGD"
)");
    std::vector<std::string> argv = MpirunDlcaffe(2, {"train", "--solver=" + solver});
    if (shared)
      argv.insert(argv.begin() + 1, {"--bind-to", "core"});
    else
      argv.insert(argv.begin() + 1, {"-x", "DLCAFFE_SHARED_MEMORY_SUM=off"});
    Launch launch(argv);
    const LaunchResult r = launch.Wait(120);
    EXPECT_FALSE(r.timed_out) << r.output;
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(Count(r.output, "; the processes sum them in shared memory"), shared ? 1 : 0)
        << r.output;
    if (shared && std::thread::hardware_concurrency() >= 2) {
      EXPECT_EQ(Count(r.output, "MPI: the launcher bound each process to one CPU"), 1)
          << r.output;
    }
    EXPECT_EQ(WarningOrErrorLines(r.output), 0) << r.output;
    return ReadWeights(out + "/lenet_iter_20.caffemodel");
  };
  const caffe::NetParameter shared = run("shared", true);
  const caffe::NetParameter allreduce = run("allreduce", false);
  size_t values = 0;
  EXPECT_EQ(CompareWeights(shared, allreduce, &values), "");
  EXPECT_GT(values, 0u);
}

}  // namespace test
}  // namespace dlcaffe
