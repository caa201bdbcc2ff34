// A dataset as the Data layer reads it: the input is split into records
// (each a 2-byte length and that many bytes), written as an LMDB, and a Net
// with a Data layer on it runs two forward passes (prefetch, decode,
// transform, batches that wrap around). What is fuzzed is the records, which
// is what a user's converter or a stranger's dataset controls; the LMDB file
// format itself is liblmdb's, which trusts its pages (it has no checksums).
#include <string>
#include <vector>

#include "dlcaffe/data/lmdb_database.hpp"
#include "dlcaffe/io.hpp"
#include "dlcaffe/net.hpp"
#include "fuzz_support.hpp"

#include <lmdb.h>

namespace {

std::vector<std::string> SplitRecords(const uint8_t* data, size_t size) {
  std::vector<std::string> records;
  size_t pos = 0;
  while (pos + 2 <= size && records.size() < 64) {
    const size_t n = std::min<size_t>(data[pos] | (data[pos + 1] << 8), size - pos - 2);
    records.emplace_back(reinterpret_cast<const char*>(data + pos + 2), n);
    pos += 2 + n;
  }
  return records;
}

void WriteLmdb(const std::string& dir, const std::vector<std::string>& records) {
  auto db = dlcaffe::LmdbDatabase::Create(dir, size_t(1) << 24);
  MDB_txn* txn = nullptr;
  mdb_txn_begin(db->env(), nullptr, 0, &txn);
  for (size_t i = 0; i < records.size(); ++i) {
    char key[24];
    std::snprintf(key, sizeof(key), "%08zu", i);
    MDB_val k{8, key}, v{records[i].size(), const_cast<char*>(records[i].data())};
    mdb_put(txn, db->dbi(), &k, &v, 0);
  }
  mdb_txn_commit(txn);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dlcaffe;
  Context& ctx = fuzz::FuzzContext();
  const std::vector<std::string> records = SplitRecords(data, size);
  const std::string dir = fuzz::ScratchDirectory("lmdb") + "/db";  // made by Create
  WriteLmdb(dir, records);
  fuzz::ExpectCleanRejection([&] {
    caffe::NetParameter param;
    ReadProtoFromTextString(R"(name: "reader"
layer { name: "data" type: "Data" top: "data" top: "label"
  transform_param { crop_size: 2 scale: 0.5 }
  data_param { source: "SOURCE" batch_size: 3 backend: LMDB } }
)", "reader.prototxt", &param);
    param.mutable_layer(0)->mutable_data_param()->set_source(dir);
    param.mutable_state()->set_phase(caffe::TEST);
    Net net(param, ctx);
    net.Forward();
    net.Forward();
  });
  return 0;
}
