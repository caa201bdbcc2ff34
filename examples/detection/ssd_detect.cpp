// An SSD (Caffe SSD's DetectionOutput at the end of a deploy net) on an
// image: prints each detection above the threshold and writes the image
// with its boxes drawn.
//
//   ssd_detect [--device=SPEC] [--mean=104,117,123] [--scale=1] [--threshold=0.5]
//              DEPLOY.prototxt WEIGHTS.caffemodel IMAGE OUTPUT.png
//
// The image is read in BGR order (as OpenCV and Caffe SSD read it), resized
// to the net's input, the mean subtracted, then multiplied by the scale. One
// line per detection: "label score xmin ymin xmax ymax", the box in the
// image's pixels.
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "dlcaffe/blob.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/error.hpp"
#include "dlcaffe/logging.hpp"
#include "dlcaffe/net.hpp"

namespace {

struct Options {
  std::string device;
  std::vector<float> mean = {104.f, 117.f, 123.f};
  float scale = 1.f, threshold = 0.5f;
  std::string model, weights, image, output;
};

std::vector<float> ParseFloats(const std::string& text) {
  std::vector<float> values;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) values.push_back(std::stof(item));
  return values;
}

Options ParseArguments(int argc, char** argv) {
  Options o;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&](const char* flag) { return a.substr(std::string(flag).size()); };
    if (a.rfind("--device=", 0) == 0) o.device = value("--device=");
    else if (a.rfind("--mean=", 0) == 0) o.mean = ParseFloats(value("--mean="));
    else if (a.rfind("--scale=", 0) == 0) o.scale = std::stof(value("--scale="));
    else if (a.rfind("--threshold=", 0) == 0) o.threshold = std::stof(value("--threshold="));
    else if (a.rfind("--", 0) == 0) DLC_FAIL("unknown flag " << a);
    else positional.push_back(a);
  }
  DLC_REQUIRE(positional.size() == 4,
              "usage: ssd_detect [--device=SPEC] [--mean=B,G,R] [--scale=S] [--threshold=T] "
              "DEPLOY.prototxt WEIGHTS.caffemodel IMAGE OUTPUT.png");
  DLC_REQUIRE(o.mean.size() == 3, "--mean takes three values (B,G,R)");
  o.model = positional[0], o.weights = positional[1], o.image = positional[2], o.output = positional[3];
  return o;
}

int Run(const Options& o) {
  auto context = dlcaffe::Context::Create(o.device);
  dlcaffe::Net net(o.model, caffe::TEST, *context);
  net.CopyTrainedLayersFrom(o.weights);
  DLC_REQUIRE(net.input_blobs().size() == 1 && net.input_blobs()[0]->num_axes() == 4 &&
                  net.input_blobs()[0]->channels() == 3,
              o.model << ": the detector takes one 1 x 3 x H x W input");
  const cv::Mat image = cv::imread(o.image, cv::IMREAD_COLOR);
  DLC_REQUIRE(!image.empty(), "cannot read the image " << o.image);

  dlcaffe::Blob& input = *net.input_blobs()[0];
  input.Reshape({1, 3, input.height(), input.width()});
  net.Reshape();
  cv::Mat resized;
  cv::resize(image, resized, cv::Size(input.width(), input.height()));
  resized.convertTo(resized, CV_32FC3);
  std::vector<float> planar(3 * resized.total());
  for (int y = 0; y < resized.rows; ++y)
    for (int x = 0; x < resized.cols; ++x)
      for (int c = 0; c < 3; ++c)
        planar[(c * resized.rows + y) * resized.cols + x] =
            (resized.at<cv::Vec3f>(y, x)[c] - o.mean[c]) * o.scale;
  input.WriteData(planar);
  net.Forward();

  // DetectionOutput's rows: image, label, score, xmin, ymin, xmax, ymax
  // (normalized); a label of -1: nothing found.
  const std::vector<float> rows = net.output_blobs()[0]->ReadData();
  DLC_REQUIRE(net.output_blobs()[0]->count() % 7 == 0,
              o.model << ": the output is not DetectionOutput's rows of 7");
  cv::Mat drawn = image.clone();
  std::cout << std::fixed << std::setprecision(4);
  for (size_t r = 0; r + 7 <= rows.size(); r += 7) {
    if (rows[r + 1] < 0 || rows[r + 2] < o.threshold) continue;
    const float x1 = rows[r + 3] * image.cols, y1 = rows[r + 4] * image.rows;
    const float x2 = rows[r + 5] * image.cols, y2 = rows[r + 6] * image.rows;
    std::cout << static_cast<int>(rows[r + 1]) << " " << rows[r + 2] << " " << x1 << " " << y1
              << " " << x2 << " " << y2 << "\n";
    cv::rectangle(drawn, cv::Point(cvRound(x1), cvRound(y1)), cv::Point(cvRound(x2), cvRound(y2)),
                  cv::Scalar(0, 255, 0), 2);
  }
  DLC_REQUIRE(cv::imwrite(o.output, drawn), "cannot write " << o.output);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  dlcaffe::InitLogging(argv[0], dlcaffe::LogLevel::kWarning);
  try {
    return Run(ParseArguments(argc, argv));
  } catch (const dlcaffe::Error& e) {
    std::cerr << "ssd_detect: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "ssd_detect: " << e.what() << "\n";
    return 1;
  }
}
