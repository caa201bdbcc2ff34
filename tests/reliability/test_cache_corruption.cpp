// Issue 13, corrupted cache entries: every kernel-cache entry carries its
// length and checksum, and every tuning-cache line its checksum, so that a
// truncated, bit-flipped, resized or old-format entry is rebuilt (with a
// warning naming the file), never loaded; the results do not change and the
// cache is written anew.
#include <dirent.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../../src/core/cache_files.hpp"
#include "dlcaffe/io.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

std::vector<std::string> FilesIn(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> paths;
  DIR* d = opendir(dir.c_str());
  if (!d) return paths;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      paths.push_back(dir + "/" + name);
  }
  closedir(d);
  return paths;
}

TEST(CacheEntry, SealedEntriesRoundTripAndDamageIsFound) {
  const std::string payload("\x7f" "ELF binary \0 with zeros\n", 24);
  const std::string sealed = SealCacheEntry(payload);
  std::string out, why;
  ASSERT_TRUE(UnsealCacheEntry(sealed, &out, &why)) << why;
  EXPECT_EQ(out, payload);
  // Every single-bit flip anywhere is found.
  for (size_t byte = 0; byte < sealed.size(); ++byte)
    for (int bit = 0; bit < 8; ++bit) {
      std::string flipped = sealed;
      flipped[byte] ^= char(1 << bit);
      EXPECT_FALSE(UnsealCacheEntry(flipped, &out, &why)) << byte << ":" << bit;
    }
  for (size_t cut = 0; cut < sealed.size(); ++cut)
    EXPECT_FALSE(UnsealCacheEntry(sealed.substr(0, cut), &out, &why)) << cut;
  EXPECT_FALSE(UnsealCacheEntry(sealed + "x", &out, &why));
  EXPECT_TRUE(Contains(why, "header says")) << why;
  EXPECT_FALSE(UnsealCacheEntry(payload, &out, &why));  // an old-format entry
  EXPECT_TRUE(Contains(why, "old-format")) << why;
  EXPECT_FALSE(UnsealCacheEntry("", &out, &why));
}

// A tiny net whose forward uses several kernels (GEMM, bias, ReLU, softmax),
// run by `dlcaffe time` with both caches in a folder of the test's own, then
// its outputs by `dlcaffe test` on fixed weights.
struct CachedRun {
  std::string dir = TempDir();
  std::string env() const {
    return "DLCAFFE_KERNEL_CACHE=" + dir + "/kernels DLCAFFE_TUNING_CACHE=" + dir + "/tuning";
  }
  std::string net() const { return dir + "/net.prototxt"; }
};

CachedRun MakeCachedRun() {
  CachedRun run;
  WriteFileAtomically(run.net(), R"(
    name: "cached"
    layer { name: "data" type: "DummyData" top: "data" top: "label"
      dummy_data_param { shape { dim: 5 dim: 7 } shape { dim: 5 }
        data_filler { type: "gaussian" std: 1 } data_filler { type: "constant" value: 2 } } }
    layer { name: "ip1" type: "InnerProduct" bottom: "data" top: "ip1"
      inner_product_param { num_output: 9 weight_filler { type: "gaussian" std: 0.5 }
        bias_filler { type: "constant" value: 0.1 } } }
    layer { name: "relu" type: "ReLU" bottom: "ip1" top: "ip1" }
    layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2"
      inner_product_param { num_output: 4 weight_filler { type: "gaussian" std: 0.5 } } }
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" })");
  return run;
}

// The loss lines of a short training run with a fixed seed.
std::string LossLines(const std::string& output) {
  std::istringstream lines(output);
  std::string line, losses;
  while (std::getline(lines, line))
    if (Contains(line, "Train net output")) losses += line.substr(line.find("Train net")) + "\n";
  return losses;
}

ToolResult Train(const CachedRun& run) {
  WriteFileAtomically(run.dir + "/solver.prototxt", "net: '" + run.net() + R"('
    base_lr: 0.1
    lr_policy: "fixed"
    display: 1
    max_iter: 3
    random_seed: 3
    snapshot_after_train: false)");
  return RunDlcaffe("train --solver=" + run.dir + "/solver.prototxt", run.env());
}

