#include "dlcaffe/data/image_batch.hpp"

#include <glog/logging.h>

#include <cstring>

namespace dlcaffe {

namespace {
// Sections start on a cache line; the float pixels must at least be 4-aligned.
constexpr size_t kSectionAlign = 64;
size_t AlignUp(size_t n) { return (n + kSectionAlign - 1) / kSectionAlign * kSectionAlign; }
}  // namespace

void HostImageBatch::Reset(int num, int channels, int height, int width, bool is_float) {
  CHECK_GT(num, 0);
  num_ = num;
  channels_ = channels;
  height_ = height;
  width_ = width;
  is_float_ = is_float;
  labels_offset_ = AlignUp(size_t(num) * 3 * sizeof(int32_t));
  pixels_offset_ = AlignUp(labels_offset_ + size_t(num) * sizeof(float));
  bytes_ = pixels_offset_ + size_t(num) * image_size() * (is_float ? sizeof(float) : 1);
  if (storage_.size() < bytes_) storage_.resize(bytes_);
}

void HostImageBatch::SetImage(int index, const DatumImage& image) {
  CHECK(Fits(image));
  CHECK_GE(index, 0);
  CHECK_LT(index, num_);
  labels()[index] = static_cast<float>(image.label);
  uint8_t* dst = storage_.data() + pixels_offset_;
  if (is_float_) {
    std::memcpy(dst + index * image_size() * sizeof(float), image.floats.data(),
                image_size() * sizeof(float));
  } else {
    std::memcpy(dst + index * image_size(), image.bytes.data(), image_size());
  }
}

void HostImageBatch::SetCrop(int index, const ImageCrop& crop) {
  CHECK_GE(index, 0);
  CHECK_LT(index, num_);
  int32_t* p = params() + 3 * index;
  p[0] = crop.h_off;
  p[1] = crop.w_off;
  p[2] = crop.mirror ? 1 : 0;
}

ImageCrop HostImageBatch::crop(int index) const {
  const int32_t* p = params() + 3 * index;
  ImageCrop crop;
  crop.h_off = p[0];
  crop.w_off = p[1];
  crop.mirror = p[2] != 0;
  return crop;
}

float HostImageBatch::pixel(int index, size_t i) const {
  const uint8_t* src = storage_.data() + pixels_offset_;
  if (is_float_) {
    float v;
    std::memcpy(&v, src + (index * image_size() + i) * sizeof(float), sizeof(float));
    return v;
  }
  return src[index * image_size() + i];
}

}  // namespace dlcaffe
