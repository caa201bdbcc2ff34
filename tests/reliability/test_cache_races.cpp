// Issue 13, processes sharing the kernel cache and the tuning cache at once:
// no process ever reads a torn entry (each entry is written to a temporary
// file of its own and renamed; its checksum would show a torn one), and
// tuners that store at the same time lose none of each other's winners (the
// read-merge-write of a tuning file holds an flock).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../../src/core/cache_files.hpp"
#include "../../src/core/gemm_tuning.hpp"
#include "dlcaffe/io.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

// Runs `body(child)` in `n` forked children at once; their exit codes.
template <typename Body>
std::vector<int> InChildren(int n, Body body) {
  std::vector<pid_t> pids;
  for (int child = 0; child < n; ++child) {
    const pid_t pid = fork();
    if (pid == 0) _exit(body(child));
    pids.push_back(pid);
  }
  std::vector<int> codes;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  return codes;
}

// Four processes write entries of different sizes to the same two paths and
// read them back, 300 times each: every read is a whole entry.
TEST(CacheRaces, EntriesAreNeverReadTorn) {
  const std::string dir = TempDir();
  const std::vector<int> codes = InChildren(4, [&](int child) {
    int torn = 0;
    for (int i = 0; i < 300; ++i) {
      const std::string path = dir + "/entry" + std::to_string(i % 2) + ".bin";
      const size_t size = 1000 + ((child * 7919 + i * 104729) % 200000);
      WriteCacheEntry(path, "kernel", std::string(size, char('a' + child)));
      std::string payload;
      if (!ReadCacheEntry(path, "kernel", &payload)) ++torn;
      else if (payload.find_first_not_of(payload[0]) != std::string::npos) ++torn;
    }
    return torn;
  });
  for (int code : codes) EXPECT_EQ(code, 0) << "torn reads (or a crash)";
  std::string payload;
  EXPECT_TRUE(ReadCacheEntry(dir + "/entry0.bin", "kernel", &payload));
  // No temporary file is left behind.
  EXPECT_EQ(RunCommand("ls '" + dir + "'").output, "entry0.bin\nentry1.bin\n");
}

TEST(CacheRaces, ConcurrentTunersKeepEveryWinner) {
  // A context of its own (the children only write files): its device's
  // names key the file, its options name the directory.
  DeviceInfo info = TestContext().info();
  info.platform_name = "race platform";
  info.name = "race device";
  RunOptions options = TestContext().options();
  options.tuning_cache = TempDir();
  const Context device(info, options);
  const std::vector<GemmConfig> family = GemmConfigFamily();
  ASSERT_FALSE(family.empty());
  const int kChildren = 4, kStores = 25;
  const std::vector<int> codes = InChildren(kChildren, [&](int child) {
    for (int i = 0; i < kStores; ++i) {
      GemmShapeKey key;
      key.M = 100 + child;
      key.N = i + 1;
      key.K = 7;
      StoreTunedGemmConfigs(device, {{key, family[(child + i) % family.size()]}});
    }
    return 0;
  });
  for (int code : codes) EXPECT_EQ(code, 0);
  const std::string text = ReadFileBytes(GemmTuningFile(device));
  std::istringstream lines(text);
  std::string line;
  std::set<std::string> keys;
  int entries = 0;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    ++entries;
    // Each line's checksum holds.
    const size_t bar = line.rfind(" | ");
    char hex[20];
    std::snprintf(hex, sizeof(hex), "%016llx",
                  static_cast<unsigned long long>(Fnv1a(line.substr(0, bar))));
    EXPECT_EQ(line.substr(bar + 3), hex) << line;
    keys.insert(line.substr(0, line.find(" | ")));
  }
  EXPECT_EQ(entries, kChildren * kStores) << text;
  EXPECT_EQ(keys.size(), size_t(kChildren * kStores));
  EXPECT_TRUE(Contains(text, "# end: " + std::to_string(kChildren * kStores) + " entries"));
}

// Three dlcaffe processes build the same programs into one empty kernel
// cache (and read one tuning file) at the same time, twice: all succeed with
// the same losses and none meets a damaged entry.
TEST(CacheRaces, ToolsSharingTheCachesAgree) {
  const std::string dir = TempDir();
  WriteFileAtomically(dir + "/net.prototxt", R"(
    name: "race"
    layer { name: "data" type: "DummyData" top: "data" top: "label"
      dummy_data_param { shape { dim: 3 dim: 5 } shape { dim: 3 }
        data_filler { type: "gaussian" std: 1 } data_filler { type: "constant" value: 1 } } }
    layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
      inner_product_param { num_output: 4 weight_filler { type: "gaussian" std: 0.5 } } }
    layer { name: "sig" type: "Sigmoid" bottom: "ip" top: "ip" }
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" })");
  WriteFileAtomically(dir + "/solver.prototxt", "net: '" + dir + R"(/net.prototxt'
    base_lr: 0.1
    lr_policy: "fixed"
    display: 1
    max_iter: 2
    random_seed: 5
    snapshot_after_train: false)");
  const std::string env =
      "DLCAFFE_KERNEL_CACHE=" + dir + "/kernels DLCAFFE_TUNING_CACHE=" + dir + "/tuning";
  for (int round = 0; round < 2; ++round) {
    std::vector<ToolResult> results(3);
    std::vector<std::thread> threads;
    for (int p = 0; p < 3; ++p)
      threads.emplace_back([&, p] {
        results[p] = RunDlcaffe("train --solver=" + dir + "/solver.prototxt", env);
      });
    for (auto& t : threads) t.join();
    auto losses = [](const std::string& out) {
      std::istringstream lines(out);
      std::string line, kept;
      while (std::getline(lines, line))
        if (Contains(line, "Train net output")) kept += line.substr(line.find("Train")) + "\n";
      return kept;
    };
    for (int p = 0; p < 3; ++p) {
      SCOPED_TRACE("round " + std::to_string(round) + " process " + std::to_string(p));
      EXPECT_EQ(results[p].exit_code, 0) << results[p].output;
      EXPECT_FALSE(Contains(results[p].output, "cache: ")) << results[p].output;
      EXPECT_FALSE(losses(results[p].output).empty());
      EXPECT_EQ(losses(results[p].output), losses(results[0].output));
    }
  }
  EXPECT_EQ(RunCommand("ls '" + dir + "/kernels' | grep -c tmp").output, "0\n");
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
