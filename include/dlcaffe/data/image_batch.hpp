// A batch of images on the host, laid out exactly as the data transform
// kernel reads it on the device, so that it goes up in one write:
//
//   [num × {h_off, w_off, mirror} int32] [num labels float32] [pixels]
//
// where the pixels are num × C × H × W uint8 (or float32), uncropped. The
// prefetch thread fills it (pixels, labels and the crop and mirror it drew);
// the layer uploads it and the kernel does the arithmetic.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dlcaffe/data/datum.hpp"

namespace dlcaffe {

// Where one image's crop window starts and whether it is flipped left-right.
struct ImageCrop {
  int h_off = 0;
  int w_off = 0;
  bool mirror = false;
};

class HostImageBatch {
 public:
  // Sizes the batch for `num` images of channels × height × width; contents
  // are undefined until set.
  void Reset(int num, int channels, int height, int width, bool is_float);

  int num() const { return num_; }
  int channels() const { return channels_; }
  int height() const { return height_; }
  int width() const { return width_; }
  bool is_float() const { return is_float_; }
  size_t image_size() const { return size_t(channels_) * height_ * width_; }
  // True when an image of this shape and pixel type fits the batch.
  bool Fits(const DatumImage& image) const {
    return image.channels == channels_ && image.height == height_ &&
           image.width == width_ && image.is_float == is_float_;
  }

  // Copies an image's pixels and label into slot `index` (Fits() must hold).
  void SetImage(int index, const DatumImage& image);
  void SetCrop(int index, const ImageCrop& crop);
  ImageCrop crop(int index) const;
  float label(int index) const { return labels()[index]; }
  // Pixel value `i` (0 <= i < image_size()) of image `index`, as a float.
  float pixel(int index, size_t i) const;

  // The upload: `bytes()` bytes from `data()`.
  const uint8_t* data() const { return storage_.data(); }
  size_t bytes() const { return bytes_; }
  size_t labels_offset() const { return labels_offset_; }  // in bytes
  size_t pixels_offset() const { return pixels_offset_; }  // in bytes

 private:
  int32_t* params() { return reinterpret_cast<int32_t*>(storage_.data()); }
  const int32_t* params() const { return reinterpret_cast<const int32_t*>(storage_.data()); }
  float* labels() { return reinterpret_cast<float*>(storage_.data() + labels_offset_); }
  const float* labels() const {
    return reinterpret_cast<const float*>(storage_.data() + labels_offset_);
  }

  int num_ = 0, channels_ = 0, height_ = 0, width_ = 0;
  bool is_float_ = false;
  size_t labels_offset_ = 0, pixels_offset_ = 0, bytes_ = 0;
  std::vector<uint8_t> storage_;
};

}  // namespace dlcaffe
