// A catalogue of bad inputs a user could plausibly produce (issue 13), one
// test each: corrupt weights, solver states and mean files, models from
// another net, broken prototxt, bad datasets, bad flags. Each must end in one
// "<tool>: error:" message that names what is wrong (file and line, layer,
// blob, field, path), a non-zero exit, no abort trace and no signal.
//
// The inputs are made here, in one temporary folder: tiny nets (an
// InnerProduct classifier fed by DummyData), one short training run that
// writes a .caffemodel and .solverstate, small LMDB datasets of Datum
// records, a mean file, and damaged copies of these.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <iostream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "caffe.pb.h"
#include "dlcaffe/data/datum.hpp"
#include "dlcaffe/data/lmdb_database.hpp"
#include "dlcaffe/io.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

// ---------------------------------------------------------------- inputs

const std::string& Dir() {
  static const std::string dir = TempDir();
  return dir;
}

std::string Write(const std::string& name, const std::string& bytes) {
  const std::string path = Dir() + "/" + name;
  WriteFileAtomically(path, bytes);
  return path;
}

// A classifier of 2 x 3 inputs into `classes` classes, the layer named `ip`.
std::string TinyNet(int classes = 4, const std::string& ip = "ip1", float label = 0) {
  std::ostringstream s;
  s << "name: 'tiny'\n"
       "layer { name: 'data' type: 'DummyData' top: 'data' top: 'label'\n"
       "  dummy_data_param { shape { dim: 2 dim: 3 } shape { dim: 2 }\n"
       "    data_filler { type: 'uniform' } data_filler { type: 'constant' value: "
    << label
    << " } } }\n"
       "layer { name: '"
    << ip << "' type: 'InnerProduct' bottom: 'data' top: 'ip'\n"
    << "  inner_product_param { num_output: " << classes
    << " weight_filler { type: 'xavier' } } }\n"
       "layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' top: 'loss' }\n";
  return s.str();
}

// A solver for `net`; `extra` lines replace the defaults of their fields.
std::string Solver(const std::string& net, const std::string& extra = "",
                   const std::string& prefix = "") {
  std::string text = "net: '" + net + "'\n";
  for (const char* line : {"base_lr: 0.01", "momentum: 0.9", "lr_policy: 'fixed'", "max_iter: 2",
                           "display: 1"}) {
    const std::string field = std::string(line).substr(0, std::string(line).find(':') + 1);
    if (extra.find(field) == std::string::npos) text += std::string(line) + "\n";
  }
  return text + "snapshot_prefix: '" + (prefix.empty() ? Dir() + "/unused" : prefix) + "'\n" +
         extra;
}

// The shared inputs, made once: tiny.prototxt and its trained snapshot.
struct Inputs {
  std::string net, wide_net, renamed_net, solver, wide_solver, adam_solver;
  std::string caffemodel, solverstate, wide_caffemodel;
};

const Inputs& Shared() {
  static const Inputs inputs = [] {
    Inputs in;
    in.net = Write("tiny.prototxt", TinyNet());
    in.wide_net = Write("tiny_wide.prototxt", TinyNet(5));
    in.renamed_net = Write("tiny_renamed.prototxt", TinyNet(4, "fc"));
    in.solver = Write("tiny_solver.prototxt", Solver(in.net, "", Dir() + "/tiny"));
    in.wide_solver =
        Write("wide_solver.prototxt", Solver(in.wide_net, "max_iter: 0\n", Dir() + "/wide"));
    in.adam_solver = Write("adam_solver.prototxt", Solver(in.net, "type: 'Adam'\n"));
    ToolResult r = RunDlcaffe("train --solver=" + in.solver);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    in.caffemodel = Dir() + "/tiny_iter_2.caffemodel";
    in.solverstate = Dir() + "/tiny_iter_2.solverstate";
    // The wide net, untrained: a snapshot at iteration 0.
    r = RunDlcaffe("train --solver=" + in.wide_solver);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    in.wide_caffemodel = Dir() + "/wide_iter_0.caffemodel";
    return in;
  }();
  return inputs;
}

// The first half of a file.
std::string Truncated(const std::string& path, const std::string& name) {
  const std::string bytes = ReadFileBytes(path);
  return Write(name, bytes.substr(0, bytes.size() / 2));
}

// A copy of a binary proto with one bit flipped in its first tag: wire type 2
// (or 0) becomes 6 (or 4), which no protobuf parser accepts.
std::string BitFlipped(const std::string& path, const std::string& name) {
  std::string bytes = ReadFileBytes(path);
  bytes[0] = static_cast<char>(bytes[0] ^ 0x04);
  return Write(name, bytes);
}

