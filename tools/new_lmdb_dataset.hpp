// A database a tool writes (convert_imageset, extract_features). As in Caffe
// the path must not exist yet; records go in through a writer that commits
// every 1000. Unless Finish() is reached, the destructor removes the
// directory again, so a failed run leaves no half-written dataset behind.
#pragma once
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

#include "dlcaffe/data/lmdb_database.hpp"

namespace dlcaffe {

class NewLmdbDataset {
 public:
  static constexpr size_t kCommitEvery = 1000;  // Caffe's transaction size

  explicit NewLmdbDataset(const std::string& path)
      : path_(path), db_(LmdbDatabase::Create(path)),
        writer_(std::make_unique<LmdbWriter>(db_, kCommitEvery)) {}
  ~NewLmdbDataset() {
    if (finished_) return;
    writer_.reset();
    db_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  NewLmdbDataset(const NewLmdbDataset&) = delete;
  NewLmdbDataset& operator=(const NewLmdbDataset&) = delete;

  const std::string& path() const { return path_; }
  void Put(std::string_view key, std::string_view value) { writer_->Put(key, value); }
  // Records put so far.
  size_t size() const { return writer_->committed() + writer_->pending(); }
  // Commits what is pending and keeps the database.
  void Finish() {
    writer_->Commit();
    finished_ = true;
  }

 private:
  std::string path_;
  std::shared_ptr<LmdbDatabase> db_;
  std::unique_ptr<LmdbWriter> writer_;
  bool finished_ = false;
};

}  // namespace dlcaffe
