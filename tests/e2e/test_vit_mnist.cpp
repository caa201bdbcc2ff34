// End to end: a vision transformer from PyTorch fine-tunes on the real MNIST
// through the user's path. tools/onnx/export_small_vit.py exports
// torchvision's VisionTransformer (one-channel patches of 7x7, class token,
// learned position embedding, 2 pre-norm blocks of width 64) with random
// weights; convert_onnx --training turns it into a prototxt and a
// .caffemodel; the test splices Caffe's LeNet data layers, a softmax loss
// and an accuracy layer around it, and `dlcaffe train` runs Adam (learning
// rate 1e-3 decaying linearly to 0) for Iterations() of batch 64. At
// nightly depth (util/test_depth.hpp) that is 4000, about 4 epochs, and it
// must reach 97% on the 10,000 test images; CI runs the short form, whose
// bound a broken gradient still fails. Either way the class token and the
// position embedding — parameters that enter through Expand/Concat/Add
// rather than a layer's own weights — must have changed in the final
// snapshot.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "dlcaffe/io.hpp"
#include "dlcaffe/onnx_import.hpp"
#include "util/run_script.hpp"
#include "util/test_context.hpp"
#include "util/test_depth.hpp"

namespace dlcaffe {
namespace test {
namespace {

// CI's short form: 600 iterations reached 0.9206 here (the class token
// changed by 0.44, the position embedding by 2.1); a net whose gradient
// is broken stays near chance.
constexpr int kCiIterations = 600;
constexpr float kCiAccuracy = 0.90f;
int Iterations() { return ByDepth(kCiIterations, 4000); }

// The blob the imported net keeps initializer `name` in, from a .caffemodel.
std::vector<float> InitializerValues(const caffe::NetParameter& weights,
                                     const OnnxParameterSource& source) {
  for (const auto& layer : weights.layer())
    if (layer.name() == source.layer) {
      const caffe::BlobProto& blob = layer.blobs(source.blob_index);
      return std::vector<float>(blob.data().begin(), blob.data().end());
    }
  ADD_FAILURE() << "no layer " << source.layer << " in the weights";
  return {};
}

double RelativeChange(const std::vector<float>& before, const std::vector<float>& after) {
  if (before.size() != after.size() || before.empty()) return -1;
  double diff = 0, norm = 0;
  for (size_t i = 0; i < before.size(); ++i) {
    diff += (double(after[i]) - before[i]) * (double(after[i]) - before[i]);
    norm += double(before[i]) * before[i];
  }
  return std::sqrt(diff / norm);
}

TEST(VitMNIST, ExportedVisionTransformerTrainsToNinetySevenPercentWithDlcaffeTrain) {
  const std::string root = SourceDir();
  ASSERT_TRUE(FileExists(root + "/examples/mnist/mnist_train_lmdb"))
      << "run data/mnist/get_mnist.sh first (the test command does)";
  ASSERT_EQ(chdir(root.c_str()), 0);
  const std::string dir = TempDir();
  const std::string onnx = dir + "/vit.onnx";
  const ToolResult exported = RunCommand("'" + TestPython() + "' tools/onnx/export_small_vit.py '" +
                                         onnx + "' --batch 64 2>&1");
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  const ToolResult converted = RunTool(
      "convert_onnx", "--training '" + onnx + "' '" + dir + "/vit.prototxt' '" + dir + "/vit.caffemodel'");
  ASSERT_EQ(converted.exit_code, 0) << converted.output;

  // Where the free parameters went (the same import convert_onnx ran).
  OnnxImportOptions options;
  options.training = true;
  const OnnxModel model = ImportOnnx(onnx, options);
  ASSERT_TRUE(model.parameters.count("class_token"));
  ASSERT_TRUE(model.parameters.count("encoder.pos_embedding"));

  // The training net: LeNet's data layers (batch 64 in both phases: the
  // imported reshapes hold the exported batch), the ViT reading "data",
  // a loss and, in the test phase, the accuracy.
  caffe::NetParameter lenet, vit, net;
  ReadProtoFromTextFile("models/lenet/lenet_train_test.prototxt", &lenet);
  ReadProtoFromTextFile(dir + "/vit.prototxt", &vit);
  net.set_name("vit_mnist");
  for (const auto& layer : lenet.layer())
    if (layer.type() == "Data") {
      caffe::LayerParameter* data = net.add_layer();
      *data = layer;
      data->mutable_data_param()->set_batch_size(64);
    }
  for (const auto& layer : vit.layer())
    if (layer.type() != "Input") *net.add_layer() = layer;
  ReadProtoFromTextString(
      "name: 'loss' type: 'SoftmaxWithLoss' bottom: 'logits' bottom: 'label' top: 'loss'",
      "loss layer", net.add_layer());
  ReadProtoFromTextString(
      "name: 'accuracy' type: 'Accuracy' bottom: 'logits' bottom: 'label' top: 'accuracy' "
      "include { phase: TEST }",
      "accuracy layer", net.add_layer());
  WriteProtoToTextFile(net, dir + "/vit_train_test.prototxt");

  caffe::SolverParameter solver;
  solver.set_net(dir + "/vit_train_test.prototxt");
  solver.set_type("Adam");
  solver.set_base_lr(1e-3f);
  solver.set_momentum(0.9f);
  solver.set_momentum2(0.999f);
  solver.set_lr_policy("poly");  // linear decay to 0: the last points of accuracy
  solver.set_power(1.f);
  solver.set_max_iter(Iterations());
  solver.add_test_iter(156);  // 156 x 64 = 9,984 of the 10,000 test images
  solver.set_test_interval(Iterations());
  solver.set_test_initialization(false);
  solver.set_display(100);
  solver.set_snapshot_prefix(dir + "/vit");
  solver.set_random_seed(1701);
  WriteProtoToTextFile(solver, dir + "/solver.prototxt");

  const ToolResult trained =
      RunDlcaffe("train --solver='" + dir + "/solver.prototxt' --weights='" + dir + "/vit.caffemodel'");
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const std::string marker = "Test net output #0: accuracy = ";
  const size_t at = trained.output.rfind(marker);
  ASSERT_NE(at, std::string::npos) << trained.output;
  const float accuracy = std::stof(trained.output.substr(at + marker.size()));
  std::cout << "ViT MNIST test accuracy after " << Iterations() << " iterations: " << accuracy
            << std::endl;
  EXPECT_GE(accuracy, ByDepth(kCiAccuracy, 0.97f));
  EXPECT_LE(accuracy, 1.0f);

  // The class token and the position embedding were trained.
  caffe::NetParameter before, after;
  ReadProtoFromBinaryFile(dir + "/vit.caffemodel", &before);
  ReadProtoFromBinaryFile(dir + "/vit_iter_" + std::to_string(Iterations()) + ".caffemodel", &after);
  for (const std::string name : {"class_token", "encoder.pos_embedding"}) {
    const OnnxParameterSource& source = model.parameters.at(name);
    const double change = RelativeChange(InitializerValues(before, source), InitializerValues(after, source));
    std::cout << name << " (" << source.layer << "): relative change " << change << std::endl;
    EXPECT_GT(change, 0.05) << name << " did not train";
  }
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
