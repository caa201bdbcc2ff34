// HDF5Output (Caffe "HDF5Output"): writes its two bottoms to
// hdf5_output_param.file_name as the float datasets "data" (bottom 0) and
// "label" (bottom 1). As Caffe, setup creates the file (empty, replacing one
// that was there) and every Forward writes the current batch; Caffe wrote
// into the open file (and failed on the second batch, the datasets existing
// already), here each Forward replaces the file with the latest batch. Each
// write builds the file in memory and renames it into place, so the file on
// disk is always whole. Datasets take Caffe's shape: the bottoms' legacy 4-D
// shape (num, channels, height, width) for up to 4 axes, their own beyond.
// No tops; nothing to back-propagate.
#include <glog/logging.h>

#include "core/hdf5_file.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class HDF5OutputLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "HDF5Output"; }
  int ExactNumBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 0; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    file_name_ = param_.hdf5_output_param().file_name();
    DLC_REQUIRE(!file_name_.empty(), Where() << "hdf5_output_param.file_name is not set");
    try {
      Hdf5MemoryFile().Save(file_name_);
    } catch (const Error& e) {
      DLC_FAIL(Where() << "cannot create the output file: " << e.what());
    }
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    DLC_REQUIRE(Items(*bottom[0]) == Items(*bottom[1]),
                Where() << "the bottoms hold different numbers of items: "
                        << bottom[0]->shape_string() << " and " << bottom[1]->shape_string());
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    try {
      Hdf5MemoryFile file;
      Write(&file, "data", *bottom[0]);
      Write(&file, "label", *bottom[1]);
      file.Save(file_name_);
    } catch (const Error& e) {
      DLC_FAIL(Where() << "cannot write the batch to " << file_name_ << ": " << e.what());
    }
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {}

 private:
  static int Items(const Blob& blob) { return blob.num_axes() ? blob.shape(0) : 1; }

  static void Write(Hdf5MemoryFile* file, const char* name, const Blob& blob) {
    std::vector<uint64_t> dims;
    if (blob.num_axes() <= 4)
      dims = {uint64_t(blob.num()), uint64_t(blob.channels()), uint64_t(blob.height()),
              uint64_t(blob.width())};
    else
      dims.assign(blob.shape().begin(), blob.shape().end());
    const std::vector<float> values = blob.ReadData();
    file->WriteFloats(file->root(), name, dims, values.data());
  }

  std::string file_name_;
};

REGISTER_LAYER_CLASS(HDF5Output);

}  // namespace dlcaffe
