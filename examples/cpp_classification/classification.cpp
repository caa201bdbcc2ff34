// Caffe's classification example on dlcaffe: the top 5 labels of each image.
//
//   classify [--device=SPEC] [--scale=S] [--rgb]
//            DEPLOY.prototxt WEIGHTS.caffemodel MEAN LABELS.txt IMAGE...
//   classify [--device=SPEC] [--scale=S] [--rgb] MODEL.onnx MEAN LABELS.txt IMAGE...
//
// MEAN is a mean image (.binaryproto, as compute_image_mean writes it: used
// as it is when it has the input's size, as the training's Data layer did,
// else its per-channel means, as in Caffe's example), per-channel values
// ("104,117,123"), or "none". Pixels are read as 0..255 in BGR order (--rgb:
// RGB), resized to the net's input, the mean subtracted, then multiplied by S.
// All images go through the net in one batch.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "dlcaffe/blob.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/error.hpp"
#include "dlcaffe/io.hpp"
#include "dlcaffe/logging.hpp"
#include "dlcaffe/net.hpp"
#include "dlcaffe/onnx_import.hpp"

namespace {

struct Options {
  std::string device;  // "" = dlcaffe's default device
  float scale = 1.f;
  bool rgb = false;
  std::string model, weights, mean, labels;
  std::vector<std::string> images;
};

using Prediction = std::pair<std::string, float>;

class Classifier {
 public:
  explicit Classifier(const Options& options) : options_(options) {
    context_ = dlcaffe::Context::Create(options.device);
    net_.reset(new dlcaffe::Net(options.model, caffe::TEST, *context_));
    if (!options.weights.empty()) net_->CopyTrainedLayersFrom(options.weights);
    DLC_REQUIRE(net_->input_blobs().size() == 1,
                options.model << " has " << net_->input_blobs().size()
                              << " inputs; the classifier feeds exactly one");
    DLC_REQUIRE(net_->output_blobs().size() == 1,
                options.model << " has " << net_->output_blobs().size()
                              << " outputs; the classifier reads exactly one");
    const dlcaffe::Blob& input = *net_->input_blobs()[0];
    DLC_REQUIRE(input.num_axes() == 4 && (input.channels() == 3 || input.channels() == 1),
                options.model << ": the input must be N x 1 or 3 x H x W, got "
                              << input.shape_string());
    channels_ = input.channels();
    geometry_ = cv::Size(input.width(), input.height());
    mean_ = ReadMean(options.mean);
    labels_ = ReadLabels(options.labels);
    const dlcaffe::Blob& output = *net_->output_blobs()[0];
    DLC_REQUIRE(static_cast<size_t>(output.count(1)) == labels_.size(),
                options.labels << " has " << labels_.size() << " labels, but the net's output "
                               << "has " << output.count(1) << " classes");
  }

  // One batch through the net; the top `k` labels with probabilities of each.
  std::vector<std::vector<Prediction>> Classify(const std::vector<cv::Mat>& images, int k) {
    dlcaffe::Blob& input = *net_->input_blobs()[0];
    input.Reshape({static_cast<int>(images.size()), channels_, geometry_.height,
                   geometry_.width});
    net_->Reshape();
    const int plane = geometry_.area();
    for (size_t i = 0; i < images.size(); ++i) {
      const std::vector<float> planar = Preprocess(images[i]);
      input.WriteData(planar.data(), static_cast<int>(planar.size()),
                      static_cast<int>(i) * channels_ * plane);
    }
    net_->Forward();
    const dlcaffe::Blob& output = *net_->output_blobs()[0];
    const std::vector<float> scores = output.ReadData();
    const int classes = output.count(1);
    std::vector<std::vector<Prediction>> result;
    for (size_t i = 0; i < images.size(); ++i) {
      std::vector<int> order(classes);
      for (int c = 0; c < classes; ++c) order[c] = c;
      const float* row = scores.data() + i * classes;
      const int top = std::min(k, classes);
      std::partial_sort(order.begin(), order.begin() + top, order.end(),
                        [row](int a, int b) { return row[a] > row[b]; });
      std::vector<Prediction> predictions;
      for (int j = 0; j < top; ++j) predictions.emplace_back(labels_[order[j]], row[order[j]]);
      result.push_back(std::move(predictions));
    }
    return result;
  }

  int channels() const { return channels_; }

 private:
  // Resize, convert to float, subtract the mean, scale, split into planes.
  std::vector<float> Preprocess(const cv::Mat& image) const {
    cv::Mat sample = image;
    if (channels_ == 3 && options_.rgb) cv::cvtColor(image, sample, cv::COLOR_BGR2RGB);
    cv::Mat resized;
    if (sample.size() != geometry_)
      cv::resize(sample, resized, geometry_);
    else
      resized = sample;
    cv::Mat floats;
    resized.convertTo(floats, channels_ == 3 ? CV_32FC3 : CV_32FC1);
    std::vector<cv::Mat> planes;
    cv::split(floats, planes);
    std::vector<float> planar;
    planar.reserve(static_cast<size_t>(channels_) * geometry_.area());
    for (int c = 0; c < channels_; ++c) {
      const cv::Mat& p = planes[c];
      for (int y = 0; y < p.rows; ++y)
        for (int x = 0; x < p.cols; ++x)
          planar.push_back((p.at<float>(y, x) - mean_[planar.size()]) * options_.scale);
    }
    return planar;
  }

  // Per-channel values repeated over the input's pixels (planar C x H x W).
  std::vector<float> MeanPlanes(const std::vector<float>& per_channel) const {
    std::vector<float> planes;
    for (float v : per_channel) planes.insert(planes.end(), geometry_.area(), v);
    return planes;
  }

