// convert_onnx MODEL.onnx OUT.prototxt OUT.caffemodel: an ONNX model as a
// dlcaffe deploy net (an Input layer per graph input) and its weights.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <iostream>
#include <sstream>

#include "dlcaffe/error.hpp"
#include "dlcaffe/io.hpp"
#include "dlcaffe/onnx_import.hpp"

DEFINE_bool(training, false,
            "Import for training: BatchNormalization uses batch statistics (use_global_stats "
            "false) and Dropout stays the identity.");
DEFINE_bool(fuse, true,
            "Run the subgraphs exporters spell out op by op (LayerNorm, GELU, SiLU, HardSwish) "
            "as one layer each.");
DEFINE_string(freeze, "",
              "With --training: initializers to keep fixed although a gradient reaches them "
              "(buffers such as rotary cos/sin tables), comma-separated. Parameters are found "
              "by which initializers a gradient reaches; masks read only by comparisons are "
              "constants already.");
DEFINE_string(input_shape, "",
              "Fixed shapes for inputs with dynamic dimensions: name:d0,d1,...[;name:...]");

namespace {

}  // namespace

int main(int argc, char** argv) {
  FLAGS_logtostderr = true;
  gflags::SetUsageMessage(
      "converts an ONNX model into a dlcaffe net and weights\n"
      "usage: convert_onnx [flags] MODEL.onnx OUT.prototxt OUT.caffemodel");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  if (argc != 4) {
    gflags::ShowUsageWithFlagsRestrict(argv[0], "tools/convert_onnx");
    return 1;
  }
  try {
    dlcaffe::OnnxImportOptions options;
    options.training = FLAGS_training;
    options.fuse_patterns = FLAGS_fuse;
    options.input_shapes = dlcaffe::ParseInputShapes(FLAGS_input_shape);
    std::stringstream frozen(FLAGS_freeze);
    for (std::string name; std::getline(frozen, name, ',');)
      if (!name.empty()) options.frozen_initializers.insert(name);
    const dlcaffe::OnnxModel model = dlcaffe::ImportOnnx(argv[1], options);
    // The weights: each layer's name and blobs; the net: everything else.
    caffe::NetParameter weights;
    weights.set_name(model.net.name());
    caffe::NetParameter net = model.net;
    for (int i = 0; i < net.layer_size(); ++i) {
      caffe::LayerParameter* layer = net.mutable_layer(i);
      if (layer->blobs_size() == 0) continue;
      caffe::LayerParameter* w = weights.add_layer();
      w->set_name(layer->name());
      w->set_type(layer->type());
      w->mutable_blobs()->Swap(layer->mutable_blobs());
      layer->clear_blobs();
    }
    dlcaffe::WriteProtoToTextFile(net, argv[2]);
    dlcaffe::WriteProtoToBinaryFile(weights, argv[3]);
    std::cout << "convert_onnx: " << argv[1] << " (opset " << model.opset << ") -> " << argv[2]
              << " (" << net.layer_size() << " layers) and " << argv[3] << " ("
              << model.parameters.size() << " parameters";
    if (!model.applied_fusions.empty())
      std::cout << ", " << model.applied_fusions.size() << " fused subgraphs";
    std::cout << ")" << std::endl;
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "convert_onnx: error: " << e.what() << std::endl;
    return 1;
  }
}
