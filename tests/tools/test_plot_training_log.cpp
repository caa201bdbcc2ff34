// tools/extra/plot_training_log.py: two logs on one picture of the asked
// size (PNG decoded by OpenCV), SVG and PDF by extension, clear errors.
#include <gtest/gtest.h>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <cstdio>
#include <string>

#include "dlcaffe/io.hpp"
#include "util/run_script.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

// A glog-prefixed training log: `iterations` display steps with a falling
// loss and a test pass every other one; `year` in the prefix (glog 0.6) or not.
std::string WriteLog(const std::string& path, int iterations, float start_loss, bool year) {
  std::string log;
  char line[256];
  const auto add = [&](int second, const std::string& message) {
    std::snprintf(line, sizeof(line), "I%s1124 10:%02d:%02d.000000  42 solver.cpp:1] %s\n",
                  year ? "2026" : "", second / 60, second % 60, message.c_str());
    log += line;
  };
  add(0, "Solving tiny");
  for (int i = 0; i <= iterations; ++i) {
    const float loss = start_loss / (1 + i);
    if (i % 2 == 0) {
      add(10 * i, "Iteration " + std::to_string(100 * i) + ", Testing net (#0)");
      add(10 * i, "    Test net output #0: accuracy = " + std::to_string(1 - loss / 4));
      add(10 * i, "    Test net output #1: loss = " + std::to_string(loss));
    }
    add(10 * i + 1, "Iteration " + std::to_string(100 * i) + " (5 iter/s, 20s/100 iters), loss = " +
                        std::to_string(loss));
    add(10 * i + 1, "    Train net output #0: loss = " + std::to_string(loss));
    add(10 * i + 1, "Iteration " + std::to_string(100 * i) + ", lr = 0.01");
  }
  WriteFileAtomically(path, log);
  return path;
}

struct Logs {
  std::string dir, first, second;
};

const Logs& TwoLogs() {
  static const Logs logs = [] {
    Logs l;
    l.dir = TempDir();
    l.first = WriteLog(l.dir + "/sgd.log", 8, 2.5f, true);
    l.second = WriteLog(l.dir + "/adam.log", 6, 2.0f, false);
    return l;
  }();
  return logs;
}

}  // namespace

TEST(PlotTrainingLog, TwoLogsMakeAPngOfTheAskedSize) {
  const Logs& logs = TwoLogs();
  const std::string png = logs.dir + "/both.png";
  ToolResult r = RunScript("plot_training_log.py", png + " " + logs.first + " " + logs.second +
                                                       " --size 900x600 --dpi 100");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const cv::Mat image = cv::imread(png, cv::IMREAD_COLOR);
  ASSERT_FALSE(image.empty()) << png;
  EXPECT_EQ(image.cols, 900);
  EXPECT_EQ(image.rows, 600);
  double low, high;
  cv::minMaxLoc(image.reshape(1), &low, &high);
  EXPECT_LT(low, 100) << "nothing drawn";
  EXPECT_EQ(high, 255);
}

TEST(PlotTrainingLog, DefaultSizeFollowsTheChosenOutputsAndAxes) {
  const Logs& logs = TwoLogs();
  const std::string png = logs.dir + "/chosen.png";
  ToolResult r = RunScript("plot_training_log.py",
                           png + " " + logs.first + " " + logs.second +
                               " --outputs train:loss,test:accuracy --x seconds");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const cv::Mat image = cv::imread(png, cv::IMREAD_COLOR);
  ASSERT_FALSE(image.empty()) << png;
  EXPECT_EQ(image.cols, 700);   // one column of plots
  EXPECT_EQ(image.rows, 600);   // 300 per output
}

TEST(PlotTrainingLog, SvgAndPdfByExtension) {
  const Logs& logs = TwoLogs();
  for (const char* ext : {".svg", ".pdf"}) {
    const std::string out = logs.dir + "/plot" + ext;
    ToolResult r = RunScript("plot_training_log.py",
                             out + " " + logs.first + " --outputs loss --size 600x400");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string text = ReadFileBytes(out);
    EXPECT_TRUE(Contains(text, ext == std::string(".svg") ? "<svg" : "%PDF")) << out;
  }
}

TEST(PlotTrainingLog, BadInputsEndInOneMessage) {
  const Logs& logs = TwoLogs();
  const std::string png = logs.dir + "/bad.png";
  ExpectCleanScriptError(RunScript("plot_training_log.py", png + " /nonexistent/train.log"),
                         "plot_training_log.py", "/nonexistent/train.log");
  WriteFileAtomically(logs.dir + "/empty.log", "I1124 10:00:00.000000  1 net.cpp:1] nothing\n");
  ExpectCleanScriptError(RunScript("plot_training_log.py", png + " " + logs.dir + "/empty.log"),
                         "plot_training_log.py", "no training iterations");
  ToolResult unknown =
      RunScript("plot_training_log.py", png + " " + logs.first + " --outputs test:top5");
  ExpectCleanScriptError(unknown, "plot_training_log.py", "'test:top5'");
  EXPECT_TRUE(Contains(unknown.output, "test:accuracy")) << "should list the outputs it has";
  ExpectCleanScriptError(RunScript("plot_training_log.py", logs.dir + "/x.gif " + logs.first),
                         "plot_training_log.py", "x.gif");
  EXPECT_FALSE(FileExists(png));
}

}  // namespace test
}  // namespace dlcaffe
