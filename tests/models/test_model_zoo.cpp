// Every prototxt under models/ (found by walking the folder, so a new model is
// covered without touching this file): solvers and nets parse, nets name only
// registered layer types, deploy nets build with their published output shape
// and parameter count and run under `dlcaffe time`, and training nets build
// with the same parameter shapes as their deploy twin (so trained weights
// load into the deploy net).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <regex>
#include <set>

#include "dlcaffe/filler.hpp"
#include "dlcaffe/io.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "dlcaffe/net.hpp"
#include "dlcaffe/solver.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

namespace fs = std::filesystem;

// What a deploy net must produce: its output blobs' shapes (in the net's
// order; a detector's rows are those at setup) and its parameter values,
// split into learnable ones (lr_mult != 0: weights, biases, Scale's scale and
// shift) and frozen ones (lr_mult 0: BatchNorm statistics).
struct DeployFigures {
  std::vector<std::vector<int>> output_shapes;
  long long learnable;
  long long frozen;
};

// Published figures, or figures derived by hand from the layer shapes below
// (weights + biases per layer; "k x k x in x out" for a convolution).
const std::map<std::string, DeployFigures>& ExpectedDeployFigures() {
  static const std::map<std::string, DeployFigures> figures = {
      // LeNet, 64 x 1 x 28 x 28: conv1 5x5x1x20 + 20 = 520; conv2 5x5x20x50 + 50 = 25,050;
      // ip1 (50x4x4 = 800) x 500 + 500 = 400,500; ip2 500x10 + 10 = 5,010.
      {"models/lenet/lenet.prototxt", {{{64, 10}}, 431080, 0}},
      // The same LeNet for the image-folder walk-through, one image in.
      {"models/lenet_image_folder/deploy.prototxt", {{{1, 10}}, 431080, 0}},
      // CIFAR-10 quick, 32x32 -> pools (CEIL) 16, 8, 4: conv1 5x5x3x32 + 32 = 2,432;
      // conv2 5x5x32x32 + 32 = 25,632; conv3 5x5x32x64 + 64 = 51,264;
      // ip1 (64x4x4 = 1024) x 64 + 64 = 65,600; ip2 64x10 + 10 = 650.
      {"models/cifar10_quick/cifar10_quick.prototxt", {{{1, 10}}, 145578, 0}},
      // CIFAR-10 full: the same three convolutions (79,328), then
      // ip1 (64x4x4 = 1024) x 10 + 10 = 10,250.
      {"models/cifar10_full/cifar10_full.prototxt", {{{1, 10}}, 89578, 0}},
      // AlexNet and CaffeNet (published: 60,965,224): conv1 11x11x3x96 + 96 = 34,944;
      // conv2 (group 2) 5x5x48x256 + 256 = 307,456; conv3 3x3x256x384 + 384 = 885,120;
      // conv4 (group 2) 3x3x192x384 + 384 = 663,936; conv5 (group 2) 3x3x192x256 + 256 =
      // 442,624; fc6 9216x4096 + 4096 = 37,752,832; fc7 4096x4096 + 4096 = 16,781,312;
      // fc8 4096x1000 + 1000 = 4,097,000.
      {"models/bvlc_alexnet/deploy.prototxt", {{{10, 1000}}, 60965224, 0}},
      {"models/bvlc_reference_caffenet/deploy.prototxt", {{{10, 1000}}, 60965224, 0}},
      // GoogLeNet (published: 6,998,552): stem 124,416; inception 3a 163,696, 3b 388,736,
      // 4a 376,176, 4b 449,160, 4c 510,104, 4d 605,376, 4e 868,352, 5a 1,043,456,
      // 5b 1,444,080; classifier 1024x1000 + 1000 = 1,025,000.
      {"models/bvlc_googlenet/deploy.prototxt", {{{10, 1000}}, 6998552, 0}},
      // ResNet-50 (published: 25,557,032 = convolutions 23,454,912 + fc1000 2,049,000 +
      // BatchNorm scale and shift, here Scale layers, 2 x 26,560 channels = 53,120), plus
      // the 64 biases of conv1 that Kaiming He's Caffe model has: 25,557,096. Frozen: the
      // 53 BatchNorm layers' mean and variance (2 x 26,560) and scale factor (53).
      {"models/resnet50/deploy.prototxt", {{{1, 1000}}, 25557096, 53173}},
      // char_gpt (vocabulary V 113, width D 128, 128 positions, 4 blocks), logits for
      // every position: token table V x D = 14,464 (the head shares it); positions
      // 128 x D = 16,384; per block 2 LayerNorms 4D, QKV 3D^2 + 3D, projection
      // D^2 + D, MLP 8D^2 + 5D: 12D^2 + 13D = 198,272; final LayerNorm 2D = 256.
      {"models/char_gpt/deploy.prototxt", {{{1, 128, 113}}, 824192, 0}},
      // vit_mnist, a 24 x 24 crop: stem 3x3x1x16 + 16 = 160; patches 6x6x16x64 + 64 =
      // 36,928; positions 9 x 64 = 576; per block 12 x 64^2 + 13 x 64 = 49,984 (its MLP
      // is 4x wide); final LayerNorm 128; head 64 x 10 + 10 = 650.
      {"models/vit_mnist/deploy.prototxt", {{{1, 10}}, 138410, 0}},
      // The SSDs' DetectionOutput has 1 x 1 x 1 x 7 at setup (rows follow the data).
      // res10-shaped: conv1 7x7x3x16 + its Scale 32 = 2,384; the four ResNet blocks
      // (in -> out: 3x3xinxout + 3x3xoutxout + 1x1xinxout + two Scales 4 x out) 16->16,
      // 16->24, 24->32, 32->48 = 67,360; Normalize 32; the extra 1x1 and 3x3 layers with
      // biases 11,352; the heads (3x3, priors x (4 + 2) outputs with biases) on 32, 48,
      // 32, 24, 24 channels with 4, 6, 6, 4, 4 priors = 43,344. Frozen: 9 BatchNorms
      // (mean and variance per channel, one factor): 2 x (16 + 2 x (16 + 24 + 32 + 48)) + 9 = 521.
      {"models/ssd/res10_300x300_deploy.prototxt", {{{1, 1, 1, 7}}, 124472, 521}},
      // MobileNet-SSD-shaped: conv0 3x3x3x8 + 8 = 224; 13 depthwise (3x3 per channel +
      // bias) and pointwise (in x out + bias) pairs = 210,112; extras (1x1 to half, then
      // 3x3) from 256 to 128, 64, 64, 32 = 139,184; 1x1 heads of 4 + 21 outputs per
      // prior on 128, 256, 128, 64, 64, 32 channels with 3, 6, 6, 6, 6, 6 priors = 92,025.
      {"models/ssd/mobilenet_ssd_deploy.prototxt", {{{1, 1, 1, 7}}, 441545, 0}},
      // Faster R-CNN (narrow ZF): convolutions 7x7x3x16, 5x5x16x32, 3x3x32x48, 3x3x48x48
      // twice, with biases = 70,640; RPN 1x1 48 -> 18 and 48 -> 36 = 2,646; fc6
      // 48x6x6 -> 128, fc7 128 -> 128, cls_score -> 21, bbox_pred -> 84 = 251,369.
      // Outputs at setup: one region (the Proposal top's first shape).
      {"models/faster_rcnn/test.prototxt", {{{1, 84}, {1, 21}}, 324655, 0}},
  };
  return figures;
}

