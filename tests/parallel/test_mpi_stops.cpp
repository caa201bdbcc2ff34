// How a 2-rank `mpirun dlcaffe train` ends other than by finishing: SIGINT to
// one rank stops every rank after the same iteration with one complete final
// snapshot; SIGHUP to one rank snapshots and training goes on; a rank killed
// by a signal ends the whole job, named; ranks given different solvers stop
// at the start with an error naming the rank. Nothing may hang: every launch
// runs under a deadline, after which the test kills it and fails.
// Training itself (learning, logs, exact resume): test_mpi_training.cpp.
#include <gtest/gtest.h>
#include <signal.h>

#include <iostream>
#include <regex>

#include "caffe.pb.h"
#include "dlcaffe/io.hpp"
#include "parallel/mpi_launch.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

constexpr double kLaunchDeadline = 120;  // seconds for a whole launch (they take a few)
constexpr double kEndAfterSignal = 60;   // seconds from the signal to mpirun's exit

// LeNet on MNIST with no end in sight (a run ends here by a signal, or by the
// deadline if the signal is lost), logging every 5 iterations.
std::string EndlessSolver(const std::string& dir, const std::string& name,
                          const std::string& base_lr = "0.01") {
  const std::string net =
      WriteFile(dir, "lenet_train.prototxt", LeNetTrainNet("scale: 0.00390625"));
  return WriteFile(dir, name, "net: \"" + net + R"("
base_lr: )" + base_lr + R"(
momentum: 0.9
lr_policy: "fixed"
display: 5
max_iter: 100000
snapshot_prefix: ")" + dir + R"(/lenet"
random_seed: 1701
type: "SGD"
)");
}

// The iteration N of each "<what> <dir>/lenet_iter_N.<ext>" line, in order.
std::vector<int> SnapshotIterations(const std::string& log, const std::string& what,
                                    const std::string& dir, const std::string& ext) {
  std::vector<int> iters;
  const std::string marker = what + " " + dir + "/lenet_iter_";
  for (size_t at = log.find(marker); at != std::string::npos; at = log.find(marker, at + 1)) {
    const size_t number = at + marker.size();
    const size_t end = log.find(ext + "\n", number);
    if (end != std::string::npos) iters.push_back(std::atoi(log.substr(number, end - number).c_str()));
  }
  return iters;
}

// The snapshot pair at `iter` is whole: both parse, the state is at `iter`,
// names these weights and holds both replicas' data positions.
void ExpectCompleteSnapshot(const std::string& dir, int iter) {
  const std::string stem = dir + "/lenet_iter_" + std::to_string(iter);
  caffe::SolverState state;
  caffe::NetParameter weights;
  try {
    ReadProtoFromBinaryFile(stem + ".solverstate", &state);
    ReadProtoFromBinaryFile(stem + ".caffemodel", &weights);
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
    return;
  }
  EXPECT_EQ(state.iter(), iter);
  EXPECT_EQ(state.learned_net(), stem + ".caffemodel");
  int cursors = 0;
  for (const auto& cursor : state.data_cursor())
    if (cursor.layer_name() == "train/mnist" || cursor.layer_name() == "replica1/train/mnist")
      ++cursors;
  EXPECT_EQ(cursors, 2) << state.DebugString();
  int blobs = 0;
  for (const auto& layer : weights.layer()) blobs += layer.blobs_size();
  EXPECT_EQ(blobs, 8);  // LeNet's weights and biases
}

// The displayed iteration of a root log line "... Iteration N (...", or -1.
int DisplayedIteration(const std::string& line) {
  static const std::regex pattern(R"(\] Iteration (\d+) \()");
  std::smatch m;
  return std::regex_search(line, m, pattern) ? std::stoi(m[1]) : -1;
}

}  // namespace