  std::vector<float> ReadMean(const std::string& mean) const {
    if (mean == "none") return MeanPlanes(std::vector<float>(channels_, 0.f));
    if (mean.size() > 12 && mean.compare(mean.size() - 12, 12, ".binaryproto") == 0) {
      caffe::BlobProto proto;
      dlcaffe::ReadProtoFromBinaryFile(mean, &proto);
      dlcaffe::Blob blob(*context_);
      blob.FromProto(proto);
      DLC_REQUIRE(blob.num_axes() >= 3 && blob.shape(-3) == channels_,
                  mean << ": the mean has shape " << blob.shape_string() << ", but the net's input "
                       << "has " << channels_ << " channels");
      const std::vector<float> values = blob.ReadData();
      if (blob.shape(-2) == geometry_.height && blob.shape(-1) == geometry_.width)
        return values;
      const int plane = blob.count(blob.num_axes() - 2);
      std::vector<float> per_channel(channels_, 0.f);
      for (int c = 0; c < channels_; ++c) {
        double sum = 0;
        for (int i = 0; i < plane; ++i) sum += values[c * plane + i];
        per_channel[c] = static_cast<float>(sum / plane);
      }
      return MeanPlanes(per_channel);
    }
    std::vector<float> values;
    std::stringstream list(mean);
    std::string item;
    while (std::getline(list, item, ',')) {
      char* end = nullptr;
      const float v = std::strtof(item.c_str(), &end);
      DLC_REQUIRE(!item.empty() && *end == '\0',
                  "MEAN must be a .binaryproto file, comma-separated values or 'none', got '"
                      << mean << "'");
      values.push_back(v);
    }
    if (values.size() == 1) values.resize(channels_, values[0]);
    DLC_REQUIRE(static_cast<int>(values.size()) == channels_,
                "MEAN '" << mean << "' has " << values.size() << " values for " << channels_
                         << " channels");
    return MeanPlanes(values);
  }

  static std::vector<std::string> ReadLabels(const std::string& path) {
    std::ifstream in(path);
    DLC_REQUIRE(in.good(), "cannot open the labels file " << path);
    std::vector<std::string> labels;
    for (std::string line; std::getline(in, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      labels.push_back(line);
    }
    while (!labels.empty() && labels.back().empty()) labels.pop_back();
    DLC_REQUIRE(!labels.empty(), "the labels file " << path << " is empty");
    return labels;
  }

  const Options options_;
  std::unique_ptr<dlcaffe::Context> context_;
  std::unique_ptr<dlcaffe::Net> net_;
  int channels_ = 3;
  cv::Size geometry_;
  std::vector<float> mean_;  // subtracted from each input, planar C x H x W
  std::vector<std::string> labels_;
};

const char kUsage[] =
    "usage: classify [--device=SPEC] [--scale=S] [--rgb] DEPLOY.prototxt WEIGHTS.caffemodel "
    "MEAN LABELS.txt IMAGE...\n"
    "       classify [--device=SPEC] [--scale=S] [--rgb] MODEL.onnx MEAN LABELS.txt IMAGE...\n"
    "MEAN: a mean .binaryproto, per-channel values (104,117,123) or none\n";

bool ParseArguments(int argc, char** argv, Options* options) {
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--device=", 0) == 0) {
      options->device = arg.substr(9);
    } else if (arg.rfind("--scale=", 0) == 0) {
      char* end = nullptr;
      options->scale = std::strtof(arg.c_str() + 8, &end);
      if (arg.size() == 8 || *end != '\0') return false;
    } else if (arg == "--rgb") {
      options->rgb = true;
    } else if (arg.rfind("--", 0) == 0) {
      return false;
    } else {
      positional.push_back(arg);
    }
  }
  const bool onnx = !positional.empty() && dlcaffe::IsOnnxPath(positional[0]);
  const size_t fixed = onnx ? 3 : 4;  // arguments before the images
  if (positional.size() <= fixed) return false;
  size_t next = 0;
  options->model = positional[next++];
  if (!onnx) options->weights = positional[next++];
  options->mean = positional[next++];
  options->labels = positional[next++];
  options->images.assign(positional.begin() + next, positional.end());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!ParseArguments(argc, argv, &options)) {
    std::cerr << kUsage;
    return 2;
  }
  dlcaffe::InitLogging(argv[0], dlcaffe::LogLevel::kWarning);
  try {
    Classifier classifier(options);
    // Unreadable images are reported and left out; the rest are classified.
    std::vector<cv::Mat> images;
    std::vector<std::string> names;
    bool all_read = true;
    for (const std::string& path : options.images) {
      cv::Mat image = cv::imread(
          path, classifier.channels() == 3 ? cv::IMREAD_COLOR : cv::IMREAD_GRAYSCALE);
      if (image.empty()) {
        std::cerr << "classify: error: cannot read image " << path
                  << " (missing, or not an image OpenCV decodes)\n";
        all_read = false;
        continue;
      }
      images.push_back(image);
      names.push_back(path);
    }
    if (!images.empty()) {
      const auto predictions = classifier.Classify(images, 5);
      for (size_t i = 0; i < images.size(); ++i) {
        std::cout << "---------- Prediction for " << names[i] << " ----------\n";
        for (const Prediction& p : predictions[i])
          std::cout << std::fixed << std::setprecision(4) << p.second << " - \"" << p.first
                    << "\"\n";
      }
    }
    return all_read ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "classify: error: " << e.what() << "\n";
    return 1;
  }
}
