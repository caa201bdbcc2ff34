// MemoryData (Caffe "MemoryData"): a data layer the application feeds from
// memory, through this class. Tops: data (batch_size × channels × height ×
// width, from memory_data_param) and label (batch_size × 1 × 1 × 1).
//
//   auto* input = dynamic_cast<dlcaffe::MemoryDataLayer*>(net.layer_by_name("data"));
//   input->Reset(images, labels, n);   // n images, a multiple of batch_size
//   net.Forward();                     // batch 0; the next Forward batch 1, ...
//
// Each Forward hands out the next batch_size images, wrapping around after
// the n-th. The fed images are copied to the device when fed, so the caller's
// arrays may be freed or reused right after (Caffe keeps the pointer instead).
#pragma once
#include <memory>
#include <vector>

#include "dlcaffe/caffe.pb.h"
#include "dlcaffe/layer.hpp"

namespace dlcaffe {

class DataTransformer;

class MemoryDataLayer : public Layer {
 public:
  MemoryDataLayer(const caffe::LayerParameter& param, Context& ctx);
  ~MemoryDataLayer() override;
  const char* type() const override { return "MemoryData"; }
  int ExactNumBottomBlobs() const override { return 0; }
  int ExactNumTopBlobs() const override { return 2; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override;
  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override;
  // Throws if nothing was fed yet.
  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override;
  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {}

  // Feeds `n` images of channels × height × width floats each (C×H×W, one
  // image after the other) and their `n` labels; n must be a positive
  // multiple of batch_size. As in Caffe the values are used as they are:
  // transform_param does not apply to them. The next Forward delivers the
  // first batch.
  void Reset(const float* data, const float* labels, int n);
  // Feeds datums (raw, float or encoded images, as a Data layer's records),
  // transformed now by transform_param (scale, mean, crop, mirror, drawn
  // from the layer's seeded generator), as Caffe's AddDatumVector. Their
  // number must be a positive multiple of batch_size and each must come out
  // of the transformation as channels × height × width.
  void AddDatumVector(const std::vector<caffe::Datum>& datums);

  // Caffe's set_batch_size: the fed images must be a multiple of the new size.
  void set_batch_size(int batch_size);
  int batch_size() const { return batch_size_; }
  int channels() const { return channels_; }
  int height() const { return height_; }
  int width() const { return width_; }
  // Images fed (0 before the first Reset or AddDatumVector).
  int num_images() const { return n_; }

 private:
  int image_size() const { return channels_ * height_ * width_; }
  void CheckFeedSize(int n, const char* what) const;

  int batch_size_ = 0, channels_ = 0, height_ = 0, width_ = 0;
  std::unique_ptr<DataTransformer> transformer_;
  Rng rng_;           // crops and mirrors of AddDatumVector
  Blob data_;         // n × C × H × W fed images
  Blob labels_;       // n labels
  BufferPtr upload_;  // the datums' upload, read by the transform kernel
  int n_ = 0;         // images fed
  int pos_ = 0;       // first image of the next batch
};

}  // namespace dlcaffe
