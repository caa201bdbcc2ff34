// extract_features: Caffe's tool that runs a trained net in the TEST phase
// over its own data layer and stores blobs' values, one caffe::Datum of
// float_data per image (channels × height × width of the blob), keyed "%010d",
// in one LMDB per blob.
//
//   extract_features pretrained_net_param feature_extraction_proto_file
//       extract_feature_blob_name1[,name2,...] save_feature_dataset_name1[,name2,...]
//       num_mini_batches db_type [DEVICE]
//
// DEVICE is Caffe's "CPU" or "GPU [DEVICE_ID]" (the first OpenCL CPU, or the
// DEVICE_ID-th OpenCL GPU) or a dlcaffe device name (ocl:P:D or a flat
// index, see `dlcaffe device_query`); without it, dlcaffe's default device.
// The net may be an .onnx model, and the weights may come from one (copied
// by layer name).
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "caffe.pb.h"
#include "tool_main.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/error.hpp"
#include "dlcaffe/net.hpp"
#include "dlcaffe/onnx_import.hpp"
#include "new_lmdb_dataset.hpp"

namespace dlcaffe {
namespace {

constexpr size_t kRequiredArgs = 6;

std::vector<std::string> SplitNames(const std::string& list, const char* what) {
  std::vector<std::string> names;
  std::stringstream in(list);
  std::string name;
  while (std::getline(in, name, ',')) {
    DLC_REQUIRE(!name.empty(), what << " '" << list << "' has an empty name");
    names.push_back(name);
  }
  DLC_REQUIRE(!names.empty(), "no " << what << " given");
  return names;
}

// An integer argument of at least `min`, whole.
int ParseCount(const std::string& text, const char* what, long min) {
  errno = 0;
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  DLC_REQUIRE(end != text.c_str() && *end == '\0' && errno == 0 && value >= min &&
                  value <= INT_MAX,
              what << " must be an integer of at least " << min << ", got '" << text << "'");
  return static_cast<int>(value);
}

std::string DeviceList(const std::vector<DeviceInfo>& devices) {
  std::ostringstream list;
  for (const auto& d : devices)
    list << "\n  " << d.flat_index << ": " << d.Describe() << (d.is_gpu() ? " [GPU]" : "")
         << (d.is_cpu() ? " [CPU]" : "");
  return list.str();
}

// The `index`-th OpenCL device of Caffe's kind "CPU" or "GPU".
std::unique_ptr<Context> DeviceOfKind(const std::string& kind, int index) {
  const std::vector<DeviceInfo> devices = ListDevices();
  int seen = 0;
  for (const auto& d : devices) {
    if ((kind == "GPU" ? d.is_gpu() : d.is_cpu()) && seen++ == index)
      return std::make_unique<Context>(d);
  }
  DLC_FAIL("no OpenCL " << kind << " device " << index << " (" << seen << " " << kind
                        << " device(s) found); the OpenCL devices are:" << DeviceList(devices)
                        << "\n(a device may also be named ocl:P:D or by its flat index)");
}

// Caffe's [CPU | GPU [DEVICE_ID]], or dlcaffe's ocl:P:D or flat index.
std::unique_ptr<Context> ContextFromArgs(const std::vector<std::string>& device_args) {
  if (device_args.empty()) return Context::Create();
  const std::string& device = device_args[0];
  if (device == "GPU") {
    const int id = device_args.size() > 1 ? ParseCount(device_args[1], "DEVICE_ID", 0) : 0;
    return DeviceOfKind("GPU", id);
  }
  DLC_REQUIRE(device_args.size() == 1,
              "unexpected argument '" << device_args[1] << "' after DEVICE " << device
                                      << " (only GPU takes a DEVICE_ID)");
  if (device == "CPU") return DeviceOfKind("CPU", 0);
  return Context::Create(device);
}

// A .caffemodel (or a text NetParameter with weights), or an .onnx model
// whose layers are matched by name.
void CopyWeights(const std::string& path, Net* net) {
  if (IsOnnxPath(path)) {
    net->CopyTrainedLayersFrom(ReadNetOrOnnx(path, net->context().options()));
  } else {
    net->CopyTrainedLayersFrom(path);
  }
}

std::string BlobNames(const Net& net) {
  std::string names;
  for (const auto& name : net.blob_names()) names += (names.empty() ? "" : ", ") + name;
  return names;
}

// Caffe stores the blob's legacy channels × height × width; a blob of more
// than 4 axes has no such shape and is stored flat, dim × 1 × 1.
void SetFeatureShape(const Blob& blob, caffe::Datum* datum) {
  if (blob.num_axes() <= 4) {
    datum->set_channels(blob.channels());
    datum->set_height(blob.height());
    datum->set_width(blob.width());
  } else {
    datum->set_channels(blob.count(1));
    datum->set_height(1);
    datum->set_width(1);
  }
}

void ExtractFeatures(const std::vector<std::string>& args) {
  const std::string& weights_path = args[0];
  const std::string& net_path = args[1];
  const std::vector<std::string> blob_names =
      SplitNames(args[2], "extract_feature_blob_name list");
  const std::vector<std::string> dataset_names =
      SplitNames(args[3], "save_feature_dataset_name list");
  const int num_mini_batches = ParseCount(args[4], "num_mini_batches", 1);
  RequireLmdbBackend(args[5], "db_type");
  DLC_REQUIRE(blob_names.size() == dataset_names.size(),
              blob_names.size() << " feature blob name(s) (" << args[2] << ") but "
                                << dataset_names.size() << " dataset name(s) (" << args[3]
                                << "): the number of blob names and dataset names must be equal");
  DLC_REQUIRE(std::set<std::string>(dataset_names.begin(), dataset_names.end()).size() ==
                  dataset_names.size(),
              "a dataset name appears twice in '" << args[3] << "'; give one per blob");

  auto ctx = ContextFromArgs(std::vector<std::string>(args.begin() + kRequiredArgs, args.end()));
  LOG(INFO) << "Using OpenCL device " << ctx->info().Describe();
  Net net(net_path, caffe::TEST, *ctx);
  CopyWeights(weights_path, &net);
  for (const auto& name : blob_names) {
    DLC_REQUIRE(net.has_blob(name), "Unknown feature blob name '"
                                        << name << "' in the network " << net_path
                                        << "; its blobs: " << BlobNames(net));
  }
  // Caffe would extract features of the zeros an Input layer holds.
  DLC_REQUIRE(net.input_blobs().empty(),
              net_path << ": the net has input blobs (Input layers) that nothing feeds here; "
                          "extract_features needs a net that reads its own data, such as a "
                          "Data layer on an LMDB");

  std::vector<std::unique_ptr<NewLmdbDataset>> datasets;
  for (const auto& name : dataset_names) {
    LOG(INFO) << "Opening dataset " << name;
    datasets.push_back(std::make_unique<NewLmdbDataset>(name));
  }
  LOG(INFO) << "Extracting Features";
  caffe::Datum datum;
  std::string value;
  char key[16];
  for (int batch = 0; batch < num_mini_batches; ++batch) {
    net.ForwardNoLoss();
    for (size_t i = 0; i < blob_names.size(); ++i) {
      const Blob& blob = *net.blob_by_name(blob_names[i]);
      const std::vector<float> values = blob.ReadData();
      const int num = blob.num_axes() > 0 ? blob.shape(0) : 1;
      const size_t dim = num > 0 ? values.size() / num : 0;
      NewLmdbDataset& dataset = *datasets[i];
      for (int n = 0; n < num; ++n) {
        datum.Clear();
        SetFeatureShape(blob, &datum);
        datum.mutable_float_data()->Add(values.begin() + n * dim, values.begin() + (n + 1) * dim);
        std::snprintf(key, sizeof(key), "%010d", static_cast<int>(dataset.size()));
        datum.SerializeToString(&value);
        dataset.Put(key, value);
        if (dataset.size() % NewLmdbDataset::kCommitEvery == 0)
          LOG(INFO) << "Extracted features of " << dataset.size()
                    << " query images for feature blob " << blob_names[i];
      }
    }
  }
  for (size_t i = 0; i < blob_names.size(); ++i) {
    datasets[i]->Finish();
    LOG(INFO) << "Extracted features of " << datasets[i]->size()
              << " query images for feature blob " << blob_names[i];
  }
  LOG(INFO) << "Successfully extracted the features!";
}

}  // namespace
}  // namespace dlcaffe

int main(int argc, char** argv) {
  return dlcaffe::ToolMain(
      argc, argv, "extract_features",
      "This program takes in a trained network and an input data layer, and then extracts "
      "features of the input data produced by the net.\n"
      "Usage: extract_features  pretrained_net_param  feature_extraction_proto_file  "
      "extract_feature_blob_name1[,name2,...]  save_feature_dataset_name1[,name2,...]  "
      "num_mini_batches  db_type  [CPU | GPU [DEVICE_ID] | ocl:P:D | flat index]\n"
      "Note: you can extract multiple features in one pass by specifying multiple feature "
      "blob names and dataset names separated by ','. The names cannot contain white space "
      "characters and the number of blobs and datasets must be equal.\n"
      "db_type must be lmdb.",
      dlcaffe::kRequiredArgs, dlcaffe::kRequiredArgs + 2,
      [](const std::vector<std::string>& args) { dlcaffe::ExtractFeatures(args); });
}