TEST(KernelCache, CorruptEntriesAreRebuiltNotLoaded) {
  const CachedRun run = MakeCachedRun();
  const ToolResult first = Train(run);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const std::vector<std::string> entries = FilesIn(run.dir + "/kernels", ".bin");
  ASSERT_GE(entries.size(), 3u);
  const std::string reference = LossLines(first.output);
  ASSERT_FALSE(reference.empty()) << first.output;

  // Damage every entry, each in one of four ways.
  std::vector<std::string> sealed;
  for (size_t i = 0; i < entries.size(); ++i) {
    std::string bytes = ReadFileBytes(entries[i]);
    sealed.push_back(bytes);
    std::string payload, why;
    ASSERT_TRUE(UnsealCacheEntry(bytes, &payload, &why)) << entries[i] << ": " << why;
    switch (i % 4) {
      case 0: bytes.resize(bytes.size() / 2); break;             // truncated
      case 1: bytes[bytes.size() * 2 / 3] ^= 0x10; break;        // a bit flipped
      case 2: bytes += std::string(100, '\0'); break;            // wrong size
      case 3: bytes = payload; break;                            // old format
    }
    WriteFileAtomically(entries[i], bytes);
  }
  const ToolResult second = Train(run);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_EQ(LossLines(second.output), reference);
  for (size_t i = 0; i < entries.size(); ++i) {
    SCOPED_TRACE(entries[i]);
    EXPECT_TRUE(Contains(second.output, "kernel cache: ignoring corrupt entry " + entries[i]))
        << second.output;
    // Rewritten whole: a valid entry again (the same binary, as the
    // compiler is deterministic here, is not required).
    std::string payload, why;
    EXPECT_TRUE(UnsealCacheEntry(ReadFileBytes(entries[i]), &payload, &why)) << why;
  }
  // A third run loads every entry without a warning.
  const ToolResult third = Train(run);
  ASSERT_EQ(third.exit_code, 0) << third.output;
  EXPECT_EQ(LossLines(third.output), reference);
  EXPECT_FALSE(Contains(third.output, "cache: ignoring")) << third.output;
}

TEST(TuningCache, CorruptLinesAreDroppedAndTheFileRewritten) {
  const CachedRun run = MakeCachedRun();
  const ToolResult tuned =
      RunDlcaffe("tune --model=" + run.net() + " --iterations=1", run.env());
  ASSERT_EQ(tuned.exit_code, 0) << tuned.output;
  const std::vector<std::string> files = FilesIn(run.dir + "/tuning", ".txt");
  ASSERT_EQ(files.size(), 1u);
  const std::string good = ReadFileBytes(files[0]);
  const ToolResult before = Train(run);
  ASSERT_EQ(before.exit_code, 0) << before.output;
  EXPECT_FALSE(Contains(before.output, "cache: ")) << before.output;

  // A bit flipped in an entry line: that line is dropped, with a warning.
  std::string flipped = good;
  const size_t line = flipped.find("\n", flipped.find("# M N K")) + 1;
  flipped[line + 2] ^= 0x01;
  WriteFileAtomically(files[0], flipped);
  ToolResult r = Train(run);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "tuning cache: ignoring 1 corrupt or old-format line of " +
                                     files[0] + " (first: line 3)"))
      << r.output;

  // Cut short: the end line is missing.
  WriteFileAtomically(files[0], good.substr(0, good.rfind("# end")));
  r = Train(run);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, files[0] + " is truncated or altered")) << r.output;

  // An old-format file (no checksums): every line dropped; tuning again
  // writes the file whole and valid.
  std::string old_format;
  std::istringstream lines(good);
  std::string l;
  while (std::getline(lines, l)) {
    if (l.rfind("# end", 0) == 0) continue;
    if (l[0] != '#') l = l.substr(0, l.rfind(" | "));
    old_format += l + "\n";
  }
  WriteFileAtomically(files[0], old_format);
  r = Train(run);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "corrupt or old-format line")) << r.output;
  r = RunDlcaffe("tune --model=" + run.net() + " --iterations=1", run.env());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string rewritten = ReadFileBytes(files[0]);
  EXPECT_TRUE(Contains(rewritten, "# end: ")) << rewritten;
  r = Train(run);
  EXPECT_FALSE(Contains(r.output, "cache: ")) << r.output;
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
