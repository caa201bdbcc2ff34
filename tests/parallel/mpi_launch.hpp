// For the tests that train through the real tool across processes: runs
// `mpirun ... dlcaffe train ...` (or dlcaffe alone) from the source root with
// a deadline, hands each output line to the test as it comes (so that it can
// signal one rank), finds the pid of a rank, and writes the LeNet prototxts
// the tests train.
#pragma once
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "caffe.pb.h"
#include "dlcaffe/io.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

using Clock = std::chrono::steady_clock;

inline double SecondsBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// mpirun on the PATH, or "".
inline std::string FindMpirun() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string candidate = dirs.substr(start, end - start) + "/mpirun";
    if (end > start && access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

// The tests fail (not skip) without mpirun: CI installs OpenMPI, and a skip
// would hide a missing install.
#define DLC_REQUIRE_MPI_AND_MNIST()                                                          \
  do {                                                                                       \
    ASSERT_NE(FindMpirun(), "")                                                              \
        << "mpirun is not on the PATH: run scripts/install_deps.sh (it installs "            \
           "openmpi-bin and libopenmpi-dev), then re-run cmake and rebuild";                 \
    ASSERT_TRUE(FileExists(SourceDir() + "/examples/mnist/mnist_train_lmdb"))                \
        << "run data/mnist/get_mnist.sh first (the test command does)";                      \
  } while (0)

inline std::string DlcaffePath() { return BuildDir() + "/tools/dlcaffe"; }

// mpirun -np `np` (two cores here: --oversubscribe) dlcaffe `args`.
inline std::vector<std::string> MpirunDlcaffe(int np, const std::vector<std::string>& args) {
  std::vector<std::string> argv{FindMpirun(), "--oversubscribe", "-np", std::to_string(np),
                                DlcaffePath()};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// The processes under `root` (children, their children, ...), from /proc.
inline std::vector<pid_t> Descendants(pid_t root) {
  std::multimap<pid_t, pid_t> children;
  if (DIR* proc = opendir("/proc")) {
    while (dirent* entry = readdir(proc)) {
      const pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
      if (pid <= 0) continue;
      const std::string stat = ReadFileBytes("/proc/" + std::string(entry->d_name) + "/stat");
      // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
      const size_t close = stat.rfind(')');
      if (close == std::string::npos || close + 4 >= stat.size()) continue;
      const pid_t ppid = static_cast<pid_t>(std::atoi(stat.c_str() + close + 4));
      children.emplace(ppid, pid);
    }
    closedir(proc);
  }
  std::vector<pid_t> found;
  std::vector<pid_t> todo{root};
  while (!todo.empty()) {
    const pid_t parent = todo.back();
    todo.pop_back();
    auto range = children.equal_range(parent);
    for (auto it = range.first; it != range.second; ++it) {
      found.push_back(it->second);
      todo.push_back(it->second);
    }
  }
  return found;
}

// Whether `pid` is still a process (a zombie counts as ended).
inline bool ProcessAlive(pid_t pid) {
  const std::string stat = ReadFileBytes("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

struct LaunchResult {
  int exit_code = -1;  // 128 + signal when killed
  std::string output;  // stdout and stderr together
  bool timed_out = false;
  Clock::time_point ended;
  double seconds = 0;  // start to exit
};

// One launch: mpirun (or any program), run from the source root with its
// stdout and stderr in a pipe and stdin from /dev/null.
class Launch {
 public:
  explicit Launch(const std::vector<std::string>& argv) : started_(Clock::now()) {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      close(fds[0]);
      dup2(fds[1], 1);
      dup2(fds[1], 2);
      const int null = open("/dev/null", O_RDONLY);
      if (null >= 0) dup2(null, 0);
      // OpenMPI refuses to run as root without these (containers, CI).
      setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
      setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
      if (chdir(SourceDir().c_str()) != 0) _exit(126);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execvp(args[0], args.data());
      _exit(127);
    }
    close(fds[1]);
    out_ = fds[0];
  }

  ~Launch() {
    if (pid_ > 0 && !reaped_) {
      KillAll();
      int status;
      waitpid(pid_, &status, 0);
    }
    if (out_ >= 0) close(out_);
  }

  pid_t pid() const { return pid_; }

  // The process of this launch whose environment has
  // OMPI_COMM_WORLD_RANK=`rank` (mpirun sets it in each rank), or -1.
  pid_t RankPid(int rank) const {
    const std::string wanted = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
    for (pid_t p : Descendants(pid_)) {
      const std::string env = ReadFileBytes("/proc/" + std::to_string(p) + "/environ");
      size_t start = 0;
      while (start < env.size()) {
        size_t end = env.find('\0', start);
        if (end == std::string::npos) end = env.size();
        if (env.compare(start, end - start, wanted) == 0) return p;
        start = end + 1;
      }
    }
    return -1;
  }

  // SIGKILL to the launch and every process under it (for deadlines, and for
  // tests that cannot go on).
  void KillAll() {
    if (pid_ <= 0 || reaped_) return;
    const std::vector<pid_t> under = Descendants(pid_);
    kill(pid_, SIGKILL);
    for (pid_t p : under) kill(p, SIGKILL);
  }

  // Reads the output until the launch ends, handing each line (without its
  // newline) to `on_line`; after `timeout_s` kills everything and reports
  // timed_out.
  LaunchResult Wait(double timeout_s,
                    const std::function<void(const std::string&)>& on_line = nullptr) {
    LaunchResult result;
    if (pid_ <= 0 || out_ < 0) {
      ADD_FAILURE() << "could not start the launch";
      return result;
    }
    const Clock::time_point deadline =
        started_ + std::chrono::milliseconds(static_cast<long>(timeout_s * 1000));
    std::string pending;
    char buffer[4096];
    for (;;) {
      const long left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - Clock::now()).count();
      if (left <= 0 && !result.timed_out) {
        result.timed_out = true;
        KillAll();
      }
      pollfd p{out_, POLLIN, 0};
      const int ready = poll(&p, 1, result.timed_out ? 1000 : static_cast<int>(left));
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) {
        if (result.timed_out) break;  // killed, and nothing more comes
        continue;
      }
      const ssize_t n = read(out_, buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      result.output.append(buffer, n);
      pending.append(buffer, n);
      size_t newline;
      while ((newline = pending.find('\n')) != std::string::npos) {
        const std::string line = pending.substr(0, newline);
        pending.erase(0, newline + 1);
        if (on_line) on_line(line);
      }
    }
    if (!pending.empty() && on_line) on_line(pending);
    // The pipe closed: the launch is ending (or was killed). Wait for it,
    // still within the deadline.
    int status = 0;
    for (;;) {
      const pid_t done = waitpid(pid_, &status, WNOHANG);
      if (done == pid_) break;
      if (Clock::now() >= deadline && !result.timed_out) {
        result.timed_out = true;
        KillAll();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    reaped_ = true;
    result.ended = Clock::now();
    result.seconds = SecondsBetween(started_, result.ended);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return result;
  }

 private:
  Clock::time_point started_;
  pid_t pid_ = -1;
  int out_ = -1;
  bool reaped_ = false;
};

// ---- logs ----

inline int Count(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// glog's warning, error and fatal lines ("W20261125 ...").
inline int WarningOrErrorLines(const std::string& log) {
  int n = 0;
  size_t start = 0;
  while (start < log.size()) {
    const char c = log[start];
    if ((c == 'W' || c == 'E' || c == 'F') && start + 1 < log.size() && std::isdigit(static_cast<unsigned char>(log[start + 1])))
      ++n;
    const size_t newline = log.find('\n', start);
    if (newline == std::string::npos) break;
    start = newline + 1;
  }
  return n;
}

// The files named <dir>/*.caffemodel and <dir>/*.solverstate (names only).
inline std::set<std::string> SnapshotFiles(const std::string& dir) {
  std::set<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string ext = entry.path().extension().string();
    if (ext == ".caffemodel" || ext == ".solverstate")
      files.insert(entry.path().filename().string());
  }
  return files;
}

// ---- prototxts ----

// LeNet's train net (models/lenet) alone, reading MNIST through a Data layer;
// `transform` is the body of its transform_param, `after_relu` layers go
// after ip1's ReLU.
inline std::string LeNetTrainNet(const std::string& transform, const std::string& after_relu = "") {
  return R"(name: "LeNet"
layer { name: "mnist" type: "Data" top: "data" top: "label"
  transform_param { )" + transform + R"( }
  data_param { source: "examples/mnist/mnist_train_lmdb" batch_size: 64 backend: LMDB } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
  param { lr_mult: 1 } param { lr_mult: 2 }
  convolution_param { num_output: 20 kernel_size: 5 stride: 1
    weight_filler { type: "xavier" } bias_filler { type: "constant" } } }
layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
  pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "conv2" type: "Convolution" bottom: "pool1" top: "conv2"
  param { lr_mult: 1 } param { lr_mult: 2 }
  convolution_param { num_output: 50 kernel_size: 5 stride: 1
    weight_filler { type: "xavier" } bias_filler { type: "constant" } } }
layer { name: "pool2" type: "Pooling" bottom: "conv2" top: "pool2"
  pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "ip1" type: "InnerProduct" bottom: "pool2" top: "ip1"
  param { lr_mult: 1 } param { lr_mult: 2 }
  inner_product_param { num_output: 500
    weight_filler { type: "xavier" } bias_filler { type: "constant" } } }
layer { name: "relu1" type: "ReLU" bottom: "ip1" top: "ip1" }
)" + after_relu + R"(
layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2"
  param { lr_mult: 1 } param { lr_mult: 2 }
  inner_product_param { num_output: 10
    weight_filler { type: "xavier" } bias_filler { type: "constant" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" }
)";
}

// Writes `text` to <dir>/<name> and returns the path.
inline std::string WriteFile(const std::string& dir, const std::string& name,
                             const std::string& text) {
  const std::string path = dir + "/" + name;
  WriteFileAtomically(path, text);
  return path;
}

}  // namespace test
}  // namespace dlcaffe
