// A small RAII wrapper over liblmdb for Caffe-style databases (a directory
// holding data.mdb and lock.mdb). Readers open the environment read-only
// (MDB_RDONLY | MDB_NOTLS, so a read transaction may move between threads and
// any number of processes may read at once); converters write through
// LmdbWriter, which commits in batches. Every failure is a dlcaffe::Error that
// names the database path.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// liblmdb's handle types (lmdb.h declares them as these incomplete structs).
struct MDB_env;
struct MDB_txn;
struct MDB_cursor;

namespace dlcaffe {

class LmdbDatabase {
 public:
  // Opens an existing database for reading. A missing, unreadable or corrupt
  // database throws an Error naming `path`.
  static std::shared_ptr<LmdbDatabase> OpenForReading(const std::string& path);
  // Creates a new, empty database directory; throws if `path` already exists
  // (as Caffe's converters do, we never overwrite a dataset). The memory map
  // starts at `initial_map_bytes` and doubles whenever a commit needs more.
  static constexpr size_t kDefaultMapBytes = size_t(1) << 30;
  static std::shared_ptr<LmdbDatabase> Create(const std::string& path,
                                              size_t initial_map_bytes = kDefaultMapBytes);

  ~LmdbDatabase();
  LmdbDatabase(const LmdbDatabase&) = delete;
  LmdbDatabase& operator=(const LmdbDatabase&) = delete;

  const std::string& path() const { return path_; }
  bool writable() const { return writable_; }
  // Number of records (a fresh read of the database's statistics).
  size_t NumRecords() const;

  MDB_env* env() const { return env_; }
  unsigned int dbi() const { return dbi_; }
  // Doubles the memory map (a writer that hit MDB_MAP_FULL grows the map and
  // retries its transaction).
  void GrowMap();

 private:
  LmdbDatabase(std::string path, bool writable);
  void OpenEnvironment(unsigned int flags);

  std::string path_;
  bool writable_ = false;
  MDB_env* env_ = nullptr;
  unsigned int dbi_ = 0;
  size_t map_size_ = 0;  // writers only (readers take the database's own)
};

// Reads records in key order inside one long read transaction. Next() wraps
// around to the first record at the end and counts the completed passes
// (epochs), as a training data reader needs.
class LmdbCursor {
 public:
  // Positions on the first record; an empty database throws.
  explicit LmdbCursor(std::shared_ptr<LmdbDatabase> db);
  ~LmdbCursor();
  LmdbCursor(const LmdbCursor&) = delete;
  LmdbCursor& operator=(const LmdbCursor&) = delete;

  // The current record; valid until the cursor moves.
  std::string_view key() const { return key_; }
  std::string_view value() const { return value_; }
  // Advances; after the last record comes the first again and epoch() grows.
  void Next();
  void SeekToFirst();
  // Positions on the record with exactly this key; throws if there is none.
  void Seek(std::string_view key);
  // Completed passes over the database since construction (or set_epoch).
  uint64_t epoch() const { return epoch_; }
  void set_epoch(uint64_t epoch) { epoch_ = epoch; }
  const LmdbDatabase& database() const { return *db_; }

 private:
  void Load(int op, const char* what);

  std::shared_ptr<LmdbDatabase> db_;
  MDB_txn* txn_ = nullptr;
  MDB_cursor* cursor_ = nullptr;
  std::string_view key_, value_;
  uint64_t epoch_ = 0;
};

// Buffers puts and commits them in one write transaction every
// `commit_every` records (Caffe's converters use 1000). The destructor commits
// what is left; call Commit() yourself to see errors as exceptions.
class LmdbWriter {
 public:
  explicit LmdbWriter(std::shared_ptr<LmdbDatabase> db, size_t commit_every = 1000);
  ~LmdbWriter();
  LmdbWriter(const LmdbWriter&) = delete;
  LmdbWriter& operator=(const LmdbWriter&) = delete;

  // Adds (or replaces) a record; commits when the batch is full.
  void Put(std::string_view key, std::string_view value);
  // Writes every pending record in one transaction.
  void Commit();
  size_t pending() const { return pending_.size(); }
  size_t committed() const { return committed_; }

 private:
  std::shared_ptr<LmdbDatabase> db_;
  size_t commit_every_;
  std::vector<std::pair<std::string, std::string>> pending_;
  size_t committed_ = 0;
};

}  // namespace dlcaffe
