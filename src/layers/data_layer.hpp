// Data (Caffe "Data"): reads caffe::Datum records from an LMDB database,
// batch_size at a time, in key order, wrapping around at the end. Tops: data
// (N × C × H × W after crop) and, optionally, label (N).
//
// A prefetch thread reads and decodes the next batches into host buffers and
// draws each image's crop and mirror from the layer's own seeded generator.
// Forward takes the next ready batch, uploads it in one (asynchronous) write,
// and one kernel applies the transformation (data_transform.cl); labels are
// copied on the device. ReaderState()/RestoreReaderState() expose the cursor
// and generator for exact resume. In data-parallel training a TRAIN-phase
// layer reads its replica's share: every count-th record from its index
// (Context::replica). AnnotatedData (annotated_data.cpp) reads its own
// records through the hooks ShapeTops, ReadRecord and ForwardBatch.
#pragma once
#include <glog/logging.h>

#include <memory>

#include "data/batch_uploader.hpp"
#include "dlcaffe/data/data_state.hpp"
#include "dlcaffe/data/data_transformer.hpp"
#include "dlcaffe/data/datum.hpp"
#include "dlcaffe/data/lmdb_database.hpp"
#include "dlcaffe/io.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class DataLayer : public Layer, public ResumableDataLayer {
 public:
  using Layer::Layer;
  ~DataLayer() override { batches_.reset(); }  // stop reading before the cursor goes
  const char* type() const override { return "Data"; }
  int ExactNumBottomBlobs() const override { return 0; }
  int MinTopBlobs() const override { return 1; }
  int MaxTopBlobs() const override { return 2; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::DataParameter& data = param_.data_param();
    CheckBackend(data);
    DLC_REQUIRE(data.batch_size() > 0, Where() << "data_param.batch_size must be positive");
    batch_size_ = static_cast<int>(data.batch_size());
    source_ = data.source();
    transformer_ = std::make_unique<DataTransformer>(TransformParam(), param_.phase(), *ctx_,
                                                     Where());
    try {
      db_ = LmdbDatabase::OpenForReading(source_);
      cursor_ = std::make_unique<LmdbCursor>(db_);
    } catch (const Error& e) {
      DLC_FAIL(Where() << e.what());
    }
    rng_.seed(ctx_->rng()());
    if (param_.phase() == caffe::TRAIN) shard_ = ctx_->replica();
    // A replica's share starts at its own index (see ReplicaInfo).
    for (int i = 0; i < shard_.index; ++i) cursor_->Next();
    if (data.rand_skip() > 0 && shard_.count > 1) {
      LOG(INFO) << name() << ": rand_skip is not applied in data-parallel training, where "
                   "the replicas read disjoint shares of " << source_;
    } else if (data.rand_skip() > 0) {
      // Legacy: start at a random record so that parallel readers differ.
      const uint64_t skip = rng_() % data.rand_skip();
      LOG(INFO) << "Skipping first " << skip << " data points.";
      for (uint64_t i = 0; i < skip; ++i) cursor_->Next();
    }

    // As Caffe: the first record (peeked, not consumed) gives the top shapes.
    ShapeTops(cursor_->value(), top);
    LOG(INFO) << name() << ": output data size: " << top[0]->shape_string();

    consumed_state_ = CurrentReaderState();
    const int depth = data.prefetch() > 0 ? static_cast<int>(data.prefetch()) : 1;
    batches_ = std::make_unique<BatchUploader>(*ctx_, depth,
                                               [this](PrefetchBatch* batch) { ReadBatch(batch); });
    batches_->Start();
  }

  // Shapes come from each batch, in Forward (as Caffe's data layers).
  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {}

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const PrefetchBatch& batch = batches_->UploadNext();
    consumed_state_ = batch.state_after;
    ForwardBatch(batch, top);
  }

 protected:
  // The hooks of a data layer reading other records from the LMDB
  // (AnnotatedData). ShapeTops: the tops' shapes from the first record.
  virtual void ShapeTops(std::string_view record, const std::vector<Blob*>& top) {
    caffe::Datum datum;
    DatumImage image;
    try {
      ParseDatum(record, RecordName(), &datum);
      DecodeDatum(datum, transformer_->color(), RecordName(), &image);
    } catch (const Error& e) {
      DLC_FAIL(Where() << e.what());
    }
    transformer_->CheckInput(image.channels, image.height, image.width);
    top[0]->Reshape(
        transformer_->OutputShape(batch_size_, image.channels, image.height, image.width));
    if (top.size() > 1) top[1]->Reshape({batch_size_});
  }

  // On the prefetch thread: record `index` of the batch (the cursor's), its
  // image and crop into batch->images. `first_record` names the batch's
  // first record, for errors.
  virtual void ReadRecord(int index, const std::string& record, const std::string& first_record,
                          PrefetchBatch* batch) {
    HostImageBatch& images = batch->images;
    caffe::Datum datum;
    try {
      ParseDatum(cursor_->value(), record, &datum);
      DecodeDatum(datum, transformer_->color(), record, &image_);
    } catch (const Error& e) {
      DLC_FAIL(Where() << e.what());
    }
    PlaceImage(index, record, first_record, images);
    images.SetCrop(index, transformer_->Draw(image_.height, image_.width, rng_));
  }

  // Puts image_ into slot `index`, sizing the batch at the first.
  void PlaceImage(int index, const std::string& record, const std::string& first_record,
                  HostImageBatch& images) {
    if (index == 0) {
      images.Reset(batch_size_, image_.channels, image_.height, image_.width, image_.is_float);
      transformer_->CheckInput(image_.channels, image_.height, image_.width);
    } else {
      DLC_REQUIRE(images.Fits(image_),
                  Where() << record << " is " << Describe(image_) << " but the batch started with "
                          << first_record << ", " << DescribeBatch(images)
                          << "; the images of a batch must have one size");
    }
    images.SetImage(index, image_);
  }

  // The tops from an uploaded batch.
  virtual void ForwardBatch(const PrefetchBatch& batch, const std::vector<Blob*>& top) {
    const HostImageBatch& images = batch.images;
    transformer_->Transform(images, batches_->device_batch(), top[0]);
    if (top.size() > 1) {
      top[1]->Reshape({images.num()});
      ctx_->Copy(batches_->device_batch(), images.labels_offset(), top[1]->data(), 0,
                 images.num() * sizeof(float));
    }
  }

 public:
  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {}

  DataReaderState ReaderState() const override { return consumed_state_; }

  void RestoreReaderState(const DataReaderState& state) override {
    DLC_REQUIRE(batches_, Where() << "restoring a reader state needs SetUp first");
    // Check the state before touching the running reader, which stays as it
    // was if the state does not fit this database.
    Rng restored;
    try {
      DataReaderState::LoadRng(state.rng_state, &restored);
      LmdbCursor(db_).Seek(state.next_key);
    } catch (const Error& e) {
      DLC_FAIL(Where() << "cannot restore the reader state: " << e.what());
    }
    batches_->Restart([&] {
      rng_ = restored;
      cursor_->Seek(state.next_key);
      cursor_->set_epoch(state.epoch);
      records_read_ = state.records_read;
    });
    consumed_state_ = state;
  }

 protected:
  // The device copy of the batch ForwardBatch is given.
  cl_mem device_batch() const { return batches_->device_batch(); }

  void CheckBackend(const caffe::DataParameter& data) const {
    // Caffe's default backend is LevelDB; an unset backend still reads an
    // LMDB directory, which is what every current Caffe example holds (and a
    // missing source is reported as missing).
    if (data.backend() == caffe::DataParameter::LMDB) return;
    const bool maybe_lmdb =
        FileExists(data.source() + "/data.mdb") || !FileExists(data.source());
    DLC_REQUIRE(!data.has_backend() && maybe_lmdb,
                Where() << "backend LEVELDB is not supported (source " << data.source()
                        << "); convert the data set to LMDB and set backend: LMDB");
  }

  // transform_param, with the legacy data_param fields moved in as Caffe's
  // net upgrade does.
  caffe::TransformationParameter TransformParam() const {
    caffe::TransformationParameter t = param_.transform_param();
    const caffe::DataParameter& d = param_.data_param();
    if (d.has_scale()) t.set_scale(d.scale());
    if (d.has_mean_file()) t.set_mean_file(d.mean_file());
    if (d.has_crop_size()) t.set_crop_size(d.crop_size());
    if (d.has_mirror()) t.set_mirror(d.mirror());
    if (d.force_encoded_color()) t.set_force_color(true);
    return t;
  }

  std::string RecordName() const {
    return "record '" + std::string(cursor_->key()) + "' of " + source_;
  }

  DataReaderState CurrentReaderState() const {
    DataReaderState state;
    state.next_key = std::string(cursor_->key());
    state.epoch = cursor_->epoch();
    state.records_read = records_read_;
    state.rng_state = DataReaderState::SaveRng(rng_);
    return state;
  }

  // Runs on the prefetch thread: reads batch_size records.
  void ReadBatch(PrefetchBatch* batch) {
    std::string first_record;
    for (int i = 0; i < batch_size_; ++i) {
      const std::string record = RecordName();
      if (i == 0) first_record = record;
      ReadRecord(i, record, first_record, batch);
      for (int skip = 0; skip < shard_.count; ++skip) cursor_->Next();
      ++records_read_;
    }
    batch->state_after = CurrentReaderState();
  }

  static std::string Describe(const DatumImage& image) {
    return std::to_string(image.channels) + " x " + std::to_string(image.height) + " x " +
           std::to_string(image.width) + (image.is_float ? " (float)" : " (uint8)");
  }
  static std::string DescribeBatch(const HostImageBatch& images) {
    return std::to_string(images.channels()) + " x " + std::to_string(images.height()) +
           " x " + std::to_string(images.width()) +
           (images.is_float() ? " (float)" : " (uint8)");
  }

 protected:
  int batch_size_ = 0;
  std::string source_;
  std::unique_ptr<DataTransformer> transformer_;
  std::shared_ptr<LmdbDatabase> db_;
  // Owned by the prefetch thread while it runs.
  std::unique_ptr<LmdbCursor> cursor_;
  Rng rng_;
  ReplicaInfo shard_;  // TRAIN phase: this replica's share; else every record
  uint64_t records_read_ = 0;
  DatumImage image_;
 private:
  // Main thread.
  std::unique_ptr<BatchUploader> batches_;
  DataReaderState consumed_state_;
};

}  // namespace dlcaffe
