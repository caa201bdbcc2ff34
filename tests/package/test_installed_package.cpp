// The C++ API as another project sees it: `cmake --install` into a temporary
// prefix, then the CMake package (find_package + dlcaffe::dlcaffe), the
// pkg-config file, every public header on its own, and Caffe's classification
// example built as a separate project against the prefix and run on the
// photos in ../shared/data/images, checked against a forward pass here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "dlcaffe/io.hpp"
#include "dlcaffe/net.hpp"
#include "dlcaffe/version.hpp"
#include "util/onnx_model_builder.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

namespace fs = std::filesystem;

std::string Quote(const std::string& s) { return "'" + s + "'"; }

// A sanitizer build (scripts/sanitize.sh) installs an instrumented library:
// the programs built against it here must link the same runtime.
std::string SanitizeFlags() {
  const char* flags = std::getenv("DLCAFFE_SANITIZE_FLAGS");
  return flags ? flags : "";
}

// One install and one example build for the whole program.
class InstalledPackage : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    work_ = new std::string(TempDir());
    prefix_ = new std::string(*work_ + "/prefix");
    install_ = new ToolResult(RunCommand("cmake --install " + Quote(BuildDir()) + " --prefix " +
                                         Quote(*prefix_)));
  }
  static void TearDownTestSuite() {
    delete work_;
    delete prefix_;
    delete install_;
  }
  void SetUp() override { ASSERT_EQ(install_->exit_code, 0) << install_->output; }

  // A shell prefix that makes pkg-config see the installed dlcaffe.pc.
  static std::string PkgConfigEnv() {
    return "PKG_CONFIG_PATH=" + Quote(PkgConfigDir()) + " ";
  }
  static std::string PkgConfigDir() {
    for (const auto& entry : fs::recursive_directory_iterator(*prefix_))
      if (entry.path().filename() == "dlcaffe.pc") return entry.path().parent_path().string();
    return "";
  }
  static std::string PkgConfig(const std::string& args) {
    ToolResult r = RunCommand(PkgConfigEnv() + "pkg-config " + args + " dlcaffe");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    while (!r.output.empty() && std::isspace(static_cast<unsigned char>(r.output.back())))
      r.output.pop_back();
    return r.output;
  }

  static std::string* work_;
  static std::string* prefix_;
  static ToolResult* install_;
};
std::string* InstalledPackage::work_ = nullptr;
std::string* InstalledPackage::prefix_ = nullptr;
ToolResult* InstalledPackage::install_ = nullptr;

TEST_F(InstalledPackage, InstallsLibraryHeadersToolsAndPackageFiles) {
  const std::string libdir = PkgConfig("--variable=libdir");
  const std::string includedir = PkgConfig("--variable=includedir");
  EXPECT_TRUE(fs::exists(libdir + "/libdlcaffe.so")) << libdir;
  EXPECT_TRUE(fs::exists(libdir + "/cmake/dlcaffe/dlcaffeConfig.cmake"));
  EXPECT_TRUE(fs::exists(libdir + "/cmake/dlcaffe/dlcaffeConfigVersion.cmake"));
  for (const char* header : {"net.hpp", "blob.hpp", "context.hpp", "caffe.pb.h", "version.hpp",
                             "logging.hpp", "data/datum.hpp"})
    EXPECT_TRUE(fs::exists(includedir + "/dlcaffe/" + header)) << header;
  EXPECT_TRUE(fs::exists(*prefix_ + "/share/dlcaffe/proto/caffe.proto"));
  // The installed tools find the installed library (their RUNPATH).
  const ToolResult query = RunCommand(Quote(*prefix_ + "/bin/dlcaffe") + " device_query");
  EXPECT_EQ(query.exit_code, 0) << query.output;
  EXPECT_TRUE(Contains(query.output, "ocl:")) << query.output;
}

