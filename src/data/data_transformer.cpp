#include "dlcaffe/data/data_transformer.hpp"

#include <glog/logging.h>

#include <climits>

#include "dlcaffe/error.hpp"
#include "dlcaffe/io.hpp"

namespace dlcaffe {

namespace {
enum MeanMode { kNoMean = 0, kMeanValues = 1, kMeanImage = 2 };

// A draw in [0, n): plain modulo on the standardised mt19937_64, so the same
// seed gives the same crops with any standard library.
int RandomBelow(Rng& rng, int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); }
}  // namespace

DataTransformer::DataTransformer(const caffe::TransformationParameter& param,
                                 caffe::Phase phase, Context& ctx, const std::string& where)
    : param_(param), phase_(phase), ctx_(&ctx), where_(where), mean_image_(ctx),
      mean_values_(ctx) {
  DLC_REQUIRE(!(param_.force_color() && param_.force_gray()),
              where_ << "transform_param cannot set both force_color and force_gray");
  DLC_REQUIRE(!(param_.has_mean_file() && param_.mean_value_size() > 0),
              where_ << "transform_param cannot have both mean_file and mean_value");
  if (param_.has_mean_file()) {
    caffe::BlobProto proto;
    ReadProtoFromBinaryFile(param_.mean_file(), &proto);
    try {
      mean_image_.FromProto(proto);
    } catch (const Error& e) {
      DLC_FAIL(where_ << "mean file " << param_.mean_file() << ": " << e.what());
    }
    // The last three axes are C × H × W (missing ones count as 1); Caffe's
    // files are 1 × C × H × W.
    const std::vector<int>& shape = mean_image_.shape();
    const int axes = static_cast<int>(shape.size());
    int leading = 1;
    for (int i = 0; i < axes - 3; ++i) leading *= shape[i];
    mean_width_ = axes >= 1 ? shape[axes - 1] : 1;
    mean_height_ = axes >= 2 ? shape[axes - 2] : 1;
    mean_channels_ = axes >= 3 ? shape[axes - 3] : 1;
    DLC_REQUIRE(leading == 1 && mean_image_.count() > 0,
                where_ << "mean file " << param_.mean_file()
                       << " should hold one C x H x W image, holds a blob of shape "
                       << mean_image_.shape_string());
  }
}

int DataTransformer::MeanMode() const {
  if (param_.has_mean_file()) return kMeanImage;
  if (param_.mean_value_size() > 0) return kMeanValues;
  return kNoMean;
}

DatumColor DataTransformer::color() const {
  if (param_.force_color()) return DatumColor::kForceColor;
  if (param_.force_gray()) return DatumColor::kForceGray;
  return DatumColor::kNative;
}

void DataTransformer::CheckInput(int channels, int height, int width) const {
  const int crop = static_cast<int>(param_.crop_size());
  DLC_REQUIRE(crop <= height && crop <= width,
              where_ << "crop_size " << crop << " is larger than the " << height << " x "
                     << width << " images");
  const int n_mean = param_.mean_value_size();
  DLC_REQUIRE(n_mean == 0 || n_mean == 1 || n_mean == channels,
              where_ << "give one mean_value or one per channel: got " << n_mean
                     << " for images of " << channels << " channel(s)");
  if (MeanMode() == kMeanImage) {
    DLC_REQUIRE(mean_channels_ == channels && mean_height_ == height && mean_width_ == width,
                where_ << "mean file " << param_.mean_file() << " is " << mean_channels_
                       << " x " << mean_height_ << " x " << mean_width_
                       << " but the images are " << channels
                       << " x " << height << " x " << width);
  }
}

std::vector<int> DataTransformer::OutputShape(int num, int channels, int height,
                                              int width) const {
  const int crop = static_cast<int>(param_.crop_size());
  return {num, channels, crop ? crop : height, crop ? crop : width};
}

ImageCrop DataTransformer::Draw(int height, int width, Rng& rng) const {
  ImageCrop crop;
  // Caffe's order of draws: the mirror coin first (in every phase: Caffe
  // mirrors at TEST too when mirror is set), then the TRAIN crop offsets.
  crop.mirror = param_.mirror() && RandomBelow(rng, 2) == 1;
  const int size = static_cast<int>(param_.crop_size());
  if (!size) return crop;
  if (phase_ == caffe::TRAIN) {
    crop.h_off = RandomBelow(rng, height - size + 1);
    crop.w_off = RandomBelow(rng, width - size + 1);
  } else {
    crop.h_off = (height - size) / 2;
    crop.w_off = (width - size) / 2;
  }
  return crop;
}

void DataTransformer::Transform(const HostImageBatch& batch, cl_mem device_batch, Blob* top) {
  const int channels = batch.channels(), height = batch.height(), width = batch.width();
  CheckInput(channels, height, width);
  // The kernel counts byte offsets and pixel indices in int.
  DLC_REQUIRE(batch.bytes() <= size_t(INT_MAX),
              where_ << "a batch of " << batch.bytes() << " bytes is too large");
  top->Reshape(OutputShape(batch.num(), channels, height, width));
  const int crop_h = top->shape(2), crop_w = top->shape(3);

  cl_mem mean = device_batch;  // any valid buffer: the kernel ignores it without a mean
  if (MeanMode() == kMeanImage) {
    mean = mean_image_.data();
  } else if (MeanMode() == kMeanValues) {
    if (mean_values_channels_ != channels) {
      std::vector<float> values(channels);
      for (int c = 0; c < channels; ++c)
        values[c] = param_.mean_value(param_.mean_value_size() == 1 ? 0 : c);
      mean_values_.Reshape({channels});
      mean_values_.WriteData(values);
      mean_values_channels_ = channels;
    }
    mean = mean_values_.data();
  }
  const std::string options = std::string("-DPIXEL_FLOAT=") + (batch.is_float() ? "1" : "0") +
                              " -DMEAN_MODE=" + std::to_string(MeanMode());
  const int count = top->count();
  ctx_->Launch1D(ctx_->Kernel("data_transform.cl", options, "data_transform"), count, count,
                 channels, height, width, crop_h, crop_w,
                 static_cast<int>(batch.pixels_offset()), param_.scale(), device_batch, mean,
                 top->data());
}

}  // namespace dlcaffe
