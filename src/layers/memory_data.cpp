// MemoryData (Caffe "MemoryData"): see include/dlcaffe/memory_data_layer.hpp.
// Feeding uploads the images once (datums go through the shared transform
// kernel then); Forward only copies the next batch on the device.
#include <glog/logging.h>

#include <algorithm>
#include <climits>

#include "dlcaffe/data/data_transformer.hpp"
#include "dlcaffe/data/datum.hpp"
#include "dlcaffe/data/image_batch.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "dlcaffe/math.hpp"
#include "dlcaffe/memory_data_layer.hpp"

namespace dlcaffe {

MemoryDataLayer::MemoryDataLayer(const caffe::LayerParameter& param, Context& ctx)
    : Layer(param, ctx), data_(ctx), labels_(ctx) {}

MemoryDataLayer::~MemoryDataLayer() = default;

void MemoryDataLayer::LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) {
  const caffe::MemoryDataParameter& p = param_.memory_data_param();
  const uint64_t size = uint64_t(p.batch_size()) * p.channels() * p.height() * p.width();
  DLC_REQUIRE(size > 0 && size <= INT_MAX,
              Where() << "memory_data_param needs positive batch_size, channels, height and "
                         "width (got "
                      << p.batch_size() << ", " << p.channels() << ", " << p.height() << ", "
                      << p.width() << ")");
  batch_size_ = static_cast<int>(p.batch_size());
  channels_ = static_cast<int>(p.channels());
  height_ = static_cast<int>(p.height());
  width_ = static_cast<int>(p.width());
  transformer_ =
      std::make_unique<DataTransformer>(param_.transform_param(), param_.phase(), *ctx_, Where());
  rng_.seed(ctx_->rng()());
}

void MemoryDataLayer::Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) {
  top[0]->Reshape({batch_size_, channels_, height_, width_});
  top[1]->Reshape({batch_size_, 1, 1, 1});
}

void MemoryDataLayer::Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) {
  DLC_REQUIRE(n_ > 0, Where() << "no data to deliver: feed it with Reset or AddDatumVector "
                                 "before the first Forward");
  Reshape(bottom, top);
  // n_ is a multiple of batch_size_ when fed, but set_batch_size may leave a
  // batch that runs past the end: it continues at the first image.
  const int size = image_size();
  int done = 0;
  while (done < batch_size_) {
    const int take = std::min(batch_size_ - done, n_ - pos_);
    CopyFloats(*ctx_, take * size, data_.data(), size_t(pos_) * size, top[0]->data(),
               size_t(done) * size);
    CopyFloats(*ctx_, take, labels_.data(), pos_, top[1]->data(), done);
    done += take;
    pos_ = (pos_ + take) % n_;
  }
}

void MemoryDataLayer::CheckFeedSize(int n, const char* what) const {
  DLC_REQUIRE(n > 0 && n % batch_size_ == 0, Where() << what << " got " << n
                                                     << " image(s); give a positive multiple of "
                                                     << "batch_size " << batch_size_);
  DLC_REQUIRE(n <= INT_MAX / image_size(), Where()
                                               << what << ": " << n << " images of " << image_size()
                                               << " values are too many for one blob");
}

void MemoryDataLayer::Reset(const float* data, const float* labels, int n) {
  DLC_REQUIRE(batch_size_ > 0, Where() << "Reset needs SetUp first");
  DLC_REQUIRE(data && labels, Where() << "Reset got a null data or labels array");
  CheckFeedSize(n, "Reset");
  if (param_.has_transform_param())
    LOG(WARNING) << Where() << "transform_param does not apply to arrays fed with Reset";
  data_.Reshape({n, channels_, height_, width_});
  data_.WriteData(data, n * image_size());
  labels_.Reshape({n});
  labels_.WriteData(labels, n);
  n_ = n;
  pos_ = 0;
}

void MemoryDataLayer::AddDatumVector(const std::vector<caffe::Datum>& datums) {
  DLC_REQUIRE(batch_size_ > 0, Where() << "AddDatumVector needs SetUp first");
  const int n = static_cast<int>(std::min<size_t>(datums.size(), INT_MAX));
  CheckFeedSize(n, "AddDatumVector");
  // Decode all before touching the fed data, so that a bad datum leaves the
  // layer as it was.
  HostImageBatch batch;
  DatumImage image;
  for (int i = 0; i < n; ++i) {
    const std::string where = Where() + "datum " + std::to_string(i);
    DecodeDatum(datums[i], transformer_->color(), where, &image);
    if (i == 0) {
      transformer_->CheckInput(image.channels, image.height, image.width);
      const std::vector<int> out =
          transformer_->OutputShape(1, image.channels, image.height, image.width);
      DLC_REQUIRE(out == std::vector<int>({1, channels_, height_, width_}),
                  where << " is " << image.channels << " x " << image.height << " x " << image.width
                        << ", which transform_param makes " << out[1] << " x " << out[2] << " x "
                        << out[3] << ", but memory_data_param "
                        << "asks for " << channels_ << " x " << height_ << " x " << width_);
      batch.Reset(n, image.channels, image.height, image.width, image.is_float);
    } else {
      DLC_REQUIRE(batch.Fits(image),
                  where << " is " << image.channels << " x " << image.height << " x " << image.width
                        << (image.is_float ? " float" : " uint8") << " but datum 0 is "
                        << batch.channels() << " x " << batch.height() << " x " << batch.width()
                        << (batch.is_float() ? " float" : " uint8"));
    }
    batch.SetImage(i, image);
    batch.SetCrop(i, transformer_->Draw(image.height, image.width, rng_));
  }
  if (!upload_ || upload_->bytes() < batch.bytes()) upload_ = ctx_->Allocate(batch.bytes());
  ctx_->Write(upload_->mem(), 0, batch.bytes(), batch.data());
  data_.Reshape({n, channels_, height_, width_});
  transformer_->Transform(batch, upload_->mem(), &data_);
  labels_.Reshape({n});
  ctx_->Copy(upload_->mem(), batch.labels_offset(), labels_.data(), 0, n * sizeof(float));
  n_ = n;
  pos_ = 0;
}

void MemoryDataLayer::set_batch_size(int batch_size) {
  DLC_REQUIRE(batch_size > 0 && uint64_t(batch_size) * image_size() <= INT_MAX,
              Where() << "set_batch_size got " << batch_size);
  DLC_REQUIRE(n_ % batch_size == 0, Where() << "set_batch_size(" << batch_size << "): the " << n_
                                            << " images fed are not a multiple of it");
  batch_size_ = batch_size;
}

REGISTER_LAYER_CLASS(MemoryData);

}  // namespace dlcaffe