// Each public header compiles alone, with only the package's own flags: none
// leans on an include that comes before it or on a header that is not
// installed (src/ is nowhere on the include path).
TEST_F(InstalledPackage, EveryPublicHeaderCompilesOnItsOwn) {
  const std::string includedir = PkgConfig("--variable=includedir");
  const std::string cflags = PkgConfig("--cflags");
  std::vector<std::string> headers;
  for (const auto& entry : fs::recursive_directory_iterator(includedir + "/dlcaffe"))
    if (entry.path().extension() == ".hpp" || entry.path().extension() == ".h")
      headers.push_back(fs::relative(entry.path(), includedir).string());
  ASSERT_GE(headers.size(), 15u);
  // One compiler per core: each reads a header name and compiles it alone.
  std::string names;
  for (const auto& h : headers) names += h + "\n";
  const std::string script = "printf '" + names + "' | xargs -P \"$(nproc)\" -I{} sh -c "
                             "'printf \"#include <{}>\\n\" | c++ -std=c++17 -fsyntax-only " +
                             cflags + " -x c++ - && echo compiled: {}'";
  const ToolResult r = RunCommand(script);
  for (const auto& h : headers) EXPECT_TRUE(Contains(r.output, "compiled: " + h)) << r.output;
}

// A program built from the pkg-config flags alone links and runs, and the
// library it loads is the version its headers say.
TEST_F(InstalledPackage, PkgConfigBuildsAProgramOfTheSameVersion) {
  const std::string source = *work_ + "/version_main.cpp";
  std::ofstream(source) << "#include <cstdio>\n#include <dlcaffe/version.hpp>\n"
                           "int main() { std::printf(\"%s %s\\n\", DLCAFFE_VERSION_STRING, "
                           "dlcaffe::Version()); }\n";
  const std::string program = *work_ + "/version_main";
  const ToolResult build = RunCommand(
      "c++ -std=c++17 " + SanitizeFlags() + " " + Quote(source) + " -o " + Quote(program) + " " + PkgConfig("--cflags") +
      " " + PkgConfig("--libs") + " -Wl,-rpath," + PkgConfig("--variable=libdir"));
  ASSERT_EQ(build.exit_code, 0) << build.output;
  const ToolResult run = RunCommand(Quote(program));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, std::string(DLCAFFE_VERSION_STRING) + " " + DLCAFFE_VERSION_STRING + "\n");
  EXPECT_EQ(PkgConfig("--modversion"), DLCAFFE_VERSION_STRING);
}

// The example's prediction blocks: image -> (label, probability) in order.
using Printed = std::map<std::string, std::vector<std::pair<std::string, float>>>;
Printed ParsePredictions(const std::string& output) {
  Printed printed;
  std::istringstream lines(output);
  const std::regex header("---------- Prediction for (.*) ----------");
  const std::regex row("([0-9.]+) - \"(.*)\"");
  std::string line, current;
  std::smatch m;
  while (std::getline(lines, line)) {
    if (std::regex_match(line, m, header))
      current = m[1];
    else if (!current.empty() && std::regex_match(line, m, row))
      printed[current].emplace_back(m[2], std::stof(m[1]));
  }
  return printed;
}

std::vector<std::string> Photos() {
  std::vector<std::string> photos;
  for (const auto& entry : fs::directory_iterator(SourceDir() + "/../shared/data/images"))
    if (entry.path().extension() == ".jpg" || entry.path().extension() == ".png")
      photos.push_back(entry.path().string());
  std::sort(photos.begin(), photos.end());
  return photos;
}

// The reference: Caffe's example preprocessing written out here (resize,
// float, subtract the per-channel mean), one forward pass per image.
std::vector<float> ReferenceProbabilities(Net& net, const std::string& photo,
                                          const std::vector<float>& channel_mean) {
  Blob& input = *net.input_blobs()[0];
  const cv::Size size(input.width(), input.height());
  cv::Mat image = cv::imread(photo, cv::IMREAD_COLOR), resized, floats;
  cv::resize(image, resized, size);
  resized.convertTo(floats, CV_32FC3);
  std::vector<float> planar;
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < size.height; ++y)
      for (int x = 0; x < size.width; ++x)
        planar.push_back(floats.at<cv::Vec3f>(y, x)[c] - channel_mean[c]);
  input.Reshape({1, 3, size.height, size.width});
  net.Reshape();
  input.WriteData(planar);
  net.Forward();
  return net.output_blobs()[0]->ReadData();
}

