// The README's walk-through, command for command, on real data: MNIST
// written out as an image folder -> convert_imageset -> compute_image_mean ->
// dlcaffe train (LeNet with the mean file) -> extract_features -> classify.
// It runs in a fresh folder where models/ points at the repository's, so the
// README's relative paths (examples/digits/...) are used as written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "dlcaffe/io.hpp"
#include "util/image_dataset.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/run_script.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

namespace fs = std::filesystem;

struct Listed {
  std::string path;
  int label;
};

std::vector<Listed> ReadList(const std::string& path) {
  std::vector<Listed> list;
  std::ifstream in(path);
  Listed item;
  while (in >> item.path >> item.label) list.push_back(item);
  return list;
}

// The last "Test net output #K: accuracy = X" of a training log.
float LastTestAccuracy(const std::string& log) {
  const std::regex line("Test net output #\\d+: accuracy = ([0-9.eE+-]+)");
  float accuracy = -1.f;
  for (std::sregex_iterator it(log.begin(), log.end(), line), end; it != end; ++it)
    accuracy = std::stof((*it)[1]);
  return accuracy;
}

int ArgMax(const google::protobuf::RepeatedField<float>& v) {
  return static_cast<int>(std::max_element(v.begin(), v.end()) - v.begin());
}

TEST(ImageFolderWalkthrough, FolderToDatabaseToTrainedNetToFeaturesToClassifiedImages) {
  const std::string mnist = SourceDir() + "/../shared/data/mnist";
  ASSERT_TRUE(fs::exists(mnist)) << mnist;
  const std::string work = TempDir();
  fs::create_directory_symlink(fs::absolute(SourceDir()) / "models", work + "/models");
  const std::string tools = "'" + BuildDir() + "/tools/";
  auto run = [&](const std::string& command) {
    return RunCommand("cd '" + work + "' && " + command);
  };

  // 1. The image folder: 3000 training and 1000 test digits as PNG files.
  ToolResult r = run("'" + TestPython() + "' '" + SourceDir() +
                     "/data/mnist/mnist_to_image_folder.py' '" + mnist +
                     "' examples/digits --train 3000 --test 1000");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<Listed> test_list = ReadList(work + "/examples/digits/test.txt");
  ASSERT_EQ(test_list.size(), 1000u);

  // 2. Databases of the encoded PNGs, gray; the training set shuffled in a
  // fixed order (an unseeded order moves the accuracy below by about 1%).
  r = run(tools + "convert_imageset' --gray --shuffle --shuffle_seed=1701 --encoded examples/digits/ "
                  "examples/digits/train.txt examples/digits/train_lmdb");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "Wrote 3000 images")) << r.output;
  r = run(tools + "convert_imageset' --gray --encoded examples/digits/ "
                  "examples/digits/test.txt examples/digits/test_lmdb");
  ASSERT_EQ(r.exit_code, 0) << r.output;

  // 3. The mean image: 1 x 1 x 28 x 28, its average the printed channel mean.
  r = run(tools + "compute_image_mean' examples/digits/train_lmdb examples/digits/mean.binaryproto");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  caffe::BlobProto mean;
  ReadProtoFromBinaryFile(work + "/examples/digits/mean.binaryproto", &mean);
  ASSERT_EQ(mean.data_size(), 28 * 28);
  double mean_sum = 0;
  for (float v : mean.data()) mean_sum += v;
  std::smatch printed;
  ASSERT_TRUE(std::regex_search(r.output, printed,
                                std::regex("mean_value channel \\[0\\]: ([0-9.]+)")))
      << r.output;
  EXPECT_NEAR(std::stod(printed[1]), mean_sum / (28 * 28), 1e-3);

  // 4. LeNet trains on the databases with the mean file (600 iterations).
  r = run(tools + "dlcaffe' train --solver=models/lenet_image_folder/lenet_solver.prototxt");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const float accuracy = LastTestAccuracy(r.output);
  std::cout << "LeNet from the image folder: test accuracy " << accuracy << std::endl;
  // Measured on PoCL (AVX-512): 0.953 with this seed; over 26 other seeds
  // 0.946 to 0.961, and 0.939 once in CI with an unseeded order.
  EXPECT_GE(accuracy, 0.94f) << r.output;
  EXPECT_TRUE(Contains(r.output, "Speed: ")) << r.output;
  const std::string weights = "examples/digits/lenet_iter_600.caffemodel";
  ASSERT_TRUE(fs::exists(work + "/" + weights));

  // 5. Features of the 1000 test images: ip2, in the test database's order
  // (the list's). Their arg-max is the net's answer, so it agrees with the
  // labels exactly as often as the training's last test said.
  r = run(tools + "extract_features' " + weights +
          " models/lenet_image_folder/lenet_train_test.prototxt ip1,ip2 "
          "examples/digits/ip1_features,examples/digits/ip2_features 10 lmdb");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto ip1 = ReadRecords(work + "/examples/digits/ip1_features");
  const auto ip2 = ReadRecords(work + "/examples/digits/ip2_features");
  ASSERT_EQ(ip1.size(), 1000u);
  ASSERT_EQ(ip2.size(), 1000u);
  EXPECT_EQ(ip1[0].datum.float_data_size(), 500);
  int correct = 0;
  for (size_t i = 0; i < ip2.size(); ++i) {
    ASSERT_EQ(ip2[i].datum.float_data_size(), 10);
    correct += ArgMax(ip2[i].datum.float_data()) == test_list[i].label;
  }
  EXPECT_NEAR(correct / 1000.0, accuracy, 1e-6);

  // 6. classify, on the first 20 test images: its probabilities are the
  // softmax of those images' ip2 features (the same weights, the same mean
  // image and scale), so its top label is the features' arg-max.
  std::string images;
  for (int i = 0; i < 20; ++i) images += " examples/digits/" + test_list[i].path;
  r = run("'" + BuildDir() + "/examples/cpp_classification/classify' --scale=0.00390625 "
          "models/lenet_image_folder/deploy.prototxt " + weights +
          " examples/digits/mean.binaryproto examples/digits/labels.txt" + images);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream lines(r.output);
  std::string line;
  int image = -1, rank = 0;
  std::smatch m;
  while (std::getline(lines, line)) {
    if (Contains(line, "---------- Prediction for ")) {
      ++image;
      rank = 0;
      ASSERT_TRUE(Contains(line, test_list[image].path)) << line;
    } else if (image >= 0 && rank == 0 &&
               std::regex_match(line, m, std::regex("([0-9.]+) - \"([0-9]) .*\""))) {
      const auto& logits = ip2[image].datum.float_data();
      const int best = ArgMax(logits);
      double denominator = 0;
      for (float v : logits) denominator += std::exp(v - logits[best]);
      EXPECT_EQ(std::stoi(m[2]), best) << line;
      EXPECT_NEAR(std::stod(m[1]), 1.0 / denominator, 1e-4) << line;
      ++rank;
    }
  }
  EXPECT_EQ(image, 19) << r.output;
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