TEST(MpiStops, SigintToOneRankStopsEveryRankWithOneSnapshot) {
  DLC_REQUIRE_MPI_AND_MNIST();
  const std::string dir = TempDir();
  Launch launch(MpirunDlcaffe(2, {"train", "--solver=" + EndlessSolver(dir, "solver.prototxt")}));
  pid_t rank0 = -1, rank1 = -1;
  Clock::time_point signalled;
  const LaunchResult r = launch.Wait(kLaunchDeadline, [&](const std::string& line) {
    if (rank1 != -1 || DisplayedIteration(line) != 10) return;
    rank0 = launch.RankPid(0);
    rank1 = launch.RankPid(1);
    if (rank1 <= 0) return launch.KillAll();
    signalled = Clock::now();
    kill(rank1, SIGINT);
  });
  ASSERT_NE(rank1, -1) << "training never reached iteration 10:\n" << r.output;
  ASSERT_GT(rank1, 0) << "no process under mpirun has OMPI_COMM_WORLD_RANK=1";
  ASSERT_FALSE(r.timed_out) << "still running " << kLaunchDeadline << " s after the start:\n"
                            << r.output;
  EXPECT_LT(SecondsBetween(signalled, r.ended), kEndAfterSignal) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(ProcessAlive(rank0));
  EXPECT_FALSE(ProcessAlive(rank1));
  EXPECT_EQ(Count(r.output, "Optimization stopped early.\n"), 1) << r.output;
  EXPECT_EQ(Count(r.output, "Optimization Done."), 0) << r.output;
  EXPECT_EQ(Count(r.output, "dlcaffe: error"), 0) << r.output;
  EXPECT_EQ(WarningOrErrorLines(r.output), 0) << r.output;

  // One final snapshot, at the iteration the ranks stopped after: iteration
  // 10 was under way when rank 1 got the signal.
  const std::vector<int> weights =
      SnapshotIterations(r.output, "Snapshotting to binary proto file", dir, ".caffemodel");
  const std::vector<int> states = SnapshotIterations(
      r.output, "Snapshotting solver state to binary proto file", dir, ".solverstate");
  ASSERT_EQ(weights.size(), 1u) << r.output;
  ASSERT_EQ(states, weights) << r.output;
  const int stop = weights[0];
  std::cout << "SIGINT to rank 1 during iteration 10: stopped after iteration " << stop << ", "
            << SecondsBetween(signalled, r.ended) << " s to mpirun's exit" << std::endl;
  EXPECT_GE(stop, 11) << r.output;
  EXPECT_EQ(SnapshotFiles(dir),
            (std::set<std::string>{"lenet_iter_" + std::to_string(stop) + ".caffemodel",
                                   "lenet_iter_" + std::to_string(stop) + ".solverstate"}));
  ExpectCompleteSnapshot(dir, stop);
  // The root trained no further than where it snapshotted.
  EXPECT_EQ(Count(r.output, "] Iteration " + std::to_string((stop + 4) / 5 * 5) + " ("), 0)
      << r.output;
}

