// ImageData (Caffe "ImageData"): reads the images named in a list file of
// "path label" lines (paths relative to root_folder), batch_size at a time,
// wrapping around at the end; with shuffle the order is drawn anew at setup
// and at every epoch, as in Caffe. Images are decoded by OpenCV (colour BGR or
// gray, optionally resized to new_height × new_width). Tops: data
// (N × C × H × W after crop) and label (N).
//
// As the Data layer: a prefetch thread reads the next batches and draws their
// crops and mirrors from the layer's own seeded generator; Forward uploads one
// batch and the shared transform kernel (data_transform.cl) writes the top.
//
// In data-parallel training a TRAIN-phase layer reads its replica's share
// (Context::replica): positions index, index + count, ... of each epoch's
// order, which every replica draws alike from the replicas' shared seed.
//
// Exact resume: ReaderState().next_key is "position P of N" (the next image's
// index in the epoch's order, of a list of N images), followed by " order S"
// when shuffling, S being the seed that drew the epoch's order.
#include <glog/logging.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

#include "data/batch_uploader.hpp"
#include "dlcaffe/data/data_state.hpp"
#include "dlcaffe/data/data_transformer.hpp"
#include "dlcaffe/data/datum.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

namespace {

struct ListEntry {
  std::string path;
  int label = 0;
  int line = 0;  // 1-based line of the list file, for messages
};

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// Parses "path label": as Caffe, the label follows the last blank, so paths
// may hold spaces. Blank lines are skipped; trailing blanks (and the '\r' of
// Windows line ends) are ignored.
std::vector<ListEntry> ReadImageList(const std::string& source) {
  std::ifstream in(source);
  DLC_REQUIRE(in, "cannot open the image list " << source);
  std::vector<ListEntry> entries;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    size_t end = line.size();
    while (end > 0 && IsBlank(line[end - 1])) --end;
    if (end == 0) continue;
    size_t split = line.find_last_of(" \t", end - 1);
    size_t path_end = split;
    while (path_end != std::string::npos && path_end > 0 && IsBlank(line[path_end - 1])) --path_end;
    const std::string label_text =
        split == std::string::npos ? "" : line.substr(split + 1, end - split - 1);
    char* parsed_end = nullptr;
    errno = 0;
    const long label = std::strtol(label_text.c_str(), &parsed_end, 10);
    DLC_REQUIRE(split != std::string::npos && path_end > 0 && !label_text.empty() &&
                    *parsed_end == '\0' && errno == 0 && label >= INT_MIN && label <= INT_MAX,
                "line " << number << " of the image list " << source
                        << " should be 'path label' with an integer label, is '"
                        << line.substr(0, end) << "'");
    entries.push_back({line.substr(0, path_end), static_cast<int>(label), number});
  }
  DLC_REQUIRE(!entries.empty(), "the image list " << source << " names no images");
  return entries;
}

}  // namespace

