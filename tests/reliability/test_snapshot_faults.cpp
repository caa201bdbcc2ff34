// Issue 13, snapshots: a snapshot interrupted at any point (the disk full, a
// file size limit, the process killed mid-write) leaves the previous snapshot
// (.caffemodel + .solverstate) intact and resumable, removes or ignores its
// partial files, and says what failed (the file and the system's reason) with
// a non-zero exit and no abort trace. The rule that keeps the pairs
// consistent: the .caffemodel is written first, then the .solverstate that
// names it, each atomically (temporary file, fsync, rename, folder fsync); a
// resume starts from a .solverstate, so it always finds its own weights.
// A snapshot folder that cannot be written is refused before training.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "caffe.pb.h"
#include "dlcaffe/error.hpp"
#include "dlcaffe/io.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (!d) return names;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') names.push_back(e->d_name);
  closedir(d);
  return names;
}

std::vector<std::string> Temporaries(const std::string& dir) {
  std::vector<std::string> tmp;
  for (const auto& name : FilesIn(dir))
    if (name.find(".tmp.") != std::string::npos) tmp.push_back(name);
  return tmp;
}

// Runs the dlcaffe tool in a child whose files may not grow beyond
// `max_file_bytes` (RLIMIT_FSIZE; 0: no limit). With `ignore_sigxfsz` a write
// past the limit fails with EFBIG, as on a full disk; without it the kernel
// kills the process in the middle of that write.
ToolResult RunLimited(const std::vector<std::string>& args, rlim_t max_file_bytes,
                      bool ignore_sigxfsz) {
  int fds[2];
  if (pipe(fds) != 0) return {-1, "pipe failed"};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    rlimit core{0, 0};
    setrlimit(RLIMIT_CORE, &core);
    if (max_file_bytes) {
      rlimit limit{max_file_bytes, max_file_bytes};
      setrlimit(RLIMIT_FSIZE, &limit);
    }
    signal(SIGXFSZ, ignore_sigxfsz ? SIG_IGN : SIG_DFL);
    // The output goes to a pipe, which the file size limit does not cover.
    ExecDlcaffeInChild(args, fds[1]);
  }
  close(fds[1]);
  ToolResult r{-1, ""};
  char buffer[4096];
  ssize_t n;
  while ((n = read(fds[0], buffer, sizeof(buffer))) > 0) r.output.append(buffer, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// A small net whose .caffemodel (about 26 kB of weights) is smaller than its
// .solverstate (the same again as momentum history, plus random states).
struct SnapRun {
  std::string dir, prefix;
  std::string Solver(int max_iter) const {
    const std::string path = dir + "/solver_" + std::to_string(max_iter) + ".prototxt";
    WriteFileAtomically(path, "net: '" + dir + R"(/net.prototxt'
      base_lr: 0.01
      momentum: 0.9
      lr_policy: "fixed"
      display: 1
      max_iter: )" + std::to_string(max_iter) + R"(
      snapshot: 1
      random_seed: 1
      snapshot_prefix: ")" + prefix + "\"\n");
    return path;
  }
  std::string File(int iter, const std::string& ext) const {
    return prefix + "_iter_" + std::to_string(iter) + ext;
  }
};

// The net's weights are 64 x `outputs` floats (100: about 26 kB).
SnapRun MakeRun(const std::string& dir, int outputs = 100) {
  SnapRun run{dir, dir + "/snap"};
  WriteFileAtomically(dir + "/net.prototxt", R"(
    name: "snapshots"
    layer { name: "data" type: "DummyData" top: "data" top: "label"
      dummy_data_param { shape { dim: 4 dim: 64 } shape { dim: 4 }
        data_filler { type: "gaussian" std: 1 } data_filler { type: "constant" value: 1 } } }
    layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
      inner_product_param { num_output: )" + std::to_string(outputs) + R"( weight_filler { type: "xavier" } } }
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" })");
  return run;
}

// Both files of iteration `iter` parse, and the state names the weights.
void ExpectGoodPair(const SnapRun& run, int iter) {
  caffe::SolverState state;
  ASSERT_NO_THROW(ReadProtoFromBinaryFile(run.File(iter, ".solverstate"), &state));
  EXPECT_EQ(state.iter(), iter);
  EXPECT_EQ(state.learned_net(), run.File(iter, ".caffemodel"));
  caffe::NetParameter weights;
  EXPECT_NO_THROW(ReadProtoFromBinaryFile(run.File(iter, ".caffemodel"), &weights));
}

