#include "dlcaffe/data/lmdb_database.hpp"

#include <glog/logging.h>
#include <lmdb.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>
#include <mutex>
#include <cstring>

#include "dlcaffe/error.hpp"

namespace dlcaffe {

namespace {

std::string LmdbMessage(int rc) { return mdb_strerror(rc); }

MDB_val Val(std::string_view s) {
  MDB_val v;
  v.mv_size = s.size();
  v.mv_data = const_cast<char*>(s.data());
  return v;
}

std::string_view View(const MDB_val& v) {
  return std::string_view(static_cast<const char*>(v.mv_data), v.mv_size);
}

}  // namespace

LmdbDatabase::LmdbDatabase(std::string path, bool writable)
    : path_(std::move(path)), writable_(writable) {}

LmdbDatabase::~LmdbDatabase() {
  if (env_) mdb_env_close(env_);
}

std::shared_ptr<LmdbDatabase> LmdbDatabase::OpenForReading(const std::string& path) {
  struct stat st;
  DLC_REQUIRE(stat(path.c_str(), &st) == 0, "LMDB database " << path << " does not exist");
  DLC_REQUIRE(S_ISDIR(st.st_mode), "LMDB database " << path
                                       << " is not a directory (an LMDB database is a "
                                          "directory holding data.mdb)");
  // Without this check LMDB reports a bare "No such file or directory" for a
  // folder that is something else (an image folder, a LevelDB).
  DLC_REQUIRE(stat((path + "/data.mdb").c_str(), &st) == 0,
              path << " is not an LMDB database (it holds no data.mdb)");
  // LMDB forbids opening one environment twice in a process (closing either
  // would drop the other's file locks), so readers of the same directory, such
  // as a train and a test net, share one environment; each has its own cursor.
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<LmdbDatabase>> open_for_reading;
  std::error_code ec;
  std::string canonical = std::filesystem::canonical(path, ec).string();
  if (ec) canonical = path;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto shared = open_for_reading[canonical].lock()) return shared;
  std::shared_ptr<LmdbDatabase> db(new LmdbDatabase(path, false));
  db->OpenEnvironment(MDB_RDONLY | MDB_NOTLS);
  open_for_reading[canonical] = db;
  return db;
}

std::shared_ptr<LmdbDatabase> LmdbDatabase::Create(const std::string& path,
                                                   size_t initial_map_bytes) {
  struct stat st;
  DLC_REQUIRE(stat(path.c_str(), &st) != 0,
              "database " << path << " already exists; remove it or choose another path");
  DLC_REQUIRE(mkdir(path.c_str(), 0755) == 0,
              "cannot create database directory " << path << ": " << std::strerror(errno));
  std::shared_ptr<LmdbDatabase> db(new LmdbDatabase(path, true));
  db->map_size_ = std::max<size_t>(initial_map_bytes, 1 << 16);
  db->OpenEnvironment(0);
  return db;
}

void LmdbDatabase::OpenEnvironment(unsigned int flags) {
  int rc = mdb_env_create(&env_);
  DLC_REQUIRE(rc == 0, "cannot create an LMDB environment for " << path_ << ": "
                                                                 << LmdbMessage(rc));
  if (map_size_ > 0) {
    rc = mdb_env_set_mapsize(env_, map_size_);
    DLC_REQUIRE(rc == 0, "LMDB database " << path_ << ": " << LmdbMessage(rc));
  }
  rc = mdb_env_open(env_, path_.c_str(), flags, 0664);
  if ((rc == EACCES || rc == EROFS) && (flags & MDB_RDONLY)) {
    // A dataset on a read-only file system cannot take a lock file; readers
    // need no lock against each other, so open without one.
    LOG(WARNING) << "LMDB database " << path_ << ": " << LmdbMessage(rc)
                 << "; opening without a lock file";
    mdb_env_close(env_);
    env_ = nullptr;
    rc = mdb_env_create(&env_);
    DLC_REQUIRE(rc == 0, "cannot create an LMDB environment for " << path_ << ": "
                                                                   << LmdbMessage(rc));
    rc = mdb_env_open(env_, path_.c_str(), flags | MDB_NOLOCK, 0664);
  }
  DLC_REQUIRE(rc == 0, "cannot open LMDB database " << path_ << ": " << LmdbMessage(rc)
                                                    << (rc == MDB_INVALID ? " (corrupt?)" : ""));
  MDB_txn* txn = nullptr;
  rc = mdb_txn_begin(env_, nullptr, flags & MDB_RDONLY, &txn);
  DLC_REQUIRE(rc == 0, "LMDB database " << path_ << ": " << LmdbMessage(rc));
  MDB_dbi dbi = 0;
  rc = mdb_dbi_open(txn, nullptr, 0, &dbi);
  if (rc != 0) {
    mdb_txn_abort(txn);
    DLC_FAIL("LMDB database " << path_ << ": " << LmdbMessage(rc));
  }
  rc = mdb_txn_commit(txn);
  DLC_REQUIRE(rc == 0, "LMDB database " << path_ << ": " << LmdbMessage(rc));
  dbi_ = dbi;
}

size_t LmdbDatabase::NumRecords() const {
  MDB_txn* txn = nullptr;
  int rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &txn);
  DLC_REQUIRE(rc == 0, "LMDB database " << path_ << ": " << LmdbMessage(rc));
  MDB_stat stat;
  rc = mdb_stat(txn, dbi_, &stat);
  mdb_txn_abort(txn);
  DLC_REQUIRE(rc == 0, "LMDB database " << path_ << ": " << LmdbMessage(rc));
  return stat.ms_entries;
}

