// HDF5Data (Caffe "HDF5Data"): reads the .h5 files listed in
// hdf5_data_param.source (one path a line, as written: relative to the
// working directory, as in Caffe), batch_size rows at a time. Each top reads
// the dataset of its own name ("data", "label", ...), of any rank and numeric
// type (read as float); the first axis is the row, and every top's dataset
// has the same number of rows in a file. Rows come in order, file after file,
// wrapping around at the end; with shuffle the file order is drawn anew at
// every pass over the list, and the row order each time a file is started.
// Tops are batch_size × (the datasets' other dimensions). As in Caffe, one
// file is held in host memory at a time; Forward gathers the batch there and
// writes it to the tops.
//
// Every listed file is opened at setup and its datasets' shapes checked, so
// that a bad file is reported before training starts, not when reached.
//
// In data-parallel training a TRAIN-phase layer reads its replica's share
// (Context::replica) of the rows, in the order every replica draws alike from
// the replicas' shared seed (as ImageData).
//
// Exact resume: ReaderState().next_key is "file F of N row R of M" (the next
// row's position R in the row order of the file at position F of the file
// order, a file of M rows among N files), followed by " order FS RS" when
// shuffling, the seeds that drew the file order and the row order.
#include <glog/logging.h>

#include <algorithm>
#include <climits>
#include <fstream>
#include <sstream>

