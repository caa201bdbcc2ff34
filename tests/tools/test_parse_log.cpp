// tools/extra/parse_log.py on a real dlcaffe training log (two test nets,
// iter_size 2, a step learning rate) and on synthetic glog prefixes; and the
// Speed/ETA display line: sane, and invisible to Caffe's own log parsers.
#include <gtest/gtest.h>
#include <utime.h>

#include <cmath>
#include <ctime>
#include <map>
#include <regex>
#include <sstream>
#include <vector>

#include "dlcaffe/io.hpp"
#include "util/run_script.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

constexpr int kBatch = 8, kIterSize = 2, kMaxIter = 30;

struct Csv {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  double At(size_t row, const std::string& column) const {
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == column) return std::stod(rows.at(row).at(i));
    ADD_FAILURE() << "no column " << column;
    return NAN;
  }
};

std::vector<std::string> SplitOn(const std::string& line, char delimiter) {
  std::vector<std::string> cells;
  std::stringstream in(line);
  std::string cell;
  while (std::getline(in, cell, delimiter)) cells.push_back(cell);
  return cells;
}

Csv ReadCsv(const std::string& path, char delimiter = ',') {
  Csv csv;
  std::stringstream in(ReadFileBytes(path));
  std::string line;
  while (std::getline(in, line)) {
    if (csv.header.empty())
      csv.header = SplitOn(line, delimiter);
    else
      csv.rows.push_back(SplitOn(line, delimiter));
  }
  return csv;
}

// A tiny net on DummyData (label 1 everywhere) with two test nets: a
// training log in about a second.
std::string TrainTinyNet() {
  const std::string dir = TempDir();
  WriteFileAtomically(dir + "/net.prototxt", R"(
    name: "tiny"
    layer { name: "data" type: "DummyData" top: "data" top: "label"
      dummy_data_param { shape { dim: 8 dim: 6 } shape { dim: 8 }
        data_filler { type: "gaussian" std: 1 } data_filler { type: "constant" value: 1 } } }
    layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
      inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
    layer { name: "accuracy" type: "Accuracy" bottom: "ip" bottom: "label" top: "accuracy"
      include { phase: TEST } })");
  WriteFileAtomically(dir + "/solver.prototxt", "net: '" + dir + R"(/net.prototxt'
    test_iter: 2
    test_iter: 3
    test_interval: 10
    base_lr: 0.1
    lr_policy: "step"
    gamma: 0.5
    stepsize: 10
    display: 5
    max_iter: 30
    iter_size: 2
    snapshot_after_train: false
    random_seed: 1)");
  ToolResult r = RunDlcaffe("train --solver=" + dir + "/solver.prototxt");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  WriteFileAtomically(dir + "/train.log", r.output);
  return dir + "/train.log";
}

// The log, trained once for all tests, and its CSVs.
struct ParsedRun {
  std::string log_path, log;
  Csv train, test;
};

const ParsedRun& TinyRun() {
  static const ParsedRun run = [] {
    ParsedRun p;
    p.log_path = TrainTinyNet();
    p.log = ReadFileBytes(p.log_path);
    const std::string out = TempDir();
    ToolResult r = RunScript("parse_log.py", p.log_path + " " + out);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    p.train = ReadCsv(out + "/train.log.train");
    p.test = ReadCsv(out + "/train.log.test");
    return p;
  }();
  return run;
}

// Every match of `pattern` in the log: its capture groups.
std::vector<std::smatch> Matches(const std::string& log, const std::string& pattern) {
  const std::regex re(pattern);
  return {std::sregex_iterator(log.begin(), log.end(), re), std::sregex_iterator()};
}

// Same number as printed in the log (6 significant digits) and in the CSV.
void ExpectSameValue(const std::string& logged, double parsed, const std::string& what) {
  EXPECT_NEAR(std::stod(logged), parsed, 1e-6 * std::max(1.0, std::fabs(parsed))) << what;
}

}  // namespace

