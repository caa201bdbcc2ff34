// compute_image_mean: Caffe's tool that averages the images of an LMDB of
// caffe::Datum records (raw or encoded, all of one size) into a mean image,
// written as a BlobProto (1 × C × H × W) .binaryproto for a data layer's
// transform_param { mean_file }, and logs each channel's mean value.
//
//   compute_image_mean [--backend=lmdb] INPUT_DB [OUTPUT_FILE]
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <string>
#include <vector>

#include "caffe.pb.h"
#include "tool_main.hpp"
#include "dlcaffe/data/datum.hpp"
#include "dlcaffe/data/lmdb_database.hpp"
#include "dlcaffe/error.hpp"
#include "dlcaffe/io.hpp"

DEFINE_string(backend, "lmdb", "The backend containing the images (lmdb)");

namespace dlcaffe {
namespace {

constexpr size_t kLogEvery = 10000;  // Caffe's "Processed N files." interval

std::string Shape(const DatumImage& image) {
  return std::to_string(image.channels) + " x " + std::to_string(image.height) + " x " +
         std::to_string(image.width);
}

// Adds the image's pixels to `sum` (sized on the first image).
void Accumulate(const DatumImage& image, std::vector<double>* sum) {
  for (size_t i = 0; i < sum->size(); ++i)
    (*sum)[i] += image.is_float ? image.floats[i] : image.bytes[i];
}

void ComputeMean(const std::string& db_path, const std::string& output_path) {
  RequireLmdbBackend(FLAGS_backend, "--backend");
  auto db = LmdbDatabase::OpenForReading(db_path);
  const size_t records = db->NumRecords();
  DLC_REQUIRE(records > 0, "LMDB database " << db_path << " is empty: no images to average");
  LmdbCursor cursor(db);

  caffe::Datum datum;
  DatumImage image, first;
  // Caffe sums in float; a double sum keeps large databases exact.
  std::vector<double> sum;
  LOG(INFO) << "Starting iteration";
  for (size_t count = 1; count <= records; ++count, cursor.Next()) {
    const std::string where =
        "record '" + std::string(cursor.key()) + "' of " + db_path;
    ParseDatum(cursor.value(), where, &datum);
    if (count == 1 && datum.encoded()) LOG(INFO) << "Decoding Datum";
    DecodeDatum(datum, DatumColor::kNative, where, &image);
    if (count == 1) {
      first = image;
      sum.assign(image.count(), 0.0);
    }
    DLC_REQUIRE(image.channels == first.channels && image.height == first.height &&
                    image.width == first.width,
                where << " is " << Shape(image) << " (channels x height x width) but the "
                      << "first record is " << Shape(first)
                      << "; a mean image needs images of one size "
                         "(convert_imageset --resize_width/--resize_height)");
    Accumulate(image, &sum);
    if (count % kLogEvery == 0) LOG(INFO) << "Processed " << count << " files.";
  }
  if (records % kLogEvery != 0) LOG(INFO) << "Processed " << records << " files.";

  caffe::BlobProto mean;  // Caffe's legacy 4-D fields, as its tool writes
  mean.set_num(1);
  mean.set_channels(first.channels);
  mean.set_height(first.height);
  mean.set_width(first.width);
  for (double s : sum) mean.add_data(static_cast<float>(s / records));
  if (!output_path.empty()) {
    LOG(INFO) << "Write to " << output_path;
    WriteProtoToBinaryFile(mean, output_path);
  }
  const int channels = first.channels;
  const size_t plane = size_t(first.height) * first.width;
  LOG(INFO) << "Number of channels: " << channels;
  for (int c = 0; c < channels; ++c) {
    double channel_sum = 0;
    for (size_t i = 0; i < plane; ++i) channel_sum += mean.data(static_cast<int>(c * plane + i));
    LOG(INFO) << "mean_value channel [" << c << "]: " << channel_sum / plane;
  }
}

}  // namespace
}  // namespace dlcaffe

int main(int argc, char** argv) {
  return dlcaffe::ToolMain(
      argc, argv, "compute_image_mean",
      "Compute the mean_image of a set of images given by an lmdb\n"
      "Usage:\n"
      "    compute_image_mean [FLAGS] INPUT_DB [OUTPUT_FILE]\n",
      1, 2, [](const std::vector<std::string>& args) {
        dlcaffe::ComputeMean(args[0], args.size() > 1 ? args[1] : "");
      });
}
