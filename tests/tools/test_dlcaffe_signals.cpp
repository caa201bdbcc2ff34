// Caffe's signal handling: SIGINT (default effect "stop") ends training after
// the current iteration with a complete snapshot and exit code 0; SIGHUP
// (default "snapshot") writes a snapshot and carries on.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "caffe.pb.h"
#include "dlcaffe/io.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

// Runs dlcaffe with its output in a pipe; `on_line` may send signals.
struct Child {
  pid_t pid = -1;
  FILE* out = nullptr;
};

Child Start(const std::vector<std::string>& args) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  Child child;
  child.pid = fork();
  if (child.pid == 0) {
    close(fds[0]);
    ExecDlcaffeInChild(args, fds[1]);
  }
  close(fds[1]);
  child.out = fdopen(fds[0], "r");
  return child;
}

std::string SolverFile(const std::string& prefix) {
  const std::string path = prefix + "_solver.prototxt";
  WriteFileAtomically(path, R"(
    net: "models/lenet/lenet_train_test.prototxt"
    base_lr: 0.01
    momentum: 0.9
    lr_policy: "fixed"
    display: 5
    max_iter: 100000
    snapshot_prefix: ")" + prefix + R"(")");
  return path;
}

// Reads lines until one contains `marker`, then sends `sig` (once); returns
// everything read and the exit code.
std::pair<std::string, int> RunAndSignal(Child child, const std::string& marker, int sig,
                                         const std::string& second_marker = "",
                                         int second_sig = 0) {
  std::string output;
  char line[4096];
  bool sent = false, second_sent = false;
  while (fgets(line, sizeof(line), child.out)) {
    output += line;
    if (!sent && output.find(marker) != std::string::npos) {
      kill(child.pid, sig);
      sent = true;
    } else if (sent && second_sig && !second_sent && !second_marker.empty() &&
               std::string(line).find(second_marker) != std::string::npos) {
      kill(child.pid, second_sig);
      second_sent = true;
    }
  }
  fclose(child.out);
  int status = 0;
  waitpid(child.pid, &status, 0);
  return {output, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)};
}

}  // namespace

TEST(DlcaffeSignals, SigintStopsWithACompleteSnapshot) {
  if (!FileExists(SourceDir() + "/examples/mnist/mnist_train_lmdb"))
    GTEST_FAIL() << "run data/mnist/get_mnist.sh first (the test command does)";
  const std::string prefix = TempDir() + "/sigint";
  auto [output, code] =
      RunAndSignal(Start({"train", "--solver=" + SolverFile(prefix)}), "Iteration 10 (", SIGINT);
  EXPECT_EQ(code, 0) << output;
  EXPECT_NE(output.find("Optimization stopped early."), std::string::npos) << output;
  EXPECT_EQ(output.find("Optimization Done."), std::string::npos) << output;
  // The snapshot is whole: both files parse, the weights name the state's iteration.
  const size_t at = output.find("Snapshotting solver state to binary proto file ");
  ASSERT_NE(at, std::string::npos) << output;
  const size_t start = at + std::string("Snapshotting solver state to binary proto file ").size();
  const std::string state_file = output.substr(start, output.find('\n', start) - start);
  caffe::SolverState state;
  ReadProtoFromBinaryFile(state_file, &state);
  EXPECT_GE(state.iter(), 11);
  caffe::NetParameter weights;
  ReadProtoFromBinaryFile(state.learned_net(), &weights);
  EXPECT_GT(weights.layer_size(), 0);
}

TEST(DlcaffeSignals, SighupSnapshotsAndContinues) {
  if (!FileExists(SourceDir() + "/examples/mnist/mnist_train_lmdb"))
    GTEST_FAIL() << "run data/mnist/get_mnist.sh first (the test command does)";
  const std::string prefix = TempDir() + "/sighup";
  // SIGHUP at iteration 10 snapshots; SIGINT after the snapshot ends the run.
  auto [output, code] = RunAndSignal(Start({"train", "--solver=" + SolverFile(prefix)}),
                                     "Iteration 10 (", SIGHUP,
                                     "Snapshotting solver state", SIGINT);
  EXPECT_EQ(code, 0) << output;
  const size_t first = output.find("Snapshotting to binary proto file ");
  ASSERT_NE(first, std::string::npos) << output;
  // Training went on after the SIGHUP snapshot and snapshotted again at the stop.
  EXPECT_NE(output.find("Snapshotting to binary proto file ", first + 1), std::string::npos)
      << output;
  EXPECT_NE(output.find("Optimization stopped early."), std::string::npos) << output;
}

TEST(DlcaffeSignals, BadEffectIsAClearError) {
  auto [output, code] = RunAndSignal(
      Start({"train", "--solver=models/lenet/lenet_solver.prototxt", "--sigint_effect=pause"}),
      "\x01never", 0);
  EXPECT_EQ(code, 1) << output;
  EXPECT_NE(output.find("--sigint_effect"), std::string::npos) << output;
}

}  // namespace test
}  // namespace dlcaffe