TEST(ParseLog, TrainCsvHoldsTheLoggedOutputsAndRates) {
  const ParsedRun& run = TinyRun();
  ASSERT_EQ(run.train.header, (std::vector<std::string>{"NumIters", "Seconds", "LearningRate",
                                                         "loss"}));
  const auto outputs = Matches(run.log, R"(Iteration (\d+) \([^\n]*\n(?:[^\n]*Speed:[^\n]*\n)?)"
                                        R"([^\n]*Train net output #0: loss = (\S+))");
  const auto rates = Matches(run.log, R"(Iteration (\d+), lr = (\S+))");
  ASSERT_EQ(outputs.size(), 6u) << run.log;  // iterations 0, 5, ..., 25
  ASSERT_EQ(run.train.rows.size(), outputs.size());
  ASSERT_EQ(rates.size(), outputs.size());
  double last_seconds = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    EXPECT_EQ(run.train.At(i, "NumIters"), std::stoi(outputs[i][1]));
    ExpectSameValue(outputs[i][2], run.train.At(i, "loss"), "loss, row " + std::to_string(i));
    EXPECT_EQ(rates[i][1], outputs[i][1]);
    ExpectSameValue(rates[i][2], run.train.At(i, "LearningRate"), "lr, row " + std::to_string(i));
    const double seconds = run.train.At(i, "Seconds");
    EXPECT_GE(seconds, last_seconds) << "row " << i;
    last_seconds = seconds;
  }
  // The step policy halves the rate every 10 iterations.
  EXPECT_DOUBLE_EQ(run.train.At(0, "LearningRate"), 0.1);
  EXPECT_DOUBLE_EQ(run.train.At(5, "LearningRate"), 0.025);
  EXPECT_LT(last_seconds, 600) << "seconds count from the start of this short run";
}

TEST(ParseLog, TestCsvHasOneRowPerPassAndNamesEachNetsColumns) {
  const ParsedRun& run = TinyRun();
  ASSERT_EQ(run.test.header,
            (std::vector<std::string>{"NumIters", "Seconds", "LearningRate", "net0/accuracy",
                                      "net0/loss", "net1/accuracy", "net1/loss"}));
  const auto passes = Matches(run.log, R"(Iteration (\d+), Testing net \(#(\d)\)[^\n]*\n)"
                                       R"([^\n]*Test net output #0: accuracy = (\S+)[^\n]*\n)"
                                       R"([^\n]*Test net output #1: loss = (\S+))");
  ASSERT_EQ(passes.size(), 8u) << run.log;  // iterations 0, 10, 20, 30; nets 0 and 1
  ASSERT_EQ(run.test.rows.size(), 4u);
  double last_seconds = 0;
  for (const auto& pass : passes) {
    const size_t row = std::stoi(pass[1]) / 10;
    const std::string net = "net" + pass[2].str() + "/";
    EXPECT_EQ(run.test.At(row, "NumIters"), std::stoi(pass[1]));
    ExpectSameValue(pass[3], run.test.At(row, net + "accuracy"), pass.str());
    ExpectSameValue(pass[4], run.test.At(row, net + "loss"), pass.str());
  }
  for (size_t row = 0; row < run.test.rows.size(); ++row) {
    EXPECT_GE(run.test.At(row, "Seconds"), last_seconds);
    last_seconds = run.test.At(row, "Seconds");
  }
  // The last pass (after iteration 29) keeps the last logged rate.
  EXPECT_DOUBLE_EQ(run.test.At(3, "LearningRate"), 0.025);
}