// Training nets whose parameter count is not simply their deploy twin's.
// GoogLeNet's two auxiliary classifiers: loss1 = conv 512x128 + 128 = 65,664,
// fc (128x4x4 = 2048) x 1024 + 1024 = 2,098,176, classifier 1024x1000 + 1000 =
// 1,025,000 -> 3,188,840; loss2 reads 528 channels: 3,190,888. 6,998,552 + both.
const std::map<std::string, long long>& ExpectedTrainLearnable() {
  static const std::map<std::string, long long> figures = {
      {"models/bvlc_googlenet/train_val.prototxt", 13378280},
  };
  return figures;
}

// All *.prototxt under models/, as paths relative to the source root.
std::vector<std::string> ModelFiles() {
  std::vector<std::string> files;
  const fs::path root = fs::path(SourceDir()) / "models";
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file() && entry.path().extension() == ".prototxt")
      files.push_back(fs::relative(entry.path(), SourceDir()).generic_string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string Abs(const std::string& relative) { return SourceDir() + "/" + relative; }

// Caffe's naming: solver files have "solver" in their name (lenet_solver_adam,
// quick_solver, cifar10_full_solver, solver); everything else is a net.
bool IsSolver(const std::string& path) {
  return fs::path(path).filename().string().find("solver") != std::string::npos;
}

caffe::NetParameter ReadNet(const std::string& path) {
  caffe::NetParameter param;
  ReadProtoFromTextFile(Abs(path), &param);
  UpgradeNetAsNeeded(path, &param);  // deprecated input fields -> an Input layer
  return param;
}

// A deploy net: its first layer is Input (after upgrading deprecated inputs).
bool IsDeploy(const caffe::NetParameter& net) {
  return net.layer_size() > 0 && net.layer(0).type() == "Input";
}

// The speed-benchmark nets (models/bench/, batch 16, Input-fed train nets
// too) have their own shape and parameter-count test (test_bench_nets); here
// they are only parsed and checked for known layer types, with every other file.
bool IsBenchmarkNet(const std::string& path) { return path.rfind("models/bench/", 0) == 0; }

std::vector<std::string> NetFiles(bool deploy) {
  std::vector<std::string> nets;
  for (const auto& f : ModelFiles())
    if (!IsSolver(f) && !IsBenchmarkNet(f) && IsDeploy(ReadNet(f)) == deploy) nets.push_back(f);
  return nets;
}

// Calls `visit` on every FillerParameter inside `message` (weight_filler,
// bias_filler, ... of any layer parameter), found through reflection.
void ForEachFiller(google::protobuf::Message* message,
                   const std::function<void(caffe::FillerParameter*)>& visit) {
  using google::protobuf::FieldDescriptor;
  const auto* descriptor = message->GetDescriptor();
  const auto* reflection = message->GetReflection();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* field = descriptor->field(i);
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
    std::vector<google::protobuf::Message*> children;
    if (field->is_repeated()) {
      for (int j = 0; j < reflection->FieldSize(*message, field); ++j)
        children.push_back(reflection->MutableRepeatedMessage(message, field, j));
    } else if (reflection->HasField(*message, field)) {
      children.push_back(reflection->MutableMessage(message, field));
    }
    for (auto* child : children) {
      if (field->message_type() == caffe::FillerParameter::descriptor())
        visit(static_cast<caffe::FillerParameter*>(child));
      else
        ForEachFiller(child, visit);
    }
  }
}