TEST(MpiStops, SighupToOneRankSnapshotsAndTrainingGoesOn) {
  DLC_REQUIRE_MPI_AND_MNIST();
  const std::string dir = TempDir();
  Launch launch(MpirunDlcaffe(2, {"train", "--solver=" + EndlessSolver(dir, "solver.prototxt")}));
  pid_t rank1 = -1;
  int hup_snapshot = -1, continued_to = -1;
  static const std::regex state_line(R"(Snapshotting solver state to binary proto file .*_iter_(\d+)\.solverstate)");
  // SIGHUP to rank 1 at iteration 10; once its snapshot is written and the
  // root displays a later iteration, SIGINT to rank 1 ends the run.
  const LaunchResult r = launch.Wait(kLaunchDeadline, [&](const std::string& line) {
    std::smatch m;
    if (rank1 == -1 && DisplayedIteration(line) == 10) {
      rank1 = launch.RankPid(1);
      if (rank1 <= 0) return launch.KillAll();
      kill(rank1, SIGHUP);
    } else if (rank1 > 0 && hup_snapshot < 0 && std::regex_search(line, m, state_line)) {
      hup_snapshot = std::stoi(m[1]);
    } else if (hup_snapshot > 0 && continued_to < 0 && DisplayedIteration(line) > hup_snapshot) {
      continued_to = DisplayedIteration(line);
      kill(rank1, SIGINT);
    }
  });
  ASSERT_NE(rank1, -1) << "training never reached iteration 10:\n" << r.output;
  ASSERT_GT(rank1, 0) << "no process under mpirun has OMPI_COMM_WORLD_RANK=1";
  ASSERT_FALSE(r.timed_out) << r.output;
  ASSERT_GE(hup_snapshot, 11) << "no snapshot after SIGHUP to rank 1:\n" << r.output;
  ASSERT_GT(continued_to, hup_snapshot) << "training did not go on after the snapshot:\n"
                                        << r.output;
  std::cout << "SIGHUP to rank 1 during iteration 10: snapshot at " << hup_snapshot
            << ", training went on to " << continued_to << std::endl;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(Count(r.output, "Optimization stopped early.\n"), 1) << r.output;
  EXPECT_EQ(WarningOrErrorLines(r.output), 0) << r.output;

  // The SIGHUP snapshot, and the final one at the stop, each once.
  const std::vector<int> weights =
      SnapshotIterations(r.output, "Snapshotting to binary proto file", dir, ".caffemodel");
  ASSERT_EQ(weights.size(), 2u) << r.output;
  EXPECT_EQ(weights[0], hup_snapshot);
  EXPECT_GT(weights[1], continued_to);
  EXPECT_EQ(SnapshotIterations(r.output, "Snapshotting solver state to binary proto file", dir,
                               ".solverstate"),
            weights);
  std::set<std::string> expected;
  for (int iter : weights) {
    expected.insert("lenet_iter_" + std::to_string(iter) + ".caffemodel");
    expected.insert("lenet_iter_" + std::to_string(iter) + ".solverstate");
    ExpectCompleteSnapshot(dir, iter);
  }
  EXPECT_EQ(SnapshotFiles(dir), expected);
}

// SIGKILL to rank 1 mid-run: rank 0 cannot go on without it; mpirun notices,
// ends rank 0 and exits non-zero naming rank 1 and the signal.
TEST(MpiStops, KilledRankEndsTheWholeJob) {
  DLC_REQUIRE_MPI_AND_MNIST();
  const std::string dir = TempDir();
  Launch launch(MpirunDlcaffe(2, {"train", "--solver=" + EndlessSolver(dir, "solver.prototxt")}));
  pid_t rank0 = -1, rank1 = -1;
  Clock::time_point killed;
  const LaunchResult r = launch.Wait(kLaunchDeadline, [&](const std::string& line) {
    if (rank1 != -1 || DisplayedIteration(line) != 10) return;
    rank0 = launch.RankPid(0);
    rank1 = launch.RankPid(1);
    if (rank1 <= 0) return launch.KillAll();
    killed = Clock::now();
    kill(rank1, SIGKILL);
  });
  ASSERT_NE(rank1, -1) << "training never reached iteration 10:\n" << r.output;
  ASSERT_GT(rank1, 0) << "no process under mpirun has OMPI_COMM_WORLD_RANK=1";
  ASSERT_FALSE(r.timed_out) << "rank 0 or mpirun went on after rank 1 was killed:\n" << r.output;
  EXPECT_LT(SecondsBetween(killed, r.ended), kEndAfterSignal) << r.output;
  std::cout << "mpirun ended " << SecondsBetween(killed, r.ended)
            << " s after rank 1 was killed, exit code " << r.exit_code << std::endl;
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_FALSE(ProcessAlive(rank0)) << "rank 0 outlived mpirun";
  // OpenMPI 4.1: "mpirun noticed that process rank 1 with PID ... on node ...
  // exited on signal 9 (Killed)."
  EXPECT_TRUE(std::regex_search(r.output, std::regex("process rank 1 with PID .* exited on signal 9")))
      << r.output;
  EXPECT_EQ(Count(r.output, "Optimization Done."), 0) << r.output;
  EXPECT_EQ(Count(r.output, "Optimization stopped early."), 0) << r.output;
}