TEST(ParseLog, SpeedLineIsSaneAndCaffesParsersSkipIt) {
  const ParsedRun& run = TinyRun();
  const auto speeds = Matches(run.log, R"(Iteration (\d+) \((\S+) iter/s, [^\n]*\n)"
                                       R"([^\n]*\] (    Speed: (\S+) images/s, ETA (\d+):(\d\d):)"
                                       R"((\d\d) \(iteration (\d+) of (\d+)\)))");
  // Every display but the first (no interval measured yet) has one.
  ASSERT_EQ(speeds.size(), 5u) << run.log;
  for (const auto& s : speeds) {
    const double iters_per_s = std::stod(s[2]);
    EXPECT_GT(iters_per_s, 0) << s.str();
    EXPECT_NEAR(std::stod(s[4]), iters_per_s * kBatch * kIterSize,
                0.06 + 1e-5 * iters_per_s * kBatch * kIterSize)
        << s.str();
    EXPECT_EQ(s[8], s[1]) << s.str();
    EXPECT_EQ(std::stoi(s[9]), kMaxIter) << s.str();
    const int eta = std::stoi(s[5]) * 3600 + std::stoi(s[6]) * 60 + std::stoi(s[7]);
    const double expected = (kMaxIter - std::stoi(s[1])) / iters_per_s;
    EXPECT_LE(std::fabs(eta - expected), 1.0) << s.str();
    // Caffe's parse_log.py, parse_log.sh and extract_seconds.py patterns.
    const std::string line = s[3];
    for (const char* caffe_pattern :
         {R"(Iteration (\d+))", R"(Train net output #(\d+): (\S+) = ([\.\deE+-]+))",
          R"(Test net output #(\d+): (\S+) = ([\.\deE+-]+))", R"(lr = ([-+]?[0-9]*\.?[0-9]+))",
          R"(Iteration \d+, loss = ([\.\d]+))", R"(output #\d+: (accuracy|loss) = )",
          "Iteration ", "Iteration", ", loss = ", ", lr = ", "Train net", "Test net",
          "Testing net", "Solving", "Train", "Test"})
      EXPECT_FALSE(std::regex_search(line, std::regex(caffe_pattern)))
          << "'" << caffe_pattern << "' matches " << line;
  }
}

// A log by glog 0.5 (no year) or 0.6 (year), across New Year's midnight, with
// a missing and a wide thread id.
std::string SyntheticLog(bool with_year) {
  const auto prefix = [&](const std::string& month_day, const std::string& time,
                          const std::string& thread) {
    const std::string year = month_day.substr(0, 2) == "12" ? "2025" : "2026";
    return "I" + (with_year ? year : "") + month_day + " " + time + thread + "solver.cpp:9] ";
  };
  return prefix("1231", "23:59:50.000000", "  1234 ") + "Solver scaffolding done.\n" +
         prefix("1231", "23:59:58.500000", "  1234 ") + "Solving tiny\n" +
         prefix("1231", "23:59:59.000000", " 140231234567890 ") +
         "Iteration 0, Testing net (#0)\n" +
         prefix("1231", "23:59:59.250000", " ") + "    Test net output #0: accuracy = 0.5\n" +
         prefix("1231", "23:59:59.500000", "  1234 ") +
         "Iteration 0 (0 iter/s, 0.1s/10 iters), loss = 2.5\n" +
         prefix("1231", "23:59:59.500000", "  1234 ") +
         "    Train net output #0: loss = 2.5 (* 1 = 2.5 loss)\n" +
         prefix("1231", "23:59:59.500000", "  1234 ") + "Iteration 0, lr = 0.01\n" +
         prefix("0101", "00:00:09.500000", "  1234 ") +
         "Iteration 10 (1 iter/s, 10s/10 iters), loss = 1.5\n" +
         prefix("0101", "00:00:09.500000", "  1234 ") +
         "    Speed: 64.0 images/s, ETA 0:00:10 (iteration 10 of 20)\n" +
         prefix("0101", "00:00:09.500000", "  1234 ") +
         "    Train net output #0: loss = 1.25 (* 1 = 1.25 loss)\n" +
         prefix("0101", "00:00:09.500000", "  1234 ") + "Iteration 10, lr = 0.005\n" +
         prefix("0101", "00:00:19.500000", "  1234 ") + "Iteration 20, Testing net (#0)\n" +
         prefix("0101", "00:00:20.000000", "  1234 ") + "    Test net output #0: accuracy = 0.9\n";
}

void SetFileTime(const std::string& path, int year, int month, int day) {
  std::tm tm = {};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = 12;
  tm.tm_isdst = -1;
  const utimbuf times{std::mktime(&tm), std::mktime(&tm)};
  ASSERT_EQ(utime(path.c_str(), &times), 0) << path;
}

// parse_log.py on `text` (written with modification time `file_date`).
std::pair<Csv, Csv> Parse(const std::string& text, int year = 2026, int month = 1, int day = 1) {
  const std::string dir = TempDir();
  WriteFileAtomically(dir + "/x.log", text);
  SetFileTime(dir + "/x.log", year, month, day);
  ToolResult r = RunScript("parse_log.py", dir + "/x.log " + dir);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return {ReadCsv(dir + "/x.log.train"), ReadCsv(dir + "/x.log.test")};
}

