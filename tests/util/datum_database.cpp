#include "util/datum_database.hpp"

#include <cstdio>

#include "dlcaffe/data/lmdb_database.hpp"

namespace dlcaffe {
namespace test {

caffe::Datum RawDatum(int channels, int height, int width, int label,
                      const std::function<int(int j)>& pixel) {
  caffe::Datum datum;
  datum.set_channels(channels);
  datum.set_height(height);
  datum.set_width(width);
  datum.set_label(label);
  std::string pixels(static_cast<size_t>(channels) * height * width, '\0');
  for (size_t j = 0; j < pixels.size(); ++j)
    pixels[j] = static_cast<char>(pixel(static_cast<int>(j)) & 255);
  datum.set_data(pixels);
  return datum;
}

void WriteDatumDatabase(const std::string& path, int count,
                        const std::function<caffe::Datum(int i)>& make) {
  WriteRecordDatabase(path, count, [&](int i) { return make(i).SerializeAsString(); });
}

void WriteRecordDatabase(const std::string& path, int count,
                         const std::function<std::string(int i)>& make) {
  LmdbWriter writer(LmdbDatabase::Create(path), 64);
  for (int i = 0; i < count; ++i) {
    char key[16];
    std::snprintf(key, sizeof(key), "%08d", i);
    writer.Put(key, make(i));
  }
  writer.Commit();
}

}  // namespace test
}  // namespace dlcaffe