// A rank that stops answering without dying (SIGSTOP: as a hung device
// would): the other gives up after --replica_timeout, names itself and what
// it waited for, and ends the job. Rank 0 is caught either in the gradient
// exchange or in the per-iteration agreement, depending on where rank 1
// stopped (both seen in runs of this test).
TEST(MpiStops, AStuckRankEndsTheJobAfterTheTimeout) {
  DLC_REQUIRE_MPI_AND_MNIST();
  const std::string dir = TempDir();
  Launch launch(MpirunDlcaffe(2, {"train", "--solver=" + EndlessSolver(dir, "solver.prototxt"),
                                  "--replica_timeout=3"}));
  pid_t rank1 = -1;
  Clock::time_point stopped;
  const LaunchResult r = launch.Wait(kLaunchDeadline, [&](const std::string& line) {
    if (rank1 != -1 || DisplayedIteration(line) != 10) return;
    rank1 = launch.RankPid(1);
    if (rank1 <= 0) return launch.KillAll();
    stopped = Clock::now();
    kill(rank1, SIGSTOP);
  });
  ASSERT_NE(rank1, -1) << "training never reached iteration 10:\n" << r.output;
  ASSERT_GT(rank1, 0) << "no process under mpirun has OMPI_COMM_WORLD_RANK=1";
  ASSERT_FALSE(r.timed_out) << "rank 0 waited for the stopped rank 1 forever:\n" << r.output;
  const double after = SecondsBetween(stopped, r.ended);
  std::cout << "mpirun ended " << after << " s after rank 1 was stopped" << std::endl;
  EXPECT_GE(after, 3.0) << r.output;  // not before the timeout
  EXPECT_LT(after, kEndAfterSignal) << r.output;
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::regex_search(
      r.output, std::regex("(^|\n)dlcaffe: error: [^\n]*rank 0: waited 3 s for (gradients|the "
                           "agreement on stopping and snapshots) from the other ranks; one of "
                           "them is stuck or gone")))
      << r.output;
  EXPECT_EQ(Count(r.output, "Optimization Done."), 0) << r.output;
}

// MPMD: rank 0 and rank 1 read different solver files (base_lr differs).
// Both stop before training with an error naming rank 1's solver.
TEST(MpiStops, MismatchedSolversAreAnErrorNamingTheRank) {
  DLC_REQUIRE_MPI_AND_MNIST();
  const std::string dir = TempDir();
  const std::string a = EndlessSolver(dir, "a_solver.prototxt", "0.01");
  const std::string b = EndlessSolver(dir, "b_solver.prototxt", "0.02");
  Launch launch({FindMpirun(), "--oversubscribe", "-np", "1", DlcaffePath(), "train",
                 "--solver=" + a, ":", "-np", "1", DlcaffePath(), "train", "--solver=" + b});
  const LaunchResult r = launch.Wait(kLaunchDeadline);
  ASSERT_FALSE(r.timed_out) << "the ranks hung:\n" << r.output;
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_LT(r.exit_code, 128) << "killed by a signal:\n" << r.output;
  // A line of its own from a rank: "dlcaffe: error: rank R: rank 1's solver
  // differs from rank 0's: ...".
  EXPECT_TRUE(std::regex_search(
      r.output, std::regex("(^|\n)dlcaffe: error: rank [01]: rank 1's solver differs from "
                           "rank 0's: [^\n]*--solver")))
      << r.output;
  EXPECT_EQ(Count(r.output, "Check failed"), 0) << r.output;
  EXPECT_EQ(Count(r.output, "*** "), 0) << r.output;
  EXPECT_EQ(Count(r.output, "] Iteration 0 ("), 0) << "it trained:\n" << r.output;
  EXPECT_TRUE(SnapshotFiles(dir).empty());
}

}  // namespace test
}  // namespace dlcaffe