void ExpectTopFiveMatch(const Printed& printed, const std::string& photo,
                        const std::vector<float>& probabilities,
                        const std::vector<std::string>& labels) {
  ASSERT_TRUE(printed.count(photo)) << photo;
  const auto& rows = printed.at(photo);
  ASSERT_EQ(rows.size(), 5u) << photo;
  std::vector<int> order(probabilities.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return probabilities[a] > probabilities[b]; });
  for (int j = 0; j < 5; ++j) {
    EXPECT_NEAR(rows[j].second, probabilities[order[j]], 1e-4) << photo << " rank " << j;
    // Near-ties may swap ranks; the printed probability must be that label's.
    const auto at = std::find(labels.begin(), labels.end(), rows[j].first);
    ASSERT_NE(at, labels.end()) << rows[j].first;
    EXPECT_NEAR(rows[j].second, probabilities[at - labels.begin()], 1e-4) << photo;
  }
}

class ClassificationExample : public InstalledPackage {
 protected:
  static void SetUpTestSuite() {
    InstalledPackage::SetUpTestSuite();
    if (install_->exit_code != 0) return;
    const std::string build_dir = *work_ + "/example_build";
    example_build_ = new ToolResult(RunCommand(
        "cmake -S " + Quote(SourceDir() + "/examples/cpp_classification") + " -B " +
        Quote(build_dir) + " -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=" + Quote(*prefix_) +
        (SanitizeFlags().empty() ? std::string()
                                 : " -DCMAKE_CXX_FLAGS=" + SanitizeFlags() +
                                       " -DCMAKE_EXE_LINKER_FLAGS=" + SanitizeFlags()) +
        " && cmake --build " + Quote(build_dir)));
    classify_ = new std::string(build_dir + "/classify");
  }
  static void TearDownTestSuite() {
    delete example_build_;
    delete classify_;
    InstalledPackage::TearDownTestSuite();
  }
  void SetUp() override {
    InstalledPackage::SetUp();
    ASSERT_EQ(example_build_->exit_code, 0) << example_build_->output;
  }

  static std::vector<std::string> WriteLabels(const std::string& path, int n) {
    std::vector<std::string> labels;
    std::ofstream out(path);
    for (int i = 0; i < n; ++i) {
      labels.push_back("n0" + std::to_string(1000 + i) + " class " + std::to_string(i));
      out << labels.back() << "\n";
    }
    return labels;
  }

  static ToolResult* example_build_;
  static std::string* classify_;
};
ToolResult* ClassificationExample::example_build_ = nullptr;
std::string* ClassificationExample::classify_ = nullptr;

// A small classifier over 10 classes with random weights, a mean image whose
// channel means differ, and every photo in one run.
TEST_F(ClassificationExample, CaffeModelTopFiveMatchesAForwardPass) {
  const std::string deploy = *work_ + "/deploy.prototxt";
  std::ofstream(deploy) << R"(name: "tiny"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 3 dim: 23 dim: 29 } } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
  convolution_param { num_output: 6 kernel_size: 3 stride: 2 weight_filler { type: "gaussian" std: 0.02 } } }
layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
layer { name: "pool" type: "Pooling" bottom: "conv" top: "pool" pooling_param { pool: AVE global_pooling: true } }
layer { name: "fc" type: "InnerProduct" bottom: "pool" top: "fc"
  inner_product_param { num_output: 10 weight_filler { type: "gaussian" std: 0.3 } bias_filler { type: "gaussian" std: 0.5 } } }
layer { name: "prob" type: "Softmax" bottom: "fc" top: "prob" }
)";
  Net net(deploy, caffe::TEST, TestContext());
  caffe::NetParameter weights;
  net.ToProto(&weights);
  const std::string caffemodel = *work_ + "/tiny.caffemodel";
  WriteProtoToBinaryFile(weights, caffemodel);
  // Mean image 3 x 4 x 5: channel means 100, 120, 90 (varying within each).
  caffe::BlobProto mean;
  for (int d : {1, 3, 4, 5}) mean.mutable_shape()->add_dim(d);
  const float base[3] = {100.f, 120.f, 90.f};
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 20; ++i) mean.add_data(base[c] + (i % 2 ? 7.f : -7.f));
  const std::string mean_file = *work_ + "/mean.binaryproto";
  WriteProtoToBinaryFile(mean, mean_file);
  const std::vector<std::string> labels = WriteLabels(*work_ + "/labels.txt", 10);

  const std::vector<std::string> photos = Photos();
  ASSERT_GE(photos.size(), 4u);
  std::string args;
  for (const auto& p : photos) args += " " + Quote(p);
  const ToolResult r = RunCommand(Quote(*classify_) + " " + Quote(deploy) + " " +
                                  Quote(caffemodel) + " " + Quote(mean_file) + " " +
                                  Quote(*work_ + "/labels.txt") + args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Printed printed = ParsePredictions(r.output);
  EXPECT_EQ(printed.size(), photos.size()) << r.output;
  for (const auto& photo : photos)
    ExpectTopFiveMatch(printed, photo, ReferenceProbabilities(net, photo, {100, 120, 90}),
                       labels);
}

