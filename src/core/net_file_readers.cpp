#include "dlcaffe/net_file_readers.hpp"

#include <vector>

#include "dlcaffe/caffe_legacy_upgrade.hpp"
#include "dlcaffe/io.hpp"

namespace dlcaffe {

namespace {

std::vector<NetFileReader>& Readers() {
  static std::vector<NetFileReader> readers;
  return readers;
}

}  // namespace

void RegisterNetFileReader(NetFileReader reader) { Readers().push_back(std::move(reader)); }

caffe::NetParameter ReadCaffeNet(const std::string& path) {
  caffe::NetParameter param;
  ReadProtoFromTextFile(path, &param);
  UpgradeNetAsNeeded(path, &param);
  return param;
}

NetFile ReadNetFile(const std::string& path, caffe::Phase phase, const RunOptions& options) {
  NetFile file;
  for (const NetFileReader& reader : Readers())
    if (reader(path, phase, options, &file)) return file;
  file.param = ReadCaffeNet(path);
  return file;
}

}  // namespace dlcaffe