struct ParamCounts {
  long long learnable = 0, frozen = 0;
};

ParamCounts CountParams(const Net& net) {
  ParamCounts counts;
  for (size_t i = 0; i < net.learnable_params().size(); ++i)
    (net.params_lr()[i] != 0.f ? counts.learnable : counts.frozen) +=
        net.learnable_params()[i]->count();
  return counts;
}

std::unique_ptr<Net> BuildNet(caffe::NetParameter param, caffe::Phase phase) {
  param.mutable_state()->set_phase(phase);
  return std::make_unique<Net>(param, TestContext());
}

std::string ShapeString(const std::vector<int>& shape) {
  std::string s;
  for (int d : shape) s += (s.empty() ? "" : " ") + std::to_string(d);
  return s;
}

// The value of a "<label> <number> ms." line of `dlcaffe time`, or "?".
std::string TimeLine(const std::string& output, const std::string& label) {
  std::smatch m;
  if (std::regex_search(output, m, std::regex(label + ": ([0-9.]+) ms"))) return m[1];
  return "?";
}

}  // namespace

TEST(ModelZoo, FindsEveryReferenceNet) {
  const std::vector<std::string> files = ModelFiles();
  const std::set<std::string> found(files.begin(), files.end());
  for (const auto& [path, figures] : ExpectedDeployFigures())
    EXPECT_TRUE(found.count(path)) << path << " is missing from models/";
  for (const char* path :
       {"models/bvlc_alexnet/train_val.prototxt", "models/bvlc_alexnet/solver.prototxt",
        "models/bvlc_reference_caffenet/train_val.prototxt",
        "models/bvlc_reference_caffenet/solver.prototxt",
        "models/bvlc_googlenet/train_val.prototxt", "models/bvlc_googlenet/solver.prototxt",
        "models/bvlc_googlenet/quick_solver.prototxt",
        "models/cifar10_full/cifar10_full_train_test.prototxt",
        "models/cifar10_full/cifar10_full_solver.prototxt", "models/resnet50/train_val.prototxt",
        "models/resnet50/solver.prototxt"})
    EXPECT_TRUE(found.count(path)) << path << " is missing from models/";
}