std::string DatumBytes(int channels, int height, int width, int label) {
  caffe::Datum datum;
  datum.set_channels(channels);
  datum.set_height(height);
  datum.set_width(width);
  datum.set_label(label);
  datum.set_data(std::string(size_t(channels) * height * width, '\x40'));
  return datum.SerializeAsString();
}

std::string EncodedGarbageDatum(int label) {
  caffe::Datum datum;
  datum.set_encoded(true);
  datum.set_label(label);
  datum.set_data("these bytes are not a PNG or JPEG image");
  return datum.SerializeAsString();
}

// A JPEG (4 x 4 gray) whose frame header is rewritten to claim 60000 x 60000
// pixels: a decoder would allocate 3.6 GB for it before finding the data short.
std::string EncodedHugeHeaderDatum(int label) {
  DatumImage image;
  image.channels = 1;
  image.height = 4;
  image.width = 4;
  image.bytes.assign(16, 0x40);
  std::string jpeg = EncodeImage(image, "jpg");
  const size_t sof = jpeg.find("\xFF\xC0");
  EXPECT_NE(sof, std::string::npos) << "no baseline frame header in the encoded JPEG";
  if (sof == std::string::npos) return "";
  for (size_t at : {sof + 5, sof + 7}) {  // height, then width, big-endian
    jpeg[at] = static_cast<char>(60000 >> 8);
    jpeg[at + 1] = static_cast<char>(60000 & 0xFF);
  }
  caffe::Datum datum;
  datum.set_encoded(true);
  datum.set_label(label);
  datum.set_data(jpeg);
  return datum.SerializeAsString();
}

std::string Lmdb(const std::string& name,
                 const std::vector<std::pair<std::string, std::string>>& records) {
  const std::string path = Dir() + "/" + name;
  auto db = LmdbDatabase::Create(path, size_t(1) << 20);
  LmdbWriter writer(db);
  for (const auto& r : records) writer.Put(r.first, r.second);
  writer.Commit();
  return path;
}

// A net reading `source` with a Data layer named 'data'.
std::string DataNet(const std::string& name, const std::string& source,
                    const std::string& transform = "", int batch = 2) {
  return Write(name, "name: 'reader'\n"
                     "layer { name: 'data' type: 'Data' top: 'data' top: 'label'\n"
                     "  data_param { source: '" +
                         source + "' batch_size: " + std::to_string(batch) +
                         " backend: LMDB }\n  transform_param { " + transform +
                         " } }\n"
                         "layer { name: 'ip1' type: 'InnerProduct' bottom: 'data' top: 'ip'\n"
                         "  inner_product_param { num_output: 2 } }\n"
                         "layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' "
                         "bottom: 'label' top: 'loss' }\n");
}

// A one-layer-and-more net on an Input of 1 x 4 whose extra layers are given.
std::string InputNet(const std::string& name, const std::string& layers) {
  return Write(name, "name: 'broken'\n"
                     "layer { name: 'in' type: 'Input' top: 'data'\n"
                     "  input_param { shape { dim: 1 dim: 4 } } }\n" +
                         layers);
}

// 1 x 4 x 4 uint8 images with labels 0 and 1.
std::string GoodLmdb() {
  static const std::string path =
      Lmdb("good_lmdb", {{"00000000", DatumBytes(1, 4, 4, 0)}, {"00000001", DatumBytes(1, 4, 4, 1)},
                         {"00000002", DatumBytes(1, 4, 4, 0)}});
  return path;
}

// A mean image for GoodLmdb.
std::string MeanFile() {
  static const std::string path = [] {
    caffe::BlobProto mean;
    mean.set_num(1);
    mean.set_channels(1);
    mean.set_height(4);
    mean.set_width(4);
    for (int i = 0; i < 16; ++i) mean.add_data(10.f + i);
    const std::string p = Dir() + "/mean.binaryproto";
    WriteProtoToBinaryFile(mean, p);
    return p;
  }();
  return path;
}

// ---------------------------------------------------------------- cases

// What a case runs and what its message must contain.
struct Command {
  std::string tool;  // "dlcaffe" or another tool in build/tools
  std::string args;
  std::vector<std::string> mentions;
  std::string env = "";
};

struct Case {
  std::string name;
  std::function<Command()> make;  // writes its inputs, returns the command
  // Set where the case fails today in code owned elsewhere: the test is
  // skipped with this reason (the file and what fails).
  std::string disabled = "";
};

std::ostream& operator<<(std::ostream& out, const Case& c) { return out << c.name; }

Command Dl(const std::string& args, std::vector<std::string> mentions) {
  return Command{"dlcaffe", args, std::move(mentions)};
}