#include "core/hdf5_file.hpp"
#include "dlcaffe/data/data_state.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class HDF5DataLayer : public Layer, public ResumableDataLayer {
 public:
  using Layer::Layer;
  const char* type() const override { return "HDF5Data"; }
  int ExactNumBottomBlobs() const override { return 0; }
  int MinTopBlobs() const override { return 1; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::HDF5DataParameter& p = param_.hdf5_data_param();
    DLC_REQUIRE(p.batch_size() > 0 && p.batch_size() <= INT_MAX,
                Where() << "hdf5_data_param.batch_size must be positive");
    DLC_REQUIRE(param_.top_size() == static_cast<int>(top.size()),
                Where() << "each top reads the dataset of its name: name the tops");
    batch_size_ = static_cast<int>(p.batch_size());
    source_ = p.source();
    ReadFileList();
    CheckFiles();
    LOG(INFO) << name() << ": " << files_.size() << " HDF5 file(s) listed in " << source_;

    rng_.seed(ctx_->rng()());
    if (param_.phase() == caffe::TRAIN) shard_ = ctx_->replica();
    if (shuffle()) file_seed_ = shard_.count > 1 ? MixSeed(shard_.shared_seed) : rng_();
    BuildFileOrder();
    StartFile(0);
    // A replica's share starts at its own index (see ReplicaInfo).
    for (int i = 0; i < shard_.index; ++i) Advance();
    for (size_t t = 0; t < top.size(); ++t) {
      std::vector<int> shape = {batch_size_};
      for (size_t a = 1; a < dims_[t].size(); ++a) shape.push_back(static_cast<int>(dims_[t][a]));
      try {
        top[t]->Reshape(shape);
      } catch (const Error& e) {
        DLC_FAIL(Where() << "top '" << param_.top(t) << "': " << e.what());
      }
      LOG(INFO) << name() << ": output '" << param_.top(t) << "' size: " << top[t]->shape_string();
    }
    host_.resize(top.size());
  }

  // The shapes are fixed at setup, as in Caffe.
  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {}

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    for (size_t t = 0; t < top.size(); ++t) host_[t].resize(size_t(batch_size_) * RowSize(t));
    for (int i = 0; i < batch_size_; ++i) {
      const size_t row = row_order_[row_];
      for (size_t t = 0; t < top.size(); ++t) {
        const size_t n = RowSize(t);
        std::copy_n(rows_[t].values.begin() + row * n, n, host_[t].begin() + i * n);
      }
      ++records_read_;
      for (int skip = 0; skip < shard_.count; ++skip) Advance();
    }
    for (size_t t = 0; t < top.size(); ++t)
      ctx_->Write(top[t]->data(), 0, host_[t].size() * sizeof(float), host_[t].data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {}

  DataReaderState ReaderState() const override {
    DataReaderState state;
    state.next_key = "file " + std::to_string(file_) + " of " + std::to_string(files_.size()) +
                     " row " + std::to_string(row_) + " of " + std::to_string(row_order_.size());
    if (shuffle())
      state.next_key += " order " + std::to_string(file_seed_) + " " + std::to_string(row_seed_);
    state.epoch = epoch_;
    state.records_read = records_read_;
    state.rng_state = DataReaderState::SaveRng(rng_);
    return state;
  }

  void RestoreReaderState(const DataReaderState& state) override {
    DLC_REQUIRE(!files_.empty(), Where() << "restoring a reader state needs SetUp first");
    std::istringstream in(state.next_key);
    std::string w[5], rest;
    uint64_t file = 0, num_files = 0, row = 0, num_rows = 0, file_seed = 0, row_seed = 0;
    bool parsed = (in >> w[0] >> file >> w[1] >> num_files >> w[2] >> row >> w[3] >> num_rows) &&
                  w[0] == "file" && w[1] == "of" && w[2] == "row" && w[3] == "of";
    if (shuffle()) parsed = parsed && (in >> w[4] >> file_seed >> row_seed) && w[4] == "order";
    DLC_REQUIRE(parsed && !(in >> rest),
                Where() << "cannot restore the reader state: key '" << state.next_key
                        << "' is not 'file F of N row R of M" << (shuffle() ? " order FS RS'" : "'")
                        << " (a state of another layer, or taken with shuffle "
                        << (shuffle() ? "off" : "on") << "?)");
    DLC_REQUIRE(num_files == files_.size() && file < num_files,
                Where() << "cannot restore the reader state: it was taken on a list of "
                        << num_files << " files; " << source_ << " lists " << files_.size());
    Rng restored;
    try {
      DataReaderState::LoadRng(state.rng_state, &restored);
    } catch (const Error& e) {
      DLC_FAIL(Where() << "cannot restore the reader state: " << e.what());
    }
    file_seed_ = file_seed;
    BuildFileOrder();
    LoadFile(file_order_[file]);
    DLC_REQUIRE(num_rows == rows_[0].dims[0] && row < num_rows,
                Where() << "cannot restore the reader state: it was taken on a file of " << num_rows
                        << " rows; " << files_[file_order_[file]].path << " has "
                        << rows_[0].dims[0]);
    file_ = file;
    row_seed_ = row_seed;
    BuildRowOrder();
    row_ = row;
    rng_ = restored;
    epoch_ = state.epoch;
    records_read_ = state.records_read;
  }

 private:
  struct ListedFile {
    std::string path;
    int line = 0;  // 1-based line of the list, for messages
  };

  bool shuffle() const { return param_.hdf5_data_param().shuffle(); }
  size_t RowSize(size_t t) const { return rows_[t].values.size() / rows_[t].dims[0]; }

  std::string Describe(const ListedFile& file) const {
    return file.path + " (line " + std::to_string(file.line) + " of " + source_ + ")";
  }

  // One path a line; blank lines and the blanks around a path are ignored.
  void ReadFileList() {
    std::ifstream in(source_);
    DLC_REQUIRE(
        in, Where() << "cannot open the HDF5 file list hdf5_data_param.source '" << source_ << "'");
    files_.clear();
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      const size_t begin = line.find_first_not_of(" \t\r");
      if (begin == std::string::npos) continue;
      const size_t end = line.find_last_not_of(" \t\r");
      files_.push_back({line.substr(begin, end - begin + 1), number});
    }
    DLC_REQUIRE(!in.bad(), Where() << "cannot read the HDF5 file list " << source_);
    DLC_REQUIRE(!files_.empty(), Where() << "the HDF5 file list " << source_ << " names no files");
  }

  // Opens every file and checks its datasets' shapes (not their values).
  void CheckFiles() {
    dims_.clear();
    for (size_t f = 0; f < files_.size(); ++f) {
      const std::vector<std::vector<uint64_t>> dims = DatasetDims(files_[f]);
      if (f == 0) dims_ = dims;
      for (size_t t = 0; t < dims.size(); ++t) {
        const std::vector<uint64_t> rest(dims[t].begin() + 1, dims[t].end());
        const std::vector<uint64_t> first(dims_[t].begin() + 1, dims_[t].end());
        DLC_REQUIRE(rest == first, Where() << "HDF5 file " << Describe(files_[f]) << ": dataset '"
                                           << param_.top(t) << "' has rows of shape "
                                           << ShapeText(rest) << " but those of "
                                           << Describe(files_[0]) << " are " << ShapeText(first));
      }
    }
  }

  static std::string ShapeText(const std::vector<uint64_t>& dims) {
    std::string text = "(";
    for (size_t i = 0; i < dims.size(); ++i) text += (i ? " " : "") + std::to_string(dims[i]);
    return text + ")";
  }

  // The dimensions of each top's dataset in `file`, checked: rank >= 1, rows
  // > 0, the same rows for every top, rows that fit a blob.
  std::vector<std::vector<uint64_t>> DatasetDims(const ListedFile& file) const {
    Hdf5Handle h5;
    try {
      h5 = OpenHdf5File(file.path);
    } catch (const Error& e) {
      DLC_FAIL(Where() << e.what() << " (line " << file.line << " of " << source_ << ")");
    }
    std::vector<std::vector<uint64_t>> dims;
    for (int t = 0; t < param_.top_size(); ++t) {
      const std::string& name = param_.top(t);
      DLC_REQUIRE(Hdf5HasLink(h5.get(), name), Where() << "HDF5 file " << Describe(file)
                                                       << " has no dataset '" << name << "' (top '"
                                                       << name << "' reads it)");
      try {
        dims.push_back(Hdf5DatasetDims(h5.get(), name));
      } catch (const Error& e) {
        DLC_FAIL(Where() << "HDF5 file " << Describe(file) << ": " << e.what());
      }
      const std::vector<uint64_t>& d = dims.back();
      DLC_REQUIRE(!d.empty() && d[0] > 0,
                  Where() << "HDF5 file " << Describe(file) << ": dataset '" << name
                          << "' has shape " << ShapeText(d)
                          << "; it needs at least one axis, whose length (the rows) is positive");
      uint64_t row = 1;
      for (size_t a = 1; a < d.size(); ++a) row *= d[a];
      DLC_REQUIRE(row > 0 && row * batch_size_ <= INT_MAX,
                  Where() << "HDF5 file " << Describe(file) << ": dataset '" << name
                          << "' has rows of shape "
                          << ShapeText(std::vector<uint64_t>(d.begin() + 1, d.end()))
                          << ", of which batch_size " << batch_size_ << " do not fit a blob");
      DLC_REQUIRE(d[0] == dims[0][0],
                  Where() << "HDF5 file " << Describe(file) << ": dataset '" << name << "' has "
                          << d[0] << " rows but dataset '" << param_.top(0) << "' has "
                          << dims[0][0] << "; every top's dataset needs the same number of rows");
    }
    return dims;
  }

  // Reads every top's dataset of files_[index] into rows_.
  void LoadFile(size_t index) {
    const ListedFile& file = files_[index];
    DLOG(INFO) << name() << ": loading HDF5 file " << file.path;
    DatasetDims(file);  // the file may have changed since setup
    Hdf5Handle h5 = OpenHdf5File(file.path);
    rows_.clear();
    for (int t = 0; t < param_.top_size(); ++t) {
      try {
        rows_.push_back(ReadHdf5Floats(h5.get(), param_.top(t)));
      } catch (const Error& e) {
        DLC_FAIL(Where() << "HDF5 file " << Describe(file) << ": " << e.what());
      }
      const std::vector<uint64_t>& d = rows_.back().dims;
      DLC_REQUIRE(std::equal(d.begin() + 1, d.end(), dims_[t].begin() + 1, dims_[t].end()),
                  Where() << "HDF5 file " << Describe(file) << ": dataset '" << param_.top(t)
                          << "' changed shape since setup");
    }
  }

  // Fisher-Yates from a seed (plain modulo on mt19937_64: the same order
  // with any standard library), or the identity without shuffle.
  void Permutation(uint64_t seed, size_t n, std::vector<size_t>* order) const {
    order->resize(n);
    for (size_t i = 0; i < n; ++i) (*order)[i] = i;
    if (!shuffle()) return;
    Rng draw(seed);
    for (size_t i = n; i > 1; --i) std::swap((*order)[i - 1], (*order)[draw() % i]);
  }
  void BuildFileOrder() { Permutation(file_seed_, files_.size(), &file_order_); }
  void BuildRowOrder() { Permutation(row_seed_, rows_[0].dims[0], &row_order_); }

  // The next seed: from the layer's generator, or for replicas, which must
  // all draw the same orders, from the last seed.
  uint64_t NextSeed(uint64_t last) { return shard_.count > 1 ? MixSeed(last) : rng_(); }

  // Starts the file at position `position` of the file order, at its first
  // row of a freshly drawn row order. A single file is read once.
  void StartFile(size_t position) {
    if (rows_.empty() || files_.size() > 1) LoadFile(file_order_[position]);
    file_ = position;
    if (shuffle()) row_seed_ = NextSeed(row_seed_ ^ file_seed_);
    BuildRowOrder();
    row_ = 0;
  }

  // To the next row, the next file, or the first file of the next pass over
  // the list, whose order is drawn anew.
  void Advance() {
    if (++row_ < row_order_.size()) return;
    size_t next = file_ + 1;
    if (next == files_.size()) {
      next = 0;
      ++epoch_;
      if (shuffle()) {
        file_seed_ = NextSeed(file_seed_);
        BuildFileOrder();
      }
    }
    StartFile(next);
  }

  int batch_size_ = 0;
  std::string source_;
  std::vector<ListedFile> files_;
  std::vector<std::vector<uint64_t>> dims_;  // per top: the first file's dataset shape
  std::vector<size_t> file_order_;           // files_ indices in this pass's order
  uint64_t file_seed_ = 0;
  size_t file_ = 0;                // position in file_order_ of the file in rows_
  std::vector<Hdf5Floats> rows_;   // per top: the current file's dataset
  std::vector<size_t> row_order_;  // row indices of the current file, in order
  uint64_t row_seed_ = 0;
  size_t row_ = 0;  // position in row_order_ of the next row
  uint64_t epoch_ = 0;
  uint64_t records_read_ = 0;
  Rng rng_;
  ReplicaInfo shard_;                     // TRAIN phase: this replica's share; else every row
  std::vector<std::vector<float>> host_;  // per top: the batch being gathered
};

REGISTER_LAYER_CLASS(HDF5Data);

}  // namespace dlcaffe