TEST(ModelZoo, EverySolverParsesAndNamesAnExistingNetAndAKnownType) {
  const std::vector<std::string> solver_types = SolverRegistry::Types();
  int solvers = 0;
  for (const auto& path : ModelFiles()) {
    if (!IsSolver(path)) continue;
    ++solvers;
    SCOPED_TRACE(path);
    caffe::SolverParameter param;
    ASSERT_NO_THROW(param = ReadSolverParams(Abs(path)));
    EXPECT_TRUE(std::count(solver_types.begin(), solver_types.end(), param.type()))
        << "unknown solver type '" << param.type() << "'";
    std::vector<std::string> nets;
    if (param.has_net()) nets.push_back(param.net());
    if (param.has_train_net()) nets.push_back(param.train_net());
    for (const auto& n : param.test_net()) nets.push_back(n);
    EXPECT_FALSE(nets.empty()) << "the solver names no net file";
    for (const auto& net : nets) EXPECT_TRUE(FileExists(Abs(net))) << net << " does not exist";
  }
  EXPECT_GT(solvers, 0);
}

TEST(ModelZoo, EveryNetParsesWithRegisteredLayerTypesAndKnownFillers) {
  int nets = 0;
  for (const auto& path : ModelFiles()) {
    if (IsSolver(path)) continue;
    ++nets;
    SCOPED_TRACE(path);
    caffe::NetParameter param;
    ASSERT_NO_THROW(param = ReadNet(path));
    EXPECT_GT(param.layer_size(), 0);
    for (const auto& layer : param.layer())
      EXPECT_TRUE(LayerRegistry::Has(layer.type()))
          << "layer '" << layer.name() << "' has the unregistered type '" << layer.type() << "'";
    // Every filler is one FillBlob knows (tried on a small blob).
    ForEachFiller(&param, [&](caffe::FillerParameter* filler) {
      Blob blob(TestContext(), {2, 3, 3, 3});
      EXPECT_NO_THROW(FillBlob(*filler, &blob)) << "filler " << filler->ShortDebugString();
    });
  }
  EXPECT_GT(nets, 0);
}

TEST(ModelZoo, DeployNetsHaveThePublishedOutputShapeAndParameterCount) {
  const auto& expected = ExpectedDeployFigures();
  for (const auto& path : NetFiles(/*deploy=*/true)) {
    SCOPED_TRACE(path);
    const auto figures = expected.find(path);
    if (figures == expected.end()) {
      ADD_FAILURE() << "no expected figures for this deploy net: add its output shape and "
                       "parameter count to ExpectedDeployFigures()";
      continue;
    }
    std::unique_ptr<Net> net;
    ASSERT_NO_THROW(net = BuildNet(ReadNet(path), caffe::TEST));
    ASSERT_EQ(net->output_blobs().size(), figures->second.output_shapes.size());
    for (size_t i = 0; i < net->output_blobs().size(); ++i)
      EXPECT_EQ(ShapeString(net->output_blobs()[i]->shape()),
                ShapeString(figures->second.output_shapes[i]));
    const ParamCounts counts = CountParams(*net);
    EXPECT_EQ(counts.learnable, figures->second.learnable);
    EXPECT_EQ(counts.frozen, figures->second.frozen);
  }
}