std::string TimeArgs(const std::string& model) { return "time --model=" + model + " --iterations=1"; }

std::vector<Case> Cases() {
  std::vector<Case> c;
  // ---- weights (.caffemodel)
  c.push_back({"TruncatedCaffemodel", [] {
                 const std::string bad = Truncated(Shared().caffemodel, "truncated.caffemodel");
                 return Dl("test --model=" + Shared().net + " --weights=" + bad + " --iterations=1",
                           {bad, "truncated or corrupt"});
               }});
  c.push_back({"BitFlippedCaffemodel", [] {
                 const std::string bad = BitFlipped(Shared().caffemodel, "flipped.caffemodel");
                 return Dl("test --model=" + Shared().net + " --weights=" + bad + " --iterations=1",
                           {bad, "truncated or corrupt"});
               }});
  c.push_back({"CaffemodelOfNetWithOtherLayerNames", [] {
                 return Dl("test --model=" + Shared().renamed_net + " --weights=" +
                               Shared().caffemodel + " --iterations=1",
                           {Shared().caffemodel, "'ip1'", "'fc'"});
               }});
  c.push_back({"CaffemodelWithOtherBlobShapes", [] {
                 return Dl("test --model=" + Shared().wide_net + " --weights=" +
                               Shared().caffemodel + " --iterations=1",
                           {"layer 'ip1'", "param 0", "4 3", "5 3"});
               }});
  c.push_back({"CaffemodelWithOtherBlobShapesWhenFinetuning", [] {
                 return Dl("train --solver=" + Shared().wide_solver + " --weights=" +
                               Shared().caffemodel,
                           {"layer 'ip1'", "param 0", "4 3", "5 3"});
               }});
  c.push_back({"MissingCaffemodel", [] {
                 return Dl("test --model=" + Shared().net + " --weights=" + Dir() +
                               "/nowhere.caffemodel --iterations=1",
                           {Dir() + "/nowhere.caffemodel", "No such file"});
               }});
  c.push_back({"PrototxtGivenAsWeights", [] {
                 return Dl("test --model=" + Shared().net + " --weights=" + Shared().net +
                               " --iterations=1",
                           {Shared().net, "no weights"});
               }});
  c.push_back({"CaffemodelWithTooFewValues", [] {
                 caffe::NetParameter weights;
                 ReadProtoFromBinaryFile(Shared().caffemodel, &weights);
                 for (auto& layer : *weights.mutable_layer())
                   if (layer.blobs_size() > 0) layer.mutable_blobs(0)->mutable_data()->RemoveLast();
                 const std::string bad = Dir() + "/short.caffemodel";
                 WriteProtoToBinaryFile(weights, bad);
                 return Dl("test --model=" + Shared().net + " --weights=" + bad + " --iterations=1",
                           {"layer 'ip1'", "11 values", "12"});
               }});
  // ---- solver states (.solverstate)
  c.push_back({"TruncatedSolverstate", [] {
                 const std::string bad = Truncated(Shared().solverstate, "truncated.solverstate");
                 return Dl("train --solver=" + Shared().solver + " --snapshot=" + bad,
                           {bad, "truncated or corrupt"});
               }});
  c.push_back({"BitFlippedSolverstate", [] {
                 const std::string bad = BitFlipped(Shared().solverstate, "flipped.solverstate");
                 return Dl("train --solver=" + Shared().solver + " --snapshot=" + bad,
                           {bad, "truncated or corrupt"});
               }});
  c.push_back({"SolverstateOfAnotherNet", [] {
                 // Its weights fit the net, its history is the tiny net's.
                 caffe::SolverState state;
                 ReadProtoFromBinaryFile(Shared().solverstate, &state);
                 state.set_learned_net(Shared().wide_caffemodel);
                 const std::string bad = Dir() + "/other_net.solverstate";
                 WriteProtoToBinaryFile(state, bad);
                 return Dl("train --solver=" + Shared().wide_solver + " --snapshot=" + bad,
                           {bad, "history blob 0", "layer 'ip1' param 0", "4 3", "5 3"});
               }});
  c.push_back({"SolverstateWithMissingHistory", [] {
                 caffe::SolverState state;
                 ReadProtoFromBinaryFile(Shared().solverstate, &state);
                 state.mutable_history()->RemoveLast();
                 const std::string bad = Dir() + "/short_history.solverstate";
                 WriteProtoToBinaryFile(state, bad);
                 return Dl("train --solver=" + Shared().solver + " --snapshot=" + bad,
                           {bad, "1 history blobs", "keeps 2", "layer 'ip1' param 0", "layer 'ip1' param 1"});
               }});
  c.push_back({"SolverstateOfAnotherSolverType", [] {
                 return Dl("train --solver=" + Shared().adam_solver + " --snapshot=" +
                               Shared().solverstate,
                           {Shared().solverstate, "2 history blobs", "Adam", "keeps 4"});
               }});
  c.push_back({"SolverstateWithMissingLearnedNet", [] {
                 caffe::SolverState state;
                 ReadProtoFromBinaryFile(Shared().solverstate, &state);
                 state.set_learned_net("/nonexistent/gone_iter_2.caffemodel");
                 const std::string bad = Dir() + "/no_weights.solverstate";
                 WriteProtoToBinaryFile(state, bad);
                 return Dl("train --solver=" + Shared().solver + " --snapshot=" + bad,
                           {bad, "/nonexistent/gone_iter_2.caffemodel", "does not exist"});
               }});
  c.push_back({"SolverstateWithWrongLearnedNet", [] {
                 caffe::SolverState state;
                 ReadProtoFromBinaryFile(Shared().solverstate, &state);
                 state.set_learned_net(Shared().wide_caffemodel);
                 const std::string bad = Dir() + "/wrong_weights.solverstate";
                 WriteProtoToBinaryFile(state, bad);
                 return Dl("train --solver=" + Shared().solver + " --snapshot=" + bad,
                           {bad, Shared().wide_caffemodel, "layer 'ip1'", "5 3", "4 3"});
               }});
  c.push_back({"MissingSolverstate", [] {
                 return Dl("train --solver=" + Shared().solver + " --snapshot=" + Dir() +
                               "/nowhere.solverstate",
                           {Dir() + "/nowhere.solverstate", "No such file"});
               }});
  // ---- mean files (.binaryproto)
  c.push_back({"TruncatedMeanFile", [] {
                 const std::string bad = Truncated(MeanFile(), "truncated.binaryproto");
                 return Dl(TimeArgs(DataNet("mean_truncated.prototxt", GoodLmdb(),
                                            "mean_file: '" + bad + "'")),
                           {"layer 'data'", bad, "truncated or corrupt"});
               }});
  c.push_back({"BitFlippedMeanFile", [] {
                 const std::string bad = BitFlipped(MeanFile(), "flipped.binaryproto");
                 return Dl(TimeArgs(DataNet("mean_flipped.prototxt", GoodLmdb(),
                                            "mean_file: '" + bad + "'")),
                           {"layer 'data'", bad, "truncated or corrupt"});
               }});
  c.push_back({"MeanFileOfOtherImageSize", [] {
                 caffe::BlobProto mean;
                 mean.set_num(1);
                 mean.set_channels(3);
                 mean.set_height(5);
                 mean.set_width(5);
                 for (int i = 0; i < 75; ++i) mean.add_data(1.f);
                 const std::string bad = Dir() + "/mean_3x5x5.binaryproto";
                 WriteProtoToBinaryFile(mean, bad);
                 return Dl(TimeArgs(DataNet("mean_other.prototxt", GoodLmdb(),
                                            "mean_file: '" + bad + "'")),
                           {"layer 'data'", bad, "3", "5"});
               }});
  // ---- prototxt
  c.push_back({"UnknownFieldInPrototxt", [] {
                 const std::string net =
                     InputNet("unknown_field.prototxt",
                              "layer { name: 'ip' type: 'InnerProduct' bottom: 'data' top: 'ip'\n"
                              "  inner_product_param { num_outputs: 3 } }\n");
                 return Dl(TimeArgs(net), {net + ":5:36", "num_outputs"});
               }});
  c.push_back({"WrongEnumValueInPrototxt", [] {
                 const std::string net =
                     InputNet("bad_enum.prototxt",
                              "layer { name: 'pool' type: 'Pooling' bottom: 'data' top: 'p'\n"
                              "  pooling_param { pool: MEDIAN kernel_size: 1 } }\n");
                 return Dl(TimeArgs(net), {net + ":5:", "MEDIAN", "pool"});
               }});
  c.push_back({"DuplicateTopNotInPlace", [] {
                 const std::string net = InputNet(
                     "duplicate_top.prototxt",
                     "layer { name: 'a' type: 'ReLU' bottom: 'data' top: 'x' }\n"
                     "layer { name: 'b' type: 'Sigmoid' bottom: 'data' top: 'x' }\n");
                 return Dl(TimeArgs(net), {"layer 'b'", "'x'", "more than one layer"});
               }});
  c.push_back({"BottomThatNoLayerProduces", [] {
                 const std::string net = InputNet(
                     "missing_bottom.prototxt",
                     "layer { name: 'ip' type: 'InnerProduct' bottom: 'dta' top: 'ip'\n"
                     "  inner_product_param { num_output: 2 } }\n");
                 return Dl(TimeArgs(net), {"layer 'ip'", "'dta'"});
               }});
  c.push_back({"CycleBetweenLayers", [] {
                 // b reads what c writes later: a cycle, which has no order.
                 const std::string net = InputNet(
                     "cycle.prototxt",
                     "layer { name: 'b' type: 'Eltwise' bottom: 'data' bottom: 'c' top: 'b' }\n"
                     "layer { name: 'c' type: 'ReLU' bottom: 'b' top: 'c' }\n");
                 return Dl(TimeArgs(net), {"layer 'b'", "'c'"});
               }});
  c.push_back({"InputWithoutShape", [] {
                 const std::string net =
                     Write("input_without_shape.prototxt",
                           "layer { name: 'in' type: 'Input' top: 'data' }\n"
                           "layer { name: 'relu' type: 'ReLU' bottom: 'data' top: 'a' }\n"
                           "layer { name: 'split' type: 'Split' bottom: 'data' top: 'b' top: 'c' }\n");
                 return Dl(TimeArgs(net), {"layer 'in' (Input)", "top 'data'", "no shape", "input_param"});
               }});
  c.push_back({"NegativeDimension", [] {
                 const std::string net =
                     Write("negative_dim.prototxt",
                           "layer { name: 'in' type: 'Input' top: 'data'\n"
                           "  input_param { shape { dim: 2 dim: -3 } } }\n");
                 return Dl(TimeArgs(net), {"layer 'in'", "-3"});
               }});
  c.push_back({"ZeroNumOutput", [] {
                 const std::string net = InputNet(
                     "zero_output.prototxt",
                     "layer { name: 'ip' type: 'InnerProduct' bottom: 'data' top: 'ip'\n"
                     "  inner_product_param { num_output: 0 } }\n");
                 return Dl(TimeArgs(net), {"layer 'ip'", "num_output"});
               }});
  c.push_back({"BlobOfTwoToTheFortyElements", [] {
                 const std::string net =
                     Write("huge_blob.prototxt",
                           "layer { name: 'in' type: 'Input' top: 'huge'\n"
                           "  input_param { shape { dim: 1024 dim: 1024 dim: 1024 dim: 1024 } } }\n");
                 return Dl(TimeArgs(net), {"layer 'in'", "'huge'", "1099511627776"});
               }});
  c.push_back({"LayerOutputOfTwoToTheFortyElements", [] {
                 const std::string net = InputNet(
                     "huge_top.prototxt",
                     "layer { name: 'big' type: 'Tile' bottom: 'data' top: 'wide'\n"
                     "  tile_param { axis: 0 tiles: 1073741824 } }\n"
                     "layer { name: 'ip' type: 'InnerProduct' bottom: 'wide' top: 'ip'\n"
                     "  inner_product_param { num_output: 1024 } }\n");
                 return Dl(TimeArgs(net), {"layer 'big'", "4294967296"});
               }});
  c.push_back({"UnknownLayerType", [] {
                 const std::string net = InputNet(
                     "unknown_type.prototxt",
                     "layer { name: 'x' type: 'Convolutoin' bottom: 'data' top: 'x' }\n");
                 return Dl(TimeArgs(net), {"'Convolutoin'", "Convolution", "InnerProduct"});
               }});
  c.push_back({"MissingRequiredParam", [] {
                 const std::string net = Write(
                     "no_kernel.prototxt",
                     "layer { name: 'in' type: 'Input' top: 'data'\n"
                     "  input_param { shape { dim: 1 dim: 1 dim: 4 dim: 4 } } }\n"
                     "layer { name: 'conv' type: 'Convolution' bottom: 'data' top: 'c'\n"
                     "  convolution_param { num_output: 2 } }\n");
                 return Dl(TimeArgs(net), {"layer 'conv'", "kernel"});
               }});
  c.push_back({"DuplicateLayerName", [] {
                 const std::string net =
                     InputNet("duplicate_name.prototxt",
                              "layer { name: 'in' type: 'ReLU' bottom: 'data' top: 'r' }\n");
                 return Dl(TimeArgs(net), {"'in'", "two layers"});
               }});
  c.push_back({"WrongNumberOfBottoms", [] {
                 const std::string net = InputNet(
                     "one_bottom_loss.prototxt",
                     "layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'data' top: 'l' }\n");
                 return Dl(TimeArgs(net), {"layer 'loss'", "bottom"});
               }});
  c.push_back({"ShapesThatDoNotFit", [] {
                 const std::string net = Write(
                     "eltwise_shapes.prototxt",
                     "layer { name: 'in' type: 'Input' top: 'a' top: 'b'\n"
                     "  input_param { shape { dim: 1 dim: 4 } shape { dim: 1 dim: 5 } } }\n"
                     "layer { name: 'sum' type: 'Eltwise' bottom: 'a' bottom: 'b' top: 's' }\n");
                 return Dl(TimeArgs(net), {"layer 'sum'", "1 4", "1 5"});
               }});
  c.push_back({"MissingModelFile", [] {
                 return Dl(TimeArgs(Dir() + "/nowhere.prototxt"), {Dir() + "/nowhere.prototxt", "No such file"});
               }});
  c.push_back({"GarbageOnnxModel", [] {
                 const std::string bad = Write("garbage.onnx", "not an onnx model\x01\x02\xff");
                 return Dl(TimeArgs(bad), {bad});
               }});
  // ---- datasets
  c.push_back({"LmdbOfRecordsThatAreNotDatum", [] {
                 const std::string db = Lmdb("not_datum_lmdb", {{"key_0", "this is not a datum"},
                                                                {"key_1", "neither is this"}});
                 return Dl(TimeArgs(DataNet("not_datum.prototxt", db)),
                           {"layer 'data'", "'key_0'", db});
               }});
  c.push_back({"LmdbRecordsOfDifferentSizes", [] {
                 const std::string db =
                     Lmdb("mixed_sizes_lmdb", {{"a", DatumBytes(1, 4, 4, 0)},
                                               {"b", DatumBytes(1, 5, 5, 1)}});
                 return Dl(TimeArgs(DataNet("mixed_sizes.prototxt", db)),
                           {"layer 'data'", "'b'", "4 x 4", "5 x 5"});
               }});
  c.push_back({"EncodedImageThatDoesNotDecodeFirst", [] {
                 const std::string db = Lmdb("garbage_first_lmdb", {{"img_0", EncodedGarbageDatum(0)}});
                 return Dl(TimeArgs(DataNet("garbage_first.prototxt", db)),
                           {"layer 'data'", "'img_0'", "decode"});
               }});
  c.push_back({"EncodedImageThatDoesNotDecodeLater", [] {
                 const std::string db =
                     Lmdb("garbage_later_lmdb", {{"img_0", DatumBytes(1, 4, 4, 0)},
                                                 {"img_1", EncodedGarbageDatum(1)}});
                 return Dl(TimeArgs(DataNet("garbage_later.prototxt", db)),
                           {"layer 'data'", "'img_1'", "decode"});
               }});
  c.push_back({"EncodedImageHeaderClaimsHugeSize", [] {
                 const std::string db =
                     Lmdb("huge_header_lmdb", {{"img_0", EncodedHugeHeaderDatum(0)}});
                 return Dl(TimeArgs(DataNet("huge_header.prototxt", db)),
                           {"layer 'data'", "'img_0'", "OpenCV's decoding limit"});
               }});
  c.push_back({"LabelOutOfRangeForSoftmaxWithLoss", [] {
                 const std::string net = Write("label_7.prototxt", TinyNet(4, "ip1", 7));
                 const std::string solver = Write("label_7_solver.prototxt", Solver(net, "snapshot_after_train: false\n"));
                 return Dl("train --solver=" + solver, {"layer 'loss'", "label 7", "[0, 4)"});
               }});
  c.push_back({"LabelOutOfRangeInLmdb", [] {
                 const std::string db =
                     Lmdb("label_9_lmdb", {{"a", DatumBytes(1, 4, 4, 9)}, {"b", DatumBytes(1, 4, 4, 1)}});
                 const std::string solver = Write(
                     "label_9_solver.prototxt",
                     Solver(DataNet("label_9.prototxt", db), "snapshot_after_train: false\n"));
                 return Dl("train --solver=" + solver,
                           {"layer 'loss'", "label 9", "[0, 2)"});
               }});
  c.push_back({"LabelOutOfRangeWhenTesting", [] {
                 const std::string net = Write("test_label_5.prototxt", TinyNet(4, "ip1", 5));
                 return Dl("test --model=" + net + " --weights=" + Shared().caffemodel +
                               " --iterations=1",
                           {"layer 'loss'", "label 5", "[0, 4)"});
               }});
  c.push_back({"LabelOutOfRangeForAccuracyOnly", [] {
                 const std::string net = Write(
                     "accuracy_label_6.prototxt",
                     "layer { name: 'data' type: 'DummyData' top: 'data' top: 'label'\n"
                     "  dummy_data_param { shape { dim: 2 dim: 4 } shape { dim: 2 }\n"
                     "    data_filler { type: 'uniform' } data_filler { value: 6 } } }\n"
                     "layer { name: 'acc' type: 'Accuracy' bottom: 'data' bottom: 'label' "
                     "top: 'acc' }\n");
                 return Dl("time --model=" + net + " --iterations=1 --phase=TEST",
                           {"layer 'acc'", "label 6", "[0, 4)"});
               },
               // A net whose only label reader is an Accuracy layer: the label
               // counts as a miss (accuracy 0), by design and by test
               // (tests/layers/test_accuracy.cpp LabelOutsideTheClassesIsAMiss);
               // Caffe CHECK-fails. Changing it changes that test: not done here.
               "src/layers/accuracy.cpp: a label out of range counts as a miss, no error "
               "(tests/layers/test_accuracy.cpp LabelOutsideTheClassesIsAMiss asserts it)"});
  c.push_back({"DatasetPathIsAFile", [] {
                 const std::string file = Write("plain_file", "not a database");
                 return Dl(TimeArgs(DataNet("file_source.prototxt", file)),
                           {"layer 'data'", file, "not a directory"});
               }});
  c.push_back({"MissingDataset", [] {
                 return Dl(TimeArgs(DataNet("missing_source.prototxt", Dir() + "/no_lmdb")),
                           {"layer 'data'", Dir() + "/no_lmdb", "does not exist"});
               }});
  c.push_back({"EmptyDataset", [] {
                 const std::string db = Lmdb("empty_lmdb", {});
                 return Dl(TimeArgs(DataNet("empty_source.prototxt", db)),
                           {"layer 'data'", db, "empty"});
               }});
  c.push_back({"CropLargerThanImages", [] {
                 return Dl(TimeArgs(DataNet("big_crop.prototxt", GoodLmdb(), "crop_size: 9")),
                           {"layer 'data'", "crop", "9", "4"});
               }});
  c.push_back({"ZeroBatchSize", [] {
                 return Dl(TimeArgs(DataNet("zero_batch.prototxt", GoodLmdb(), "", 0)),
                           {"layer 'data'", "batch_size"});
               }});
  // ---- snapshots
  c.push_back({"SnapshotPrefixInMissingFolder", [] {
                 const std::string solver =
                     Write("missing_folder_solver.prototxt",
                           Solver(Shared().net, "", Dir() + "/no_such_folder/tiny"));
                 return Dl("train --solver=" + solver, {Dir() + "/no_such_folder/tiny"});
               }});
  c.push_back({"SnapshotPrefixUnderAFile", [] {
                 const std::string file = Write("a_file", "x");
                 const std::string solver = Write("under_file_solver.prototxt",
                                                  Solver(Shared().net, "", file + "/tiny"));
                 return Dl("train --solver=" + solver, {file + "/tiny"});
               }});
  c.push_back({"SnapshotPrefixUnderReadOnlyFilesystem", [] {
                 const std::string solver = Write("read_only_solver.prototxt",
                                                  Solver(Shared().net, "", "/proc/dlcaffe_tiny"));
                 return Dl("train --solver=" + solver, {"/proc/dlcaffe_tiny"});
               }});
  // ---- devices and flags
  c.push_back({"DeviceIndexThatDoesNotExist", [] {
                 return Dl(TimeArgs(Shared().net) + " --device=99", {"'99'", "ocl:0:0"});
               }});
  c.push_back({"OpenCLDeviceThatDoesNotExist", [] {
                 return Dl(TimeArgs(Shared().net) + " --device=ocl:7:0", {"'ocl:7:0'", "ocl:0:0"});
               }});
  c.push_back({"MalformedDevice", [] {
                 return Dl(TimeArgs(Shared().net) + " --device=gpu", {"'gpu'"});
               }});
  c.push_back({"BadPhase", [] {
                 return Dl(TimeArgs(Shared().net) + " --phase=VALIDATE", {"--phase", "'VALIDATE'"});
               }});
  c.push_back({"WeightsAndSnapshotTogether", [] {
                 return Dl("train --solver=" + Shared().solver + " --weights=" + Shared().caffemodel +
                               " --snapshot=" + Shared().solverstate,
                           {"--snapshot", "--weights"});
               }});
  c.push_back({"TestWithoutWeights", [] {
                 return Dl("test --model=" + Shared().net, {"--weights"});
               }});
  c.push_back({"ZeroIterations", [] {
                 return Dl("time --model=" + Shared().net + " --iterations=0", {"--iterations"});
               }});
  c.push_back({"BadSigintEffect", [] {
                 return Dl("train --solver=" + Shared().solver + " --sigint_effect=pause",
                           {"--sigint_effect", "'pause'"});
               }});
  // ---- solvers
  c.push_back({"MissingSolverFile", [] {
                 return Dl("train --solver=" + Dir() + "/nowhere_solver.prototxt",
                           {Dir() + "/nowhere_solver.prototxt", "No such file"});
               }});
  c.push_back({"SolverNamingMissingNet", [] {
                 const std::string solver = Write("missing_net_solver.prototxt",
                                                  Solver(Dir() + "/nowhere_net.prototxt"));
                 return Dl("train --solver=" + solver, {Dir() + "/nowhere_net.prototxt", "No such file"});
               }});
  c.push_back({"UnknownSolverType", [] {
                 const std::string solver = Write("bad_type_solver.prototxt",
                                                  Solver(Shared().net, "type: 'Adamm'\n"));
                 return Dl("train --solver=" + solver, {"'Adamm'", "Adam", "SGD"});
               }});
  c.push_back({"NegativeMaxIter", [] {
                 const std::string solver = Write("negative_iter_solver.prototxt",
                                                  Solver(Shared().net, "max_iter: -5\n"));
                 return Dl("train --solver=" + solver, {"max_iter", "-5"});
               }});
  c.push_back({"UnknownLrPolicy", [] {
                 const std::string solver = Write("bad_policy_solver.prototxt",
                                                  Solver(Shared().net, "lr_policy: 'cosin'\n"));
                 return Dl("train --solver=" + solver, {"'cosin'", "cosine"});
               }});
  c.push_back({"NegativeWarmupIter", [] {
                 const std::string solver = Write("negative_warmup_solver.prototxt",
                                                  Solver(Shared().net, "warmup_iter: -3\n"));
                 return Dl("train --solver=" + solver, {"warmup_iter", "-3"});
               }});
  c.push_back({"TestIterWithoutTestInterval", [] {
                 const std::string solver = Write("no_interval_solver.prototxt",
                                                  Solver(Shared().net, "test_iter: 2\n"));
                 return Dl("train --solver=" + solver, {"test_interval"});
               }});
  c.push_back({"MalformedSolverText", [] {
                 const std::string solver =
                     Write("malformed_solver.prototxt", "net: 'x.prototxt'\nbase_lr 0.01 }\n");
                 return Dl("train --solver=" + solver, {solver + ":2:"});
               }});
  // ---- other tools
  c.push_back({"ComputeImageMeanOfMissingDataset", [] {
                 return Command{"compute_image_mean", Dir() + "/no_lmdb " + Dir() + "/mean_out.binaryproto",
                            {Dir() + "/no_lmdb", "does not exist"}};
               }});
  c.push_back({"ComputeImageMeanOfRecordsThatAreNotDatum", [] {
                 const std::string db = Lmdb("not_datum_for_mean_lmdb", {{"k0", "not a datum at all"}});
                 return Command{"compute_image_mean", db + " " + Dir() + "/mean_out2.binaryproto",
                            {db, "'k0'"}};
               }});
  c.push_back({"ExtractFeaturesOfUnknownBlob", [] {
                 return Command{"extract_features",
                            Shared().caffemodel + " " + Shared().net + " no_such_blob " + Dir() +
                                "/features_lmdb 1 lmdb",
                            {"'no_such_blob'"}};
               }});
  c.push_back({"UpgradeOfMissingPrototxt", [] {
                 return Command{"upgrade_net_proto_text",
                            Dir() + "/nowhere_old.prototxt " + Dir() + "/new.prototxt",
                            {Dir() + "/nowhere_old.prototxt"}};
               }});
  return c;
}

class BadInput : public ::testing::TestWithParam<Case> {};

TEST_P(BadInput, EndsInOneClearMessage) {
  const Case& c = GetParam();
  if (!c.disabled.empty()) GTEST_SKIP() << c.disabled;
  const Command run = c.make();
  const ToolResult r = RunTool(run.tool, run.args, run.env);
  SCOPED_TRACE(run.tool + " " + run.args);
  // The message, for the record (docs/reliability.md lists them).
  const size_t at = r.output.find(run.tool + ": error: ");
  if (at != std::string::npos)
    std::cout << "  " << r.output.substr(at, r.output.find('\n', at) - at) << std::endl;
  ExpectCleanToolError(r, run.tool, run.mentions.empty() ? "" : run.mentions[0]);
  for (const std::string& m : run.mentions)
    EXPECT_TRUE(Contains(r.output, m)) << "missing '" << m << "' in:\n" << r.output;
}

INSTANTIATE_TEST_SUITE_P(Catalogue, BadInput, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
}  // namespace test
}  // namespace dlcaffe
