// End to end, the README's language-model walk-through at a tiny size: the
// fortunes package's English text (Debian's `fortunes`) into windows of
// characters with tools/convert_text, the char_gpt prototxts written by
// models/char_gpt/make_char_gpt.py for a 2-block decoder of width 64, trained
// with `dlcaffe train` (AdamW, warm-up, cosine decay), then `dlcaffe
// generate`. It must learn: the held-out loss must end well under the text's
// unigram entropy (what a model that ignores the context reaches), computed
// here from the files themselves. Greedy generation must give the same text
// with the key/value cache and without it.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "util/run_script.hpp"
#include "util/test_context.hpp"
#include "util/test_depth.hpp"

namespace dlcaffe {
namespace test {
namespace {

namespace fs = std::filesystem;

const char kFortunes[] = "/usr/share/games/fortunes";
// 1500 iterations at nightly depth (util/test_depth.hpp), 1000 in CI.
const int kIterations = ByDepth(1000, 1500);

// Unicode code points of UTF-8 text (the files are valid UTF-8).
std::vector<uint32_t> CodePoints(const std::string& text) {
  std::vector<uint32_t> points;
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = text[i];
    const int extra = c < 0x80 ? 0 : c < 0xE0 ? 1 : c < 0xF0 ? 2 : 3;
    uint32_t point = extra == 0 ? c : c & (0x3F >> extra);
    for (int k = 1; k <= extra && i + k < text.size(); ++k) point = (point << 6) | (text[i + k] & 0x3F);
    points.push_back(point);
    i += extra + 1;
  }
  return points;
}

// The entropy, in bits per character, of the characters of every text file
// of the folder (files holding a NUL byte are binary indexes; links read once).
double UnigramEntropy(const std::string& folder) {
  std::map<uint32_t, double> counts;
  std::set<fs::path> seen;
  double total = 0;
  for (const auto& entry : fs::recursive_directory_iterator(folder)) {
    if (!fs::is_regular_file(entry.path()) || !seen.insert(fs::canonical(entry.path())).second)
      continue;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find('\0') != std::string::npos) continue;
    for (uint32_t point : CodePoints(text)) counts[point] += 1, total += 1;
  }
  double entropy = 0;
  for (const auto& [point, count] : counts) entropy -= count / total * std::log2(count / total);
  return entropy;
}

// The last "Test net output #K: <name> = X" of a training log (-1: none).
double LastTestOutput(const std::string& log, const std::string& name) {
  const std::regex line("Test net output #\\d+: " + name + " = ([0-9.eE+-]+)");
  double value = -1;
  for (std::sregex_iterator it(log.begin(), log.end(), line), end; it != end; ++it)
    value = std::stod((*it)[1]);
  return value;
}

}  // namespace

TEST(CharGpt, LearnsEnglishTextWellUnderItsUnigramEntropyAndGeneratesWithTheCache) {
  ASSERT_TRUE(fs::is_directory(kFortunes))
      << kFortunes << " is missing: scripts/install_deps.sh installs Debian's fortunes package";
  const double unigram = UnigramEntropy(kFortunes);
  ASSERT_GT(unigram, 3.0);  // English text: about 4.5 bits per character

  const std::string work = TempDir();
  auto run = [&](const std::string& command) {
    return RunCommand("cd '" + SourceDir() + "' && " + command);
  };
  ToolResult r = run("'" + BuildDir() + "/tools/convert_text' --window=64 --shuffle " + kFortunes + " '" +
                     work + "/fortunes'");
  ASSERT_EQ(r.exit_code, 0) << r.output;

  r = run("PYTHONPATH='" + BuildDir() + "/python' '" + TestPython() +
          "' models/char_gpt/make_char_gpt.py --vocab '" + work + "/fortunes/vocab.txt' --data '" +
          work + "/fortunes' --out '" + work + "/model' --layers 2 --width 64 --heads 4 "
          "--window 64 --batch 16 --lr 3e-3 --warmup 40 --iterations " +
          std::to_string(kIterations) + " --test_interval " + std::to_string(kIterations) +
          " --test_iter 40 --display 100");
  ASSERT_EQ(r.exit_code, 0) << r.output;

  r = run("'" + BuildDir() + "/tools/dlcaffe' train --solver='" + work + "/model/solver.prototxt'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const double bpc = LastTestOutput(r.output, "bpc");
  ASSERT_GT(bpc, 0) << r.output;
  // The bar: 70% of the unigram entropy (3.35 of 4.79 bits); after 400
  // iterations the model is at 3.7 (bigram-like), after 1500 at about 2.9;
  // CI's 1000 passed the bar here.
  EXPECT_LT(bpc, 0.7 * unigram) << "held-out bits per character " << bpc << ", unigram entropy "
                                 << unigram << "\n" << r.output;
  const std::string weights =
      work + "/model/char_gpt_iter_" + std::to_string(kIterations) + ".caffemodel";
  ASSERT_TRUE(fs::exists(weights)) << r.output;

  // Greedy text: the same with the key/value cache as with the whole context
  // rerun for every token.
  const std::string generate = "'" + BuildDir() + "/tools/dlcaffe' generate --model='" + work +
                               "/model/deploy.prototxt' --weights='" + weights + "' --vocab='" +
                               work + "/fortunes/vocab.txt' --prompt='The ' --tokens=40 "
                               "--temperature=0 2>/dev/null";
  const ToolResult cached = run(generate);
  const ToolResult uncached = run(generate + " --kv_cache=false");
  ASSERT_EQ(cached.exit_code, 0) << cached.output;
  ASSERT_EQ(uncached.exit_code, 0) << uncached.output;
  EXPECT_EQ(cached.output.rfind("The ", 0), 0u) << cached.output;
  EXPECT_GE(CodePoints(cached.output).size(), 44u) << cached.output;
  EXPECT_EQ(cached.output, uncached.output);
  // Sampled text follows the seed.
  const std::string sampled = generate.substr(0, generate.find("--temperature")) +
                              "--temperature=0.8 --top_k=10 --seed=3 2>/dev/null";
  EXPECT_EQ(run(sampled).output, run(sampled).output);
}

}  // namespace test
}  // namespace dlcaffe