// Each training net, its data layers replaced by Input layers of its deploy
// twin's image shape (batch 1: no dataset needed), builds in both phases; every
// layer it shares with the deploy net has the same parameter shapes.
TEST(ModelZoo, TrainingNetsBuildWithTheirDeployTwinsParameterShapes) {
  std::map<std::string, std::vector<std::string>> deploy_by_folder;
  for (const auto& path : NetFiles(/*deploy=*/true))
    deploy_by_folder[fs::path(path).parent_path().string()].push_back(path);
  int checked = 0;
  for (const auto& path : NetFiles(/*deploy=*/false)) {
    SCOPED_TRACE(path);
    const auto& twins = deploy_by_folder[fs::path(path).parent_path().string()];
    if (twins.size() != 1) {
      // Without a single deploy net there is no input shape to build it with.
      std::printf("[ model    ] %s: not built (%zu deploy nets in its folder)\n", path.c_str(),
                  twins.size());
      continue;
    }
    caffe::NetParameter deploy_param = ReadNet(twins[0]);
    caffe::InputParameter* deploy_input = deploy_param.mutable_layer(0)->mutable_input_param();
    for (auto& shape : *deploy_input->mutable_shape()) shape.set_dim(0, 1);
    const caffe::BlobShape image_shape = deploy_input->shape(0);

    caffe::NetParameter train_param = ReadNet(path);
    for (auto& layer : *train_param.mutable_layer()) {
      if (layer.type() != "Data") continue;
      caffe::LayerParameter input;
      input.set_name(layer.name());
      input.set_type("Input");
      *input.mutable_top() = layer.top();
      *input.mutable_include() = layer.include();
      if (layer.top_size() == 2) {  // an image and its label
        *input.mutable_input_param()->add_shape() = image_shape;
        input.mutable_input_param()->add_shape()->add_dim(1);
      } else {
        // A language model's record: its tokens and next tokens (2 x 1 x T,
        // convert_text's Datum) for the deploy net's (1, T) token ids.
        ASSERT_EQ(layer.top_size(), 1) << "data layer '" << layer.name() << "'";
        ASSERT_EQ(image_shape.dim_size(), 2) << "data layer '" << layer.name() << "'";
        caffe::BlobShape* record = input.mutable_input_param()->add_shape();
        for (int d : {1, 2, 1}) record->add_dim(d);
        record->add_dim(image_shape.dim(1));
      }
      layer = input;
    }
    // Only shapes are compared here: constant fillers save drawing AlexNet's 61
    // million gaussians per build (EveryNetParsesWithRegisteredLayerTypesAndKnownFillers
    // tries every filler).
    const auto constant = [](caffe::FillerParameter* filler) { filler->Clear(); };
    ForEachFiller(&deploy_param, constant);
    ForEachFiller(&train_param, constant);
    std::unique_ptr<Net> deploy;
    ASSERT_NO_THROW(deploy = BuildNet(deploy_param, caffe::TEST));
    for (caffe::Phase phase : {caffe::TRAIN, caffe::TEST}) {
      SCOPED_TRACE(phase == caffe::TRAIN ? "TRAIN" : "TEST");
      std::unique_ptr<Net> train;
      ASSERT_NO_THROW(train = BuildNet(train_param, phase));
      for (size_t i = 0; i < train->layers().size(); ++i) {
        const std::string& name = train->layer_names()[i];
        if (!deploy->has_layer(name)) continue;
        const auto& mine = train->layers()[i]->blobs();
        const auto& theirs = deploy->layer_by_name(name)->blobs();
        ASSERT_EQ(mine.size(), theirs.size()) << "layer '" << name << "'";
        for (size_t b = 0; b < mine.size(); ++b)
          EXPECT_EQ(mine[b]->shape_string(), theirs[b]->shape_string())
              << "layer '" << name << "' blob " << b;
      }
      const auto train_figures = ExpectedTrainLearnable().find(path);
      if (train_figures != ExpectedTrainLearnable().end()) {
        EXPECT_EQ(CountParams(*train).learnable, train_figures->second);
      }
    }
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// `dlcaffe time` on a batch-1 copy of every deploy net (their files keep
// Caffe's batch sizes; one image keeps the suite fast on CI's two cores). The
// copy sets force_backward: a deploy net has no loss, so without it the
// backward pass would run nothing; with it every layer's backward runs at the
// net's real shapes, as in training.
TEST(ModelZoo, DeployNetsRunUnderDlcaffeTime) {
  const std::string dir = TempDir();
  ASSERT_FALSE(dir.empty());
  for (const auto& path : NetFiles(/*deploy=*/true)) {
    SCOPED_TRACE(path);
    caffe::NetParameter param = ReadNet(path);
    caffe::InputParameter* input = param.mutable_layer(0)->mutable_input_param();
    for (auto& shape : *input->mutable_shape()) shape.set_dim(0, 1);
    param.set_force_backward(true);
    std::string copy_name = path;
    std::replace(copy_name.begin(), copy_name.end(), '/', '_');
    const std::string copy = dir + "/" + copy_name;
    WriteProtoToTextFile(param, copy);

    const auto start = std::chrono::steady_clock::now();
    const ToolResult r = RunDlcaffe("time --model='" + copy + "' --iterations=1");
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("Average Forward pass"), std::string::npos) << r.output;
    // One line per net for the log: the tool's per-pass averages at batch 1.
    std::printf("[ model    ] %-52s forward %8s ms  backward %8s ms  (run %.1f s)\n", path.c_str(),
                TimeLine(r.output, "Average Forward pass").c_str(),
                TimeLine(r.output, "Average Backward pass").c_str(), seconds);
  }
}

}  // namespace test
}  // namespace dlcaffe