class SnapshotFaults : public ::testing::Test {
 protected:
  // Two iterations with a snapshot after each: iterations 1 and 2 on disk.
  void SetUp() override {
    run_ = MakeRun(TempDir());
    const ToolResult r = RunDlcaffe("train --solver=" + run_.Solver(2));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    ExpectGoodPair(run_, 2);
    model2_ = ReadFileBytes(run_.File(2, ".caffemodel"));
    state2_ = ReadFileBytes(run_.File(2, ".solverstate"));
    ASSERT_LT(model2_.size() + 1000, state2_.size());
  }

  // One more iteration from the iteration-2 snapshot, under `limit`.
  ToolResult Resume(rlim_t limit, bool ignore_sigxfsz) {
    return RunLimited({"train", "--solver=" + run_.Solver(3),
                       "--snapshot=" + run_.File(2, ".solverstate")},
                      limit, ignore_sigxfsz);
  }

  // The iteration-2 snapshot is unchanged and a resume from it completes.
  void ExpectPreviousSnapshotResumable() {
    EXPECT_EQ(ReadFileBytes(run_.File(2, ".caffemodel")), model2_);
    EXPECT_EQ(ReadFileBytes(run_.File(2, ".solverstate")), state2_);
    const ToolResult again = Resume(0, false);
    EXPECT_EQ(again.exit_code, 0) << again.output;
    ExpectGoodPair(run_, 3);
    EXPECT_TRUE(Temporaries(run_.dir).empty());
  }

  SnapRun run_;
  std::string model2_, state2_;
};

TEST_F(SnapshotFaults, FullDiskWhileWritingTheWeights) {
  const ToolResult r = Resume(model2_.size() / 2, true);
  ExpectCleanError(r, "snapshot at iteration 3 failed");
  EXPECT_TRUE(Contains(r.output, run_.File(3, ".caffemodel"))) << r.output;
  EXPECT_TRUE(Contains(r.output, "File too large")) << r.output;  // strerror(EFBIG)
  EXPECT_TRUE(Contains(r.output, "temporary file was removed")) << r.output;
  EXPECT_FALSE(FileExists(run_.File(3, ".caffemodel")));
  EXPECT_FALSE(FileExists(run_.File(3, ".solverstate")));
  EXPECT_TRUE(Temporaries(run_.dir).empty());
  ExpectPreviousSnapshotResumable();
}

TEST_F(SnapshotFaults, FullDiskWhileWritingTheSolverState) {
  const ToolResult r = Resume(model2_.size() + 500, true);
  ExpectCleanError(r, "snapshot at iteration 3 failed");
  EXPECT_TRUE(Contains(r.output, run_.File(3, ".solverstate"))) << r.output;
  EXPECT_TRUE(Contains(r.output, "has no .solverstate")) << r.output;
  // The weights of iteration 3 are complete; without a state that names
  // them, a resume can only start from iteration 2's pair.
  caffe::NetParameter weights;
  EXPECT_NO_THROW(ReadProtoFromBinaryFile(run_.File(3, ".caffemodel"), &weights));
  EXPECT_FALSE(FileExists(run_.File(3, ".solverstate")));
  EXPECT_TRUE(Temporaries(run_.dir).empty());
  ExpectPreviousSnapshotResumable();
}

// SIGKILL at random moments of a run that snapshots every iteration (a
// 2 MB model, so that many kills land inside a write): after every kill each
// .solverstate on disk is whole and names whole weights of its iteration, and
// the newest one resumes. (A file size limit cannot kill dlcaffe mid-write:
// the OpenCL compiler's LLVM catches SIGXFSZ, and the write fails with EFBIG,
// the full-disk path above.)
TEST(SnapshotKill, EverySolverStateOnDiskStaysResumable) {
  SnapRun run = MakeRun(TempDir(), 8000);
  const std::string solver = run.Solver(1000000);
  std::mt19937 rng(7);
  int temporaries_seen = 0;
  std::string newest;
  for (int kill_round = 0; kill_round < 6; ++kill_round) {
    std::vector<std::string> args{"train", "--solver=" + solver};
    if (!newest.empty()) args.push_back("--snapshot=" + newest);
    const pid_t pid = fork();
    if (pid == 0) ExecDlcaffeInChild(args, open("/dev/null", O_WRONLY));
    usleep(400000 + rng() % 600000);
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    temporaries_seen += static_cast<int>(Temporaries(run.dir).size());
    int newest_iter = -1;
    for (const auto& name : FilesIn(run.dir)) {
      const size_t ext = name.rfind(".solverstate");
      if (ext == std::string::npos || ext + 12 != name.size()) continue;
      SCOPED_TRACE(name);
      caffe::SolverState state;
      ASSERT_NO_THROW(ReadProtoFromBinaryFile(run.dir + "/" + name, &state));
      caffe::NetParameter weights;
      ASSERT_NO_THROW(ReadProtoFromBinaryFile(state.learned_net(), &weights));
      EXPECT_EQ(state.learned_net(), run.File(state.iter(), ".caffemodel"));
      if (state.iter() > newest_iter) {
        newest_iter = state.iter();
        newest = run.dir + "/" + name;
      }
    }
  }
  ASSERT_FALSE(newest.empty());
  // The newest pair resumes (and the dead runs' temporary files go).
  caffe::SolverState state;
  ReadProtoFromBinaryFile(newest, &state);
  const ToolResult r =
      RunDlcaffe("train --solver=" + run.Solver(state.iter() + 1) + " --snapshot=" + newest);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Temporaries(run.dir).empty());
  std::cout << "kills that left a partial temporary file: " << temporaries_seen << " of 6\n";
}