void LmdbDatabase::GrowMap() {
  CHECK(writable_);
  map_size_ *= 2;
  const int rc = mdb_env_set_mapsize(env_, map_size_);
  DLC_REQUIRE(rc == 0, "LMDB database " << path_ << ": cannot grow the map to "
                                        << map_size_ << " bytes: " << LmdbMessage(rc));
}

// ---------------------------------------------------------------------------

LmdbCursor::LmdbCursor(std::shared_ptr<LmdbDatabase> db) : db_(std::move(db)) {
  int rc = mdb_txn_begin(db_->env(), nullptr, MDB_RDONLY, &txn_);
  DLC_REQUIRE(rc == 0, "LMDB database " << db_->path() << ": " << LmdbMessage(rc));
  rc = mdb_cursor_open(txn_, db_->dbi(), &cursor_);
  if (rc != 0) {
    mdb_txn_abort(txn_);
    DLC_FAIL("LMDB database " << db_->path() << ": " << LmdbMessage(rc));
  }
  // A constructor that throws runs no destructor: close the cursor and end
  // the transaction here (an empty database leaked both, and a reader slot).
  try {
    SeekToFirst();
  } catch (...) {
    mdb_cursor_close(cursor_);
    mdb_txn_abort(txn_);
    throw;
  }
}

LmdbCursor::~LmdbCursor() {
  if (cursor_) mdb_cursor_close(cursor_);
  if (txn_) mdb_txn_abort(txn_);
}

void LmdbCursor::Load(int op, const char* what) {
  MDB_val key, value;
  const int rc = mdb_cursor_get(cursor_, &key, &value, static_cast<MDB_cursor_op>(op));
  DLC_REQUIRE(rc == 0, "LMDB database " << db_->path() << ": " << what << ": "
                                        << LmdbMessage(rc));
  key_ = View(key);
  value_ = View(value);
}

void LmdbCursor::SeekToFirst() {
  MDB_val key, value;
  const int rc = mdb_cursor_get(cursor_, &key, &value, MDB_FIRST);
  DLC_REQUIRE(rc != MDB_NOTFOUND, "LMDB database " << db_->path() << " is empty");
  DLC_REQUIRE(rc == 0, "LMDB database " << db_->path() << ": " << LmdbMessage(rc));
  key_ = View(key);
  value_ = View(value);
}

void LmdbCursor::Next() {
  MDB_val key, value;
  const int rc = mdb_cursor_get(cursor_, &key, &value, MDB_NEXT);
  if (rc == MDB_NOTFOUND) {
    SeekToFirst();
    ++epoch_;
    return;
  }
  DLC_REQUIRE(rc == 0, "LMDB database " << db_->path() << ": " << LmdbMessage(rc));
  key_ = View(key);
  value_ = View(value);
}

void LmdbCursor::Seek(std::string_view key) {
  MDB_val k = Val(key), value;
  const int rc = mdb_cursor_get(cursor_, &k, &value, MDB_SET_KEY);
  DLC_REQUIRE(rc != MDB_NOTFOUND, "LMDB database " << db_->path() << " has no record with key '"
                                                   << key << "'");
  DLC_REQUIRE(rc == 0, "LMDB database " << db_->path() << ": " << LmdbMessage(rc));
  key_ = View(k);
  value_ = View(value);
}

// ---------------------------------------------------------------------------

LmdbWriter::LmdbWriter(std::shared_ptr<LmdbDatabase> db, size_t commit_every)
    : db_(std::move(db)), commit_every_(commit_every > 0 ? commit_every : 1) {
  DLC_REQUIRE(db_->writable(), "LMDB database " << db_->path() << " was opened read-only");
}

LmdbWriter::~LmdbWriter() {
  try {
    Commit();
  } catch (const Error& e) {
    LOG(ERROR) << e.what();
  }
}

void LmdbWriter::Put(std::string_view key, std::string_view value) {
  pending_.emplace_back(std::string(key), std::string(value));
  if (pending_.size() >= commit_every_) Commit();
}

void LmdbWriter::Commit() {
  if (pending_.empty()) return;
  for (;;) {
    MDB_txn* txn = nullptr;
    int rc = mdb_txn_begin(db_->env(), nullptr, 0, &txn);
    DLC_REQUIRE(rc == 0, "LMDB database " << db_->path() << ": " << LmdbMessage(rc));
    for (const auto& record : pending_) {
      MDB_val key = Val(record.first), value = Val(record.second);
      rc = mdb_put(txn, db_->dbi(), &key, &value, 0);
      if (rc != 0) break;
    }
    if (rc == 0) {
      rc = mdb_txn_commit(txn);  // frees txn whatever the outcome
    } else {
      mdb_txn_abort(txn);
    }
    if (rc == MDB_MAP_FULL) {
      db_->GrowMap();  // no transaction is open now, as LMDB requires
      continue;
    }
    DLC_REQUIRE(rc == 0, "LMDB database " << db_->path() << ": cannot write: "
                                          << LmdbMessage(rc));
    break;
  }
  committed_ += pending_.size();
  pending_.clear();
}

}  // namespace dlcaffe
