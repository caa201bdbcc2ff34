#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "dlcaffe/data/lmdb_database.hpp"
#include "dlcaffe/error.hpp"
#include "util/test_context.hpp"
#include "util/error_of.hpp"

namespace dlcaffe {
namespace test {

namespace {

std::string Key(int i) {
  char key[16];
  std::snprintf(key, sizeof(key), "%08d", i);
  return key;
}

// Record i's value: binary, with embedded zeros, of a length that varies.
std::string Value(int i) {
  std::string v(static_cast<size_t>(3 + i % 5), '\0');
  for (size_t j = 0; j < v.size(); ++j) v[j] = static_cast<char>((i * 31 + j * 7) % 256);
  return v;
}

// Writes records 0..n-1 (in the order given) and closes the database.
std::string WriteDb(const std::vector<int>& order, size_t commit_every) {
  const std::string path = TempDir() + "/db";
  auto db = LmdbDatabase::Create(path);
  LmdbWriter writer(db, commit_every);
  for (int i : order) writer.Put(Key(i), Value(i));
  writer.Commit();
  EXPECT_EQ(writer.committed(), order.size());
  EXPECT_EQ(writer.pending(), 0u);
  return path;
}

}  // namespace

TEST(LmdbDatabase, RoundTripWrapsAroundWithEpochs) {
  const int n = 13;
  std::vector<int> order;
  for (int i = 0; i < n; ++i) order.push_back(i);
  const std::string path = WriteDb(order, 5);  // commits after 5, 10 and at the end

  auto db = LmdbDatabase::OpenForReading(path);
  EXPECT_EQ(db->NumRecords(), size_t(n));
  LmdbCursor cursor(db);
  for (int step = 0; step < 2 * n + 3; ++step) {
    const int i = step % n;
    ASSERT_EQ(cursor.key(), Key(i)) << "step " << step;
    ASSERT_EQ(cursor.value(), Value(i)) << "step " << step;
    ASSERT_EQ(cursor.epoch(), uint64_t(step / n)) << "step " << step;
    cursor.Next();
  }
  EXPECT_EQ(cursor.epoch(), 2u);
}

TEST(LmdbDatabase, ReadsInKeyOrderWhateverTheWriteOrder) {
  const std::string path = WriteDb({4, 1, 6, 0, 3, 5, 2}, 3);
  LmdbCursor cursor(LmdbDatabase::OpenForReading(path));
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(cursor.key(), Key(i));
    EXPECT_EQ(cursor.value(), Value(i));
    cursor.Next();
  }
  EXPECT_EQ(cursor.key(), Key(0));
  EXPECT_EQ(cursor.epoch(), 1u);
}

TEST(LmdbDatabase, SeekFindsKeysAndNamesMissingOnes) {
  const std::string path = WriteDb({0, 1, 2, 3, 4}, 1000);
  LmdbCursor cursor(LmdbDatabase::OpenForReading(path));
  cursor.Seek(Key(3));
  EXPECT_EQ(cursor.value(), Value(3));
  cursor.Next();
  EXPECT_EQ(cursor.key(), Key(4));
  cursor.Next();
  EXPECT_EQ(cursor.key(), Key(0));
  const std::string error = ErrorOf([&] { cursor.Seek("nope"); });
  EXPECT_NE(error.find("no record with key 'nope'"), std::string::npos) << error;
  EXPECT_NE(error.find(path), std::string::npos) << error;
}

TEST(LmdbDatabase, ReadersOfOnePathShareTheEnvironmentNotTheCursor) {
  const std::string path = WriteDb({0, 1, 2}, 1000);
  auto a = LmdbDatabase::OpenForReading(path);
  auto b = LmdbDatabase::OpenForReading(path + "/");
  EXPECT_EQ(a.get(), b.get());
  LmdbCursor first(a), second(b);
  first.Next();
  EXPECT_EQ(first.key(), Key(1));
  EXPECT_EQ(second.key(), Key(0));
}

TEST(LmdbDatabase, WriterCommitsPendingRecordsWhenDestroyed) {
  const std::string path = TempDir() + "/db";
  {
    LmdbWriter writer(LmdbDatabase::Create(path), 1000);
    writer.Put("a", "1");
    writer.Put("b", "2");
    EXPECT_EQ(writer.pending(), 2u);
  }
  LmdbCursor cursor(LmdbDatabase::OpenForReading(path));
  EXPECT_EQ(cursor.key(), "a");
  EXPECT_EQ(cursor.value(), "1");
  EXPECT_EQ(cursor.database().NumRecords(), 2u);
}

TEST(LmdbDatabase, MapGrowsWhenACommitNeedsMoreRoom) {
  const std::string path = TempDir() + "/db";
  const std::string big(8192, 'x');
  {
    auto db = LmdbDatabase::Create(path, 1 << 16);  // 64 KiB: far too small
    LmdbWriter writer(db, 50);
    for (int i = 0; i < 200; ++i) writer.Put(Key(i), big + Key(i));
    writer.Commit();
  }
  LmdbCursor cursor(LmdbDatabase::OpenForReading(path));
  EXPECT_EQ(cursor.database().NumRecords(), 200u);
  cursor.Seek(Key(199));
  EXPECT_EQ(cursor.value(), big + Key(199));
}

TEST(LmdbDatabase, ErrorsNameThePath) {
  const std::string dir = TempDir();
  const std::string missing = dir + "/missing_db";
  std::string error = ErrorOf([&] { LmdbDatabase::OpenForReading(missing); });
  EXPECT_NE(error.find(missing), std::string::npos) << error;
  EXPECT_NE(error.find("does not exist"), std::string::npos) << error;

  // A directory whose data.mdb is not an LMDB file.
  const std::string corrupt = dir + "/corrupt_db";
  ASSERT_TRUE(std::filesystem::create_directories(corrupt));
  {
    std::ofstream garbage(corrupt + "/data.mdb", std::ios::binary);
    for (int i = 0; i < 4096; ++i) garbage.put(static_cast<char>(i * 13));
  }
  error = ErrorOf([&] { LmdbCursor(LmdbDatabase::OpenForReading(corrupt)); });
  EXPECT_NE(error.find(corrupt), std::string::npos) << error;

  // A plain file is not a database.
  const std::string file = dir + "/plain_file";
  std::ofstream(file) << "hello";
  error = ErrorOf([&] { LmdbDatabase::OpenForReading(file); });
  EXPECT_NE(error.find(file), std::string::npos) << error;
  EXPECT_NE(error.find("not a directory"), std::string::npos) << error;

  // An empty database cannot feed a cursor.
  const std::string empty = dir + "/empty_db";
  LmdbDatabase::Create(empty);
  error = ErrorOf([&] { LmdbCursor(LmdbDatabase::OpenForReading(empty)); });
  EXPECT_NE(error.find(empty), std::string::npos) << error;
  EXPECT_NE(error.find("is empty"), std::string::npos) << error;

  // Create never overwrites.
  error = ErrorOf([&] { LmdbDatabase::Create(empty); });
  EXPECT_NE(error.find(empty), std::string::npos) << error;
  EXPECT_NE(error.find("already exists"), std::string::npos) << error;
}

}  // namespace test
}  // namespace dlcaffe