TEST(ParseLog, GlogPrefixesWithAndWithoutYearAcrossNewYear) {
  for (bool with_year : {false, true}) {
    SCOPED_TRACE(with_year ? "glog 0.6 (year)" : "glog 0.5 (no year)");
    const auto csv = Parse(SyntheticLog(with_year));
    const Csv& train = csv.first;
    const Csv& test = csv.second;
    ASSERT_EQ(train.rows.size(), 2u);
    ASSERT_EQ(test.rows.size(), 2u);
    // Seconds from the "Solving" line (23:59:58.5), as Caffe's parser counts.
    EXPECT_DOUBLE_EQ(train.At(0, "Seconds"), 1.0);
    EXPECT_DOUBLE_EQ(train.At(1, "Seconds"), 11.0);
    EXPECT_DOUBLE_EQ(test.At(0, "Seconds"), 0.75);
    EXPECT_DOUBLE_EQ(test.At(1, "Seconds"), 21.5);
    EXPECT_DOUBLE_EQ(train.At(1, "loss"), 1.25);
    EXPECT_DOUBLE_EQ(train.At(1, "LearningRate"), 0.005);
    EXPECT_DOUBLE_EQ(test.At(1, "accuracy"), 0.9);
    EXPECT_DOUBLE_EQ(test.At(1, "LearningRate"), 0.005);
  }
}

TEST(ParseLog, YearlessLogTakesItsYearFromGlogsHeaderOrTheFileTime) {
  // Across the end of February: a leap day in 2024, none in 2023.
  const std::string body = "I0228 23:59:59.000000  1 solver.cpp:1] Solving x\n"
                           "I0301 00:00:01.000000  1 solver.cpp:1] Iteration 0, lr = 0.1\n"
                           "I0301 00:00:01.000000  1 solver.cpp:1]     Train net output #0: "
                           "loss = 1\n";
  EXPECT_DOUBLE_EQ(Parse(body, 2024, 3, 2).first.At(0, "Seconds"), 86402.0);
  EXPECT_DOUBLE_EQ(Parse(body, 2023, 3, 2).first.At(0, "Seconds"), 2.0);
  // A file last written in January of the next year: the lines are from 2024.
  EXPECT_DOUBLE_EQ(Parse(body, 2025, 1, 5).first.At(0, "Seconds"), 86402.0);
  // glog's header names the year whatever the file time says.
  EXPECT_DOUBLE_EQ(
      Parse("Log file created at: 2024/02/28 23:59:59\n" + body, 2023, 3, 2).first.At(0, "Seconds"),
      86402.0);
}

TEST(ParseLog, DelimiterAndVerboseAsCaffes) {
  const std::string dir = TempDir();
  WriteFileAtomically(dir + "/y.log", SyntheticLog(true));
  ToolResult r = RunScript("parse_log.py", "--delimiter ';' --verbose " + dir + "/y.log " + dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "Wrote " + dir + "/y.log.train")) << r.output;
  EXPECT_TRUE(Contains(r.output, "Wrote " + dir + "/y.log.test")) << r.output;
  const Csv train = ReadCsv(dir + "/y.log.train", ';');
  EXPECT_EQ(train.header, (std::vector<std::string>{"NumIters", "Seconds", "LearningRate",
                                                     "loss"}));
  EXPECT_EQ(train.rows.size(), 2u);
}

TEST(ParseLog, BadInputsEndInOneMessage) {
  const std::string dir = TempDir();
  ExpectCleanScriptError(RunScript("parse_log.py", "/nonexistent/train.log " + dir),
                         "parse_log.py", "/nonexistent/train.log");
  WriteFileAtomically(dir + "/empty.log", "I1124 10:00:00.000000  1 net.cpp:1] nothing here\n");
  ExpectCleanScriptError(RunScript("parse_log.py", dir + "/empty.log " + dir), "parse_log.py",
                         "no training iterations");
  WriteFileAtomically(dir + "/z.log", SyntheticLog(true));
  ExpectCleanScriptError(RunScript("parse_log.py", dir + "/z.log /nonexistent/dir"),
                         "parse_log.py", "/nonexistent/dir");
}

}  // namespace test
}  // namespace dlcaffe
