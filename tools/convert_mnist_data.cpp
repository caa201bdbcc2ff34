// convert_mnist_data: Caffe's tool that turns the MNIST IDX files into an
// LMDB of caffe::Datum records (1 × rows × cols raw bytes + label, keys
// "%08d", committed every 1000 records).
//
//   convert_mnist_data [--backend=lmdb] input_image_file input_label_file output_db_path
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "caffe.pb.h"
#include "dlcaffe/data/lmdb_database.hpp"
#include "dlcaffe/error.hpp"
#include "dlcaffe/io.hpp"

DEFINE_string(backend, "lmdb", "The backend for storing the result (lmdb)");

namespace {

constexpr uint32_t kImageMagic = 2051;  // IDX: unsigned bytes, 3 dimensions
constexpr uint32_t kLabelMagic = 2049;  // IDX: unsigned bytes, 1 dimension

// IDX integers are big-endian.
uint32_t ReadBigEndian(std::ifstream& in, const std::string& path, const char* what) {
  unsigned char b[4];
  in.read(reinterpret_cast<char*>(b), 4);
  DLC_REQUIRE(in.gcount() == 4, path << ": file ends inside its header (reading " << what
                                     << "); not an MNIST IDX file?");
  return (uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) | (uint32_t(b[2]) << 8) | b[3];
}

std::ifstream OpenInput(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DLC_REQUIRE(in, "cannot open " << path);
  return in;
}

void CheckMagic(uint32_t magic, uint32_t expected, const std::string& path, const char* kind) {
  DLC_REQUIRE(magic == expected, path << ": wrong magic number " << magic << " for an MNIST "
                                      << kind << " file (expected " << expected << ")");
}

void Convert(const std::string& image_path, const std::string& label_path,
             const std::string& db_path) {
  std::ifstream images = OpenInput(image_path);
  std::ifstream labels = OpenInput(label_path);
  CheckMagic(ReadBigEndian(images, image_path, "magic number"), kImageMagic, image_path,
             "image");
  CheckMagic(ReadBigEndian(labels, label_path, "magic number"), kLabelMagic, label_path,
             "label");
  const uint32_t num_items = ReadBigEndian(images, image_path, "item count");
  const uint32_t num_labels = ReadBigEndian(labels, label_path, "item count");
  DLC_REQUIRE(num_items == num_labels, image_path << " holds " << num_items << " images but "
                                                  << label_path << " holds " << num_labels
                                                  << " labels");
  const uint32_t rows = ReadBigEndian(images, image_path, "rows");
  const uint32_t cols = ReadBigEndian(images, image_path, "cols");
  DLC_REQUIRE(rows > 0 && cols > 0 && rows <= 65536 && cols <= 65536,
              image_path << ": implausible image size " << rows << " x " << cols);

  auto db = dlcaffe::LmdbDatabase::Create(db_path);
  try {
    dlcaffe::LmdbWriter writer(db, 1000);
    LOG(INFO) << "A total of " << num_items << " items.";
    LOG(INFO) << "Rows: " << rows << " Cols: " << cols;
    caffe::Datum datum;
    datum.set_channels(1);
    datum.set_height(static_cast<int>(rows));
    datum.set_width(static_cast<int>(cols));
    std::string pixels(size_t(rows) * cols, '\0');
    std::string value;
    char key[16];
    for (uint32_t item = 0; item < num_items; ++item) {
      images.read(&pixels[0], static_cast<std::streamsize>(pixels.size()));
      DLC_REQUIRE(images.gcount() == static_cast<std::streamsize>(pixels.size()),
                  image_path << ": file ends at image " << item << " of " << num_items
                             << " (truncated?)");
      char label = 0;
      labels.read(&label, 1);
      DLC_REQUIRE(labels.gcount() == 1, label_path << ": file ends at label " << item << " of "
                                                   << num_labels << " (truncated?)");
      datum.set_data(pixels);
      datum.set_label(static_cast<unsigned char>(label));
      std::snprintf(key, sizeof(key), "%08u", item);
      datum.SerializeToString(&value);
      writer.Put(key, value);
      if ((item + 1) % 1000 == 0) LOG(INFO) << "Processed " << item + 1 << " files.";
    }
    writer.Commit();
    if (num_items % 1000 != 0) LOG(INFO) << "Processed " << num_items << " files.";
  } catch (...) {
    // Leave no half-written dataset behind (we created the directory).
    db.reset();
    std::error_code ignored;
    std::filesystem::remove_all(db_path, ignored);
    throw;
  }
}

}  // namespace

int main(int argc, char** argv) {
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = 1;
  gflags::SetUsageMessage(
      "converts the MNIST data set to the LMDB format dlcaffe and Caffe read.\n"
      "Usage:\n"
      "    convert_mnist_data [FLAGS] input_image_file input_label_file output_db_path\n"
      "The MNIST files (gunzipped) come from data/mnist/get_mnist.sh.");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (argc != 4) {
    gflags::ShowUsageWithFlagsRestrict(argv[0], "convert_mnist_data");
    return 1;
  }
  try {
    DLC_REQUIRE(FLAGS_backend == "lmdb", "--backend=" << FLAGS_backend
                                                      << " is not supported; use lmdb");
    Convert(argv[1], argv[2], argv[3]);
  } catch (const dlcaffe::Error& e) {
    std::cerr << "convert_mnist_data: error: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
