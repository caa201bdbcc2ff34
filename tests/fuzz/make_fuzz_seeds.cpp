// Writes the binary seed inputs of the fuzz targets into OUT_DIR/<target>/:
// weights and solver states of the nets in fuzz_nets.hpp, Datum records
// (raw, float, PNG, JPEG), an LMDB's records, and small ONNX models. The
// text seeds (prototxt nets) are copies of models/ files; scripts/fuzz.sh
// --seed does both. Committed under tests/fuzz/corpus/.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "dlcaffe/io.hpp"
#include "dlcaffe/net.hpp"
#include "dlcaffe/solver.hpp"
#include "fuzz_nets.hpp"
#include "fuzz_support.hpp"
#include "util/onnx_model_builder.hpp"

namespace {

using namespace dlcaffe;
namespace fs = std::filesystem;

void WriteBytes(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

void WeightSeeds(const std::string& out, Context& ctx) {
  caffe::NetParameter param;
  ReadProtoFromTextString(fuzz::kSmallDeployNet, "small_deploy.prototxt", &param);
  param.mutable_state()->set_phase(caffe::TEST);
  Net net(param, ctx);
  caffe::NetParameter weights;
  net.ToProto(&weights);
  WriteBytes(out + "/caffemodel/small.caffemodel", weights.SerializeAsString());
  // Weights of another net: names that do not match.
  caffe::NetParameter train;
  ReadProtoFromTextString(fuzz::kSmallTrainNet, "small_train.prototxt", &train);
  Net other(train, ctx);
  caffe::NetParameter other_weights;
  other.ToProto(&other_weights);
  WriteBytes(out + "/caffemodel/other_net.caffemodel", other_weights.SerializeAsString());
}

void SolverStateSeeds(const std::string& out, Context& ctx) {
  const auto& types = fuzz::HistorySolverTypes();
  const std::string scratch = fuzz::ScratchDirectory("seeds");
  for (size_t i = 0; i < types.size(); ++i) {
    caffe::SolverParameter param = fuzz::SmallSolver(types[i]);
    param.set_snapshot_prefix(scratch + "/" + types[i]);
    auto solver = SolverRegistry::Create(param, ctx);
    solver->Step(2);
    solver->Snapshot();
    caffe::SolverState state;
    ReadProtoFromBinaryFile(scratch + "/" + types[i] + "_iter_2.solverstate", &state);
    // The weights file would name a path of this machine: history only.
    state.clear_learned_net();
    WriteBytes(out + "/solverstate/" + types[i] + ".bin",
               std::string(1, static_cast<char>(i)) + state.SerializeAsString());
  }
}

std::vector<caffe::Datum> Datums() {
  std::vector<caffe::Datum> datums;
  caffe::Datum raw;
  raw.set_channels(3);
  raw.set_height(5);
  raw.set_width(4);
  std::string pixels;
  for (int i = 0; i < 60; ++i) pixels.push_back(static_cast<char>(i * 37));
  raw.set_data(pixels);
  raw.set_label(3);
  datums.push_back(raw);
  caffe::Datum floats;
  floats.set_channels(1);
  floats.set_height(3);
  floats.set_width(3);
  for (int i = 0; i < 9; ++i) floats.add_float_data(0.5f * i - 2.f);
  floats.set_label(1);
  datums.push_back(floats);
  cv::Mat color(6, 5, CV_8UC3), gray(4, 7, CV_8UC1);
  cv::randu(color, 0, 256);
  cv::randu(gray, 0, 256);
  for (const auto& [image, format] :
       std::vector<std::pair<cv::Mat, std::string>>{{color, ".png"}, {gray, ".jpg"}}) {
    std::vector<uchar> bytes;
    cv::imencode(format, image, bytes);
    caffe::Datum encoded;
    encoded.set_encoded(true);
    encoded.set_data(std::string(bytes.begin(), bytes.end()));
    encoded.set_label(7);
    datums.push_back(encoded);
  }
  return datums;
}

void RecordSeeds(const std::string& out) {
  const std::vector<caffe::Datum> datums = Datums();
  const unsigned char choices[] = {0, 5, 0x8b, 0x13};  // transform variants (see the target)
  std::string records;
  for (size_t i = 0; i < datums.size(); ++i) {
    const std::string record = datums[i].SerializeAsString();
    WriteBytes(out + "/datum_transform/datum_" + std::to_string(i) + ".bin",
               std::string(1, static_cast<char>(choices[i % 4])) + record);
  }
  // LMDB records: equal-sized raw images (a Data layer needs one size).
  caffe::Datum raw = datums[0];
  for (int i = 0; i < 4; ++i) {
    raw.set_label(i);
    const std::string record = raw.SerializeAsString();
    records.push_back(static_cast<char>(record.size() & 0xff));
    records.push_back(static_cast<char>(record.size() >> 8));
    records += record;
  }
  WriteBytes(out + "/lmdb/four_raw_records.bin", records);
}

void OnnxSeeds(const std::string& out) {
  using test::OnnxModelBuilder;
  fs::create_directories(out + "/onnx_import");
  {
    OnnxModelBuilder b;
    b.Input("image", {1, 3, 8, 8});
    b.Initializer("w", {4, 3, 3, 3}, std::vector<float>(108, 0.1f));
    b.Initializer("b", {4}, {0.1f, 0.2f, 0.3f, 0.4f});
    b.Initializer("fc", {5, 16}, std::vector<float>(80, 0.01f));
    auto* conv = b.Node("Conv", {"image", "w", "b"}, {"conv"});
    OnnxModelBuilder::SetInts(conv, "pads", {1, 1, 1, 1});
    b.Node("Relu", {"conv"}, {"relu"});
    auto* pool = b.Node("MaxPool", {"relu"}, {"pool"});
    OnnxModelBuilder::SetInts(pool, "kernel_shape", {3, 3});
    OnnxModelBuilder::SetInts(pool, "strides", {3, 3});
    b.Node("Flatten", {"pool"}, {"flat"});
    OnnxModelBuilder::SetInt(b.Node("Gemm", {"flat", "fc"}, {"logits"}), "transB", 1);
    b.Node("Softmax", {"logits"}, {"prob"});
    b.Output("prob");
    b.Save(out + "/onnx_import", "classifier.onnx");
  }
  {
    // Shape arithmetic folded at import: Shape -> Gather -> Concat -> Reshape.
    OnnxModelBuilder b;
    b.Input("x", {2, 3, 4});
    b.Int64Initializer("zero", {0});
    b.Int64Initializer("minus_one", {-1});
    b.Node("Shape", {"x"}, {"shape"});
    b.Node("Gather", {"shape", "zero"}, {"batch"});
    OnnxModelBuilder::SetInt(b.Node("Concat", {"batch", "minus_one"}, {"target"}), "axis", 0);
    b.Node("Reshape", {"x", "target"}, {"flat"});
    b.Node("Sigmoid", {"flat"}, {"y"});
    b.Output("y");
    b.Save(out + "/onnx_import", "shape_folding.onnx");
  }
  {
    OnnxModelBuilder b;
    b.Input("a", {2, 5});
    b.Initializer("scale", {5}, {1, 2, 3, 4, 5});
    b.Node("Mul", {"a", "scale"}, {"m"});
    b.Node("Add", {"m", "a"}, {"s"});
    auto* reduce = b.Node("ReduceMean", {"s"}, {"r"});
    OnnxModelBuilder::SetInts(reduce, "axes", {1});
    b.Node("Transpose", {"r"}, {"t"});
    b.Output("t");
    b.Save(out + "/onnx_import", "elementwise.onnx");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_fuzz_seeds OUT_DIR\n";
    return 2;
  }
  const std::string out = argv[1];
  Context& ctx = fuzz::FuzzContext();
  WeightSeeds(out, ctx);
  SolverStateSeeds(out, ctx);
  RecordSeeds(out);
  OnnxSeeds(out);
  std::cout << "seeds written under " << out << "\n";
  return 0;
}