class ImageDataLayer : public Layer, public ResumableDataLayer {
 public:
  using Layer::Layer;
  // The prefetch thread uses the members below: stop it first.
  ~ImageDataLayer() override { batches_.reset(); }
  const char* type() const override { return "ImageData"; }
  int ExactNumBottomBlobs() const override { return 0; }
  int ExactNumTopBlobs() const override { return 2; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::ImageDataParameter& p = param_.image_data_param();
    DLC_REQUIRE(p.batch_size() > 0, Where() << "image_data_param.batch_size must be positive");
    DLC_REQUIRE((p.new_height() == 0) == (p.new_width() == 0),
                Where() << "set new_height and new_width together (got " << p.new_height()
                        << " and " << p.new_width() << ")");
    batch_size_ = static_cast<int>(p.batch_size());
    source_ = p.source();
    transformer_ =
        std::make_unique<DataTransformer>(TransformParam(), param_.phase(), *ctx_, Where());
    try {
      entries_ = ReadImageList(source_);
    } catch (const Error& e) {
      DLC_FAIL(Where() << e.what());
    }
    LOG(INFO) << name() << ": a total of " << entries_.size() << " images";

    rng_.seed(ctx_->rng()());
    if (param_.phase() == caffe::TRAIN) shard_ = ctx_->replica();
    position_ = 0;
    if (p.shuffle()) order_seed_ = shard_.count > 1 ? MixSeed(shard_.shared_seed) : rng_();
    BuildOrder();
    // A replica's share starts at its own index (see ReplicaInfo).
    for (int i = 0; i < shard_.index; ++i) Advance();
    if (p.rand_skip() > 0 && shard_.count > 1) {
      LOG(INFO) << name() << ": rand_skip is not applied in data-parallel training, where "
                   "the replicas read disjoint shares of " << source_;
    } else if (p.rand_skip() > 0) {
      // Legacy: start at a random image so that parallel readers differ.
      const uint64_t skip = rng_() % p.rand_skip();
      LOG(INFO) << "Skipping first " << skip << " data points.";
      DLC_REQUIRE(skip < entries_.size(),
                  Where() << "rand_skip " << p.rand_skip() << " drew a skip of " << skip << " but "
                          << source_ << " lists only " << entries_.size() << " images");
      position_ = skip;
    }

    // As Caffe: the next image gives the top shapes.
    ReadImage(entries_[order_[position_]], &image_);
    transformer_->CheckInput(image_.channels, image_.height, image_.width);
    top[0]->Reshape(
        transformer_->OutputShape(batch_size_, image_.channels, image_.height, image_.width));
    top[1]->Reshape({batch_size_});
    LOG(INFO) << name() << ": output data size: " << top[0]->shape_string();

    consumed_state_ = CurrentReaderState();
    // Caffe's prefetching layers all take the depth from data_param.prefetch.
    const int depth = std::max(1, static_cast<int>(param_.data_param().prefetch()));
    batches_ = std::make_unique<BatchUploader>(*ctx_, depth,
                                               [this](PrefetchBatch* batch) { ReadBatch(batch); });
    batches_->Start();
  }

  // Shapes come from each batch, in Forward (as Caffe's data layers).
  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {}

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const PrefetchBatch& batch = batches_->UploadNext();
    consumed_state_ = batch.state_after;
    const HostImageBatch& images = batch.images;
    transformer_->Transform(images, batches_->device_batch(), top[0]);
    top[1]->Reshape({images.num()});
    ctx_->Copy(batches_->device_batch(), images.labels_offset(), top[1]->data(), 0,
               images.num() * sizeof(float));
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {}

  DataReaderState ReaderState() const override { return consumed_state_; }

  void RestoreReaderState(const DataReaderState& state) override {
    DLC_REQUIRE(batches_, Where() << "restoring a reader state needs SetUp first");
    // Check the state before touching the running reader, which stays as it
    // was if the state does not fit this list.
    Rng restored;
    uint64_t position = 0, order_seed = 0;
    try {
      DataReaderState::LoadRng(state.rng_state, &restored);
      ParseKey(state.next_key, &position, &order_seed);
    } catch (const Error& e) {
      DLC_FAIL(Where() << "cannot restore the reader state: " << e.what());
    }
    batches_->Restart([&] {
      rng_ = restored;
      order_seed_ = order_seed;
      BuildOrder();
      position_ = position;
      epoch_ = state.epoch;
      records_read_ = state.records_read;
    });
    consumed_state_ = state;
  }

 private:
  // transform_param, with the legacy image_data_param fields moved in as
  // Caffe's net upgrade does.
  caffe::TransformationParameter TransformParam() const {
    caffe::TransformationParameter t = param_.transform_param();
    const caffe::ImageDataParameter& d = param_.image_data_param();
    if (d.has_scale()) t.set_scale(d.scale());
    if (d.has_mean_file()) t.set_mean_file(d.mean_file());
    if (d.has_crop_size()) t.set_crop_size(d.crop_size());
    if (d.has_mirror()) t.set_mirror(d.mirror());
    return t;
  }

  bool shuffle() const { return param_.image_data_param().shuffle(); }