// The same example on an ONNX model (no weights argument), with per-channel
// mean values on the command line.
TEST_F(ClassificationExample, OnnxModelTopFiveMatchesAForwardPass) {
  OnnxModelBuilder b;
  b.Input("image", {1, 3, 17, 19});
  std::vector<float> w(8 * 3 * 3 * 3), fc(8 * 12), bias(12);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.002f * std::sin(0.7f * i);
  for (size_t i = 0; i < fc.size(); ++i) fc[i] = 0.8f * std::cos(1.3f * i);
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.1f * i - 0.5f;
  b.Initializer("w", {8, 3, 3, 3}, w);
  b.Initializer("fc", {12, 8}, fc);
  b.Initializer("bias", {12}, bias);
  b.Node("Conv", {"image", "w"}, {"conv"});
  b.Node("Relu", {"conv"}, {"relu"});
  b.Node("GlobalAveragePool", {"relu"}, {"pool"});
  b.Node("Flatten", {"pool"}, {"flat"});
  OnnxModelBuilder::SetInt(b.Node("Gemm", {"flat", "fc", "bias"}, {"logits"}), "transB", 1);
  b.Node("Softmax", {"logits"}, {"prob"});
  b.Output("prob");
  const std::string model = b.Save(*work_, "tiny.onnx");
  const std::vector<std::string> labels = WriteLabels(*work_ + "/onnx_labels.txt", 12);

  const std::vector<std::string> photos = Photos();
  std::string args;
  for (const auto& p : photos) args += " " + Quote(p);
  const ToolResult r = RunCommand(Quote(*classify_) + " " + Quote(model) + " 104,117,123 " +
                                  Quote(*work_ + "/onnx_labels.txt") + args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Printed printed = ParsePredictions(r.output);
  EXPECT_EQ(printed.size(), photos.size()) << r.output;
  Net net(model, caffe::TEST, TestContext());
  for (const auto& photo : photos)
    ExpectTopFiveMatch(printed, photo, ReferenceProbabilities(net, photo, {104, 117, 123}),
                       labels);
}

TEST_F(ClassificationExample, BadInputsEndInOneClearMessage) {
  OnnxModelBuilder b;
  b.Input("image", {1, 3, 8, 8});
  b.Node("GlobalAveragePool", {"image"}, {"pool"});
  b.Node("Flatten", {"pool"}, {"flat"});
  b.Node("Softmax", {"flat"}, {"prob"});
  b.Output("prob");
  const std::string model = b.Save(*work_, "three_classes.onnx");
  WriteLabels(*work_ + "/three.txt", 3);
  WriteLabels(*work_ + "/four.txt", 4);
  const std::string photo = Photos().front();
  auto classify = [&](const std::string& args) {
    return RunCommand(Quote(*classify_) + " " + args);
  };

  // A missing image is reported; the others are still classified.
  ToolResult r = classify(Quote(model) + " none " + Quote(*work_ + "/three.txt") + " " +
                          Quote(*work_ + "/missing.jpg") + " " + Quote(photo));
  ExpectCleanToolError(r, "classify", "missing.jpg");
  EXPECT_TRUE(Contains(r.output, "Prediction for " + photo)) << r.output;

  r = classify(Quote(model) + " none " + Quote(*work_ + "/four.txt") + " " + Quote(photo));
  ExpectCleanToolError(r, "classify", "four.txt has 4 labels");
  r = classify(Quote(model) + " 1,2 " + Quote(*work_ + "/three.txt") + " " + Quote(photo));
  ExpectCleanToolError(r, "classify", "2 values for 3 channels");
  r = classify(Quote(*work_ + "/nothing.prototxt") + " w.caffemodel none " +
               Quote(*work_ + "/three.txt") + " " + Quote(photo));
  ExpectCleanToolError(r, "classify", "nothing.prototxt");
  r = classify(Quote(model));  // too few arguments: the usage
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(Contains(r.output, "usage: classify")) << r.output;
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