// A real full file system: a small tmpfs (where mounting is allowed).
TEST_F(SnapshotFaults, NoSpaceLeftOnDevice) {
  const std::string mnt = TempDir() + "/small";
  mkdir(mnt.c_str(), 0755);
  const std::string size = "size=" + std::to_string((model2_.size() + 4096) / 1024 + 8) + "k";
  if (mount("tmpfs", mnt.c_str(), "tmpfs", 0, size.c_str()) != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here; the RLIMIT_FSIZE tests cover the same path";
  SnapRun small = run_;
  small.prefix = mnt + "/snap";
  const ToolResult r = RunDlcaffe("train --solver=" + small.Solver(1));
  ExpectCleanError(r, "No space left on device");
  EXPECT_TRUE(Contains(r.output, small.File(1, "."))) << r.output;
  EXPECT_TRUE(Temporaries(mnt).empty());
  umount(mnt.c_str());
}

TEST(SnapshotFolder, UnwritableFolderIsRefusedBeforeTraining) {
  const SnapRun run = MakeRun(TempDir());
  {
    SnapRun missing = run;
    missing.prefix = run.dir + "/no/such/folder/snap";
    const ToolResult r = RunDlcaffe("train --solver=" + missing.Solver(5));
    ExpectCleanError(r, run.dir + "/no/such/folder does not exist");
    EXPECT_FALSE(Contains(r.output, "Iteration 0")) << r.output;
  }
  {
    SnapRun file = run;
    WriteFileAtomically(run.dir + "/a_file", "x");
    file.prefix = run.dir + "/a_file/snap";
    const ToolResult r = RunDlcaffe("train --solver=" + file.Solver(5));
    ExpectCleanError(r, run.dir + "/a_file");
    EXPECT_FALSE(Contains(r.output, "Iteration 0")) << r.output;
  }
  // Root writes through permission bits: a read-only file system shows it.
  const std::string mnt = TempDir() + "/readonly";
  mkdir(mnt.c_str(), 0755);
  if (mount("tmpfs", mnt.c_str(), "tmpfs", MS_RDONLY, "size=64k") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here";
  SnapRun readonly = run;
  readonly.prefix = mnt + "/snap";
  const ToolResult r = RunDlcaffe("train --solver=" + readonly.Solver(5));
  umount(mnt.c_str());
  ExpectCleanError(r, "Read-only file system");
  EXPECT_TRUE(Contains(r.output, mnt + "/snap")) << r.output;
  EXPECT_FALSE(Contains(r.output, "Iteration 0")) << r.output;
}

// WriteFileAtomically itself, in a child: a failed write keeps the old file
// whole and leaves no temporary file; the message names the file and errno.
TEST(WriteFileAtomically, FailedWriteKeepsTheOldFile) {
  const std::string dir = TempDir();
  const std::string path = dir + "/file";
  WriteFileAtomically(path, std::string(1000, 'a'));
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    rlimit limit{4096, 4096};
    setrlimit(RLIMIT_FSIZE, &limit);
    signal(SIGXFSZ, SIG_IGN);
    std::string message = "no error";
    try {
      WriteFileAtomically(path, std::string(100000, 'b'));
    } catch (const Error& e) {
      message = e.what();
    }
    if (write(fds[1], message.data(), message.size()) < 0) _exit(2);
    _exit(0);
  }
  close(fds[1]);
  std::string message;
  char buffer[512];
  ssize_t n;
  while ((n = read(fds[0], buffer, sizeof(buffer))) > 0) message.append(buffer, n);
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  EXPECT_TRUE(Contains(message, "cannot write " + path)) << message;
  EXPECT_TRUE(Contains(message, "File too large")) << message;
  EXPECT_TRUE(Contains(message, "4096 of 100000 bytes")) << message;
  EXPECT_EQ(ReadFileBytes(path), std::string(1000, 'a'));
  EXPECT_TRUE(Temporaries(dir).empty());
  // And a write that works replaces the file whole.
  WriteFileAtomically(path, "new");
  EXPECT_EQ(ReadFileBytes(path), "new");
  EXPECT_EQ(FilesIn(dir).size(), 1u);
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