  // The epoch's order: a Fisher-Yates shuffle of the list drawn from
  // order_seed_ (plain modulo on mt19937_64, the same with any standard
  // library), or the list order without shuffle.
  void BuildOrder() {
    order_.resize(entries_.size());
    for (size_t i = 0; i < order_.size(); ++i) order_[i] = static_cast<int>(i);
    if (!shuffle()) return;
    Rng draw(order_seed_);
    for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[draw() % i]);
  }

  std::string Key() const {
    std::string key =
        "position " + std::to_string(position_) + " of " + std::to_string(entries_.size());
    if (shuffle()) key += " order " + std::to_string(order_seed_);
    return key;
  }

  void ParseKey(const std::string& key, uint64_t* position, uint64_t* order_seed) const {
    std::istringstream in(key);
    std::string word1, word2, word3;
    uint64_t size = 0;
    const bool parsed = (in >> word1 >> *position >> word2 >> size) && word1 == "position" &&
                        word2 == "of" &&
                        (shuffle() ? (in >> word3 >> *order_seed) && word3 == "order" : true);
    std::string rest;
    DLC_REQUIRE(parsed && !(in >> rest),
                "key '" << key << "' is not 'position P of N" << (shuffle() ? " order S'" : "'")
                        << " (a state of another layer, or taken with shuffle "
                        << (shuffle() ? "off" : "on") << "?)");
    DLC_REQUIRE(size == entries_.size() && *position < size,
                "key '" << key << "' was taken on a list of " << size << " images; " << source_
                        << " lists " << entries_.size());
  }

  DataReaderState CurrentReaderState() const {
    DataReaderState state;
    state.next_key = Key();
    state.epoch = epoch_;
    state.records_read = records_read_;
    state.rng_state = DataReaderState::SaveRng(rng_);
    return state;
  }

  std::string Describe(const ListEntry& entry) const {
    return "line " + std::to_string(entry.line) + " of " + source_;
  }

  void ReadImage(const ListEntry& entry, DatumImage* image) const {
    const caffe::ImageDataParameter& p = param_.image_data_param();
    try {
      ReadImageFile(p.root_folder() + entry.path, static_cast<int>(p.new_height()),
                    static_cast<int>(p.new_width()), p.is_color(), image);
    } catch (const Error& e) {
      DLC_FAIL(Where() << e.what() << " (" << Describe(entry) << ")");
    }
    image->label = entry.label;
  }

  // Runs on the prefetch thread: reads batch_size images, draws their crops,
  // and reshuffles at the end of each epoch.
  void ReadBatch(PrefetchBatch* batch) {
    HostImageBatch& images = batch->images;
    const ListEntry* first = nullptr;
    for (int i = 0; i < batch_size_; ++i) {
      const ListEntry& entry = entries_[order_[position_]];
      ReadImage(entry, &image_);
      if (i == 0) {
        first = &entry;
        images.Reset(batch_size_, image_.channels, image_.height, image_.width, false);
        transformer_->CheckInput(image_.channels, image_.height, image_.width);
      } else {
        DLC_REQUIRE(images.Fits(image_),
                    Where() << "image " << entry.path << " (" << Describe(entry) << ") is "
                            << image_.channels << " x " << image_.height << " x " << image_.width
                            << " but the batch started with " << first->path << " ("
                            << Describe(*first) << "), " << images.channels() << " x "
                            << images.height() << " x " << images.width()
                            << "; the images of a batch must have one size (set "
                               "new_height and new_width to resize them)");
      }
      images.SetImage(i, image_);
      images.SetCrop(i, transformer_->Draw(image_.height, image_.width, rng_));
      ++records_read_;
      for (int skip = 0; skip < shard_.count; ++skip) Advance();
    }
    batch->state_after = CurrentReaderState();
  }

  // To the next position of the epoch's order, or to the next epoch, whose
  // order is drawn anew: from the layer's generator, or for replicas, which
  // must all draw the same order, from the last order's seed.
  void Advance() {
    if (++position_ < entries_.size()) return;
    position_ = 0;
    ++epoch_;
    if (shuffle()) {
      order_seed_ = shard_.count > 1 ? MixSeed(order_seed_) : rng_();
      BuildOrder();
    }
  }

  int batch_size_ = 0;
  std::string source_;
  std::unique_ptr<DataTransformer> transformer_;
  std::vector<ListEntry> entries_;
  // Owned by the prefetch thread while it runs.
  std::vector<int> order_;  // entries_ indices in this epoch's order
  uint64_t order_seed_ = 0;
  size_t position_ = 0;  // index into order_ of the next image
  uint64_t epoch_ = 0;
  uint64_t records_read_ = 0;
  Rng rng_;
  ReplicaInfo shard_;  // TRAIN phase: this replica's share; else every image
  DatumImage image_;
  // Main thread.
  DataReaderState consumed_state_;
  std::unique_ptr<BatchUploader> batches_;
};

REGISTER_LAYER_CLASS(ImageData);

}  // namespace dlcaffe
