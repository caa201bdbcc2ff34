#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "dlcaffe/data/data_state.hpp"
#include "dlcaffe/io.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "dlcaffe/solver.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"
#include "util/error_of.hpp"

namespace dlcaffe {
namespace test {

namespace {

// Pixel j (in OpenCV's interleaved H×W×C order) of image i.
uint8_t PixelOf(int i, int j) { return static_cast<uint8_t>((i * 37 + j * 11) % 256); }

cv::Mat MakeImage(int i, int height, int width, int channels) {
  cv::Mat image(height, width, CV_8UC(channels));
  for (int j = 0; j < height * width * channels; ++j) image.data[j] = PixelOf(i, j);
  return image;
}

void WriteImage(const std::string& path, const cv::Mat& image) {
  ASSERT_TRUE(cv::imwrite(path, image)) << path;
}

void WriteText(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// `count` PNG images img<i>.png of height × width × channels in `dir`, and a
// list "img<i>.png <label_base + i>".
std::string MakeImages(const std::string& dir, int count, int height, int width, int channels,
                       int label_base = 100) {
  std::string list;
  for (int i = 0; i < count; ++i) {
    const std::string name = "img" + std::to_string(i) + ".png";
    WriteImage(dir + "/" + name, MakeImage(i, height, width, channels));
    list += name + " " + std::to_string(label_base + i) + "\n";
  }
  WriteText(dir + "/list.txt", list);
  return dir + "/list.txt";
}

std::string LayerText(const std::string& source, const std::string& root, int batch_size,
                      const std::string& extra = "", const std::string& phase = "TEST") {
  return "name: 'images' type: 'ImageData' phase: " + phase + " image_data_param { source: '" +
         source + "' root_folder: '" + root + "' batch_size: " + std::to_string(batch_size) + " " +
         extra + " }";
}

struct Batch {
  std::vector<int> shape;
  std::vector<float> data, label;
};

Batch Next(Layer& layer, Blob& data, Blob& label) {
  layer.Reshape({}, {&data, &label});
  layer.Forward({}, {&data, &label});
  return {data.shape(), data.ReadData(), label.ReadData()};
}

// Caffe's layout of an OpenCV image: C×H×W, channels in OpenCV's (BGR) order.
void ExpectImage(const float* got, const cv::Mat& want, float scale, const std::string& what) {
  const int C = want.channels(), H = want.rows, W = want.cols;
  for (int c = 0; c < C; ++c)
    for (int h = 0; h < H; ++h)
      for (int w = 0; w < W; ++w)
        ASSERT_EQ(got[(c * H + h) * W + w], scale * want.ptr<uint8_t>(h)[w * C + c])
            << what << " c " << c << " h " << h << " w " << w;
}

ResumableDataLayer* Resumable(Layer* layer) {
  auto* resumable = dynamic_cast<ResumableDataLayer*>(layer);
  EXPECT_NE(resumable, nullptr);
  return resumable;
}

}  // namespace

TEST(ImageDataLayer, DeliversListInOrderAndWrapsAround) {
  const std::string dir = TempDir();
  const int num = 5, batch = 2, H = 4, W = 5, C = 3;
  const std::string list = MakeImages(dir, num, H, W, C);
  auto layer = MakeLayer(LayerText(list, dir + "/", batch) + " transform_param { scale: 0.5 }");
  Blob data(TestContext()), label(TestContext());
  layer->SetUp({}, {&data, &label});
  EXPECT_EQ(data.shape(), (std::vector<int>{batch, C, H, W}));
  EXPECT_EQ(label.shape(), (std::vector<int>{batch}));

  // Images 0 1 | 2 3 | 4 0 | 1 2
  for (int b = 0; b < 4; ++b) {
    const Batch got = Next(*layer, data, label);
    ASSERT_EQ(got.shape, (std::vector<int>{batch, C, H, W}));
    for (int n = 0; n < batch; ++n) {
      const int i = (b * batch + n) % num;
      EXPECT_EQ(got.label[n], 100 + i) << "batch " << b << " image " << n;
      ExpectImage(&got.data[n * C * H * W], MakeImage(i, H, W, C), 0.5f,
                  "batch " + std::to_string(b) + " image " + std::to_string(n));
    }
  }
  const DataReaderState state = Resumable(layer.get())->ReaderState();
  EXPECT_EQ(state.records_read, 8u);
  EXPECT_EQ(state.epoch, 1u);
  EXPECT_EQ(state.next_key, "position 3 of 5");
}

TEST(ImageDataLayer, ListFormatsAndLegacyScale) {
  // Paths with spaces (the label follows the last blank, as in Caffe), tabs,
  // Windows line ends, blank lines, negative labels, no root_folder.
  const std::string dir = TempDir();
  WriteImage(dir + "/a b.png", MakeImage(0, 2, 3, 1));
  WriteImage(dir + "/c.png", MakeImage(1, 2, 3, 1));
  WriteText(dir + "/list.txt", dir + "/a b.png 7\r\n\n   \n" + dir + "/c.png\t-3  \n");
  auto layer = MakeLayer(LayerText(dir + "/list.txt", "", 2, "is_color: false scale: 2"));
  Blob data(TestContext()), label(TestContext());
  layer->SetUp({}, {&data, &label});
  const Batch got = Next(*layer, data, label);
  EXPECT_EQ(got.shape, (std::vector<int>{2, 1, 2, 3}));
  EXPECT_EQ(got.label, (std::vector<float>{7, -3}));
  ExpectImage(&got.data[0], MakeImage(0, 2, 3, 1), 2.f, "a b.png");
  ExpectImage(&got.data[6], MakeImage(1, 2, 3, 1), 2.f, "c.png");
}

TEST(ImageDataLayer, GrayAndColorDecodingAndResize) {
  const std::string dir = TempDir();
  // A gray image of constant 2 × 2 blocks: halving it with bilinear
  // interpolation gives exactly one pixel per block.
  const int H = 6, W = 8;
  cv::Mat gray(H, W, CV_8UC1);
  for (int h = 0; h < H; ++h)
    for (int w = 0; w < W; ++w)
      gray.ptr<uint8_t>(h)[w] = static_cast<uint8_t>(17 * (h / 2) + 5 * (w / 2));
  WriteImage(dir + "/gray.png", gray);
  WriteText(dir + "/list.txt", "gray.png 4\n");
  const std::string list = dir + "/list.txt", root = dir + "/";
  Blob data(TestContext()), label(TestContext());
  {
    auto layer = MakeLayer(LayerText(list, root, 1, "is_color: false new_height: 3 new_width: 4"));
    layer->SetUp({}, {&data, &label});
    EXPECT_EQ(data.shape(), (std::vector<int>{1, 1, 3, 4}));
    const Batch got = Next(*layer, data, label);
    for (int h = 0; h < 3; ++h)
      for (int w = 0; w < 4; ++w) EXPECT_EQ(got.data[h * 4 + w], 17 * h + 5 * w) << h << " " << w;
  }
  {
    // is_color (the default) turns a gray file into three equal channels.
    auto layer = MakeLayer(LayerText(list, root, 1));
    layer->SetUp({}, {&data, &label});
    const Batch got = Next(*layer, data, label);
    ASSERT_EQ(got.shape, (std::vector<int>{1, 3, H, W}));
    for (int c = 0; c < 3; ++c)
      for (int h = 0; h < H; ++h)
        for (int w = 0; w < W; ++w)
          ASSERT_EQ(got.data[(c * H + h) * W + w], gray.ptr<uint8_t>(h)[w]);
  }
  {
    // Upscaling a constant image keeps the constant.
    auto layer = MakeLayer(LayerText(list, root, 1, "new_height: 13 new_width: 7") +
                           " transform_param { crop_size: 5 }");
    WriteImage(dir + "/gray.png", cv::Mat(3, 2, CV_8UC3, cv::Scalar(9, 60, 200)));
    layer->SetUp({}, {&data, &label});
    const Batch got = Next(*layer, data, label);
    ASSERT_EQ(got.shape, (std::vector<int>{1, 3, 5, 5}));
    for (int i = 0; i < 75; ++i) ASSERT_EQ(got.data[i], (i < 25 ? 9 : i < 50 ? 60 : 200)) << i;
  }
}

TEST(ImageDataLayer, JpegFilesAndBatchesOfDifferentSizes) {
  // Without resize each batch takes the size of its images, as in Caffe.
  const std::string dir = TempDir();
  const int sizes[3][2] = {{4, 6}, {7, 3}, {5, 5}};
  std::string list;
  for (int i = 0; i < 3; ++i) {
    WriteImage(dir + "/" + std::to_string(i) + ".jpg", MakeImage(i, sizes[i][0], sizes[i][1], 3));
    list += std::to_string(i) + ".jpg " + std::to_string(i) + "\n";
  }
  WriteText(dir + "/list.txt", list);
  auto layer = MakeLayer(LayerText(dir + "/list.txt", dir + "/", 1));
  Blob data(TestContext()), label(TestContext());
  layer->SetUp({}, {&data, &label});
  for (int b = 0; b < 4; ++b) {
    const int i = b % 3;
    const Batch got = Next(*layer, data, label);
    ASSERT_EQ(got.shape, (std::vector<int>{1, 3, sizes[i][0], sizes[i][1]})) << "batch " << b;
    EXPECT_EQ(got.label[0], i);
    // JPEG is lossy: the reference is OpenCV's own decoding of the file.
    ExpectImage(got.data.data(), cv::imread(dir + "/" + std::to_string(i) + ".jpg"), 1.f,
                "batch " + std::to_string(b));
  }
}

// `num` gray 2 x 2 images i.png of constant value i * 10, listed as "i.png i".
std::string MakeConstantImages(const std::string& dir, int num) {
  std::string list;
  for (int i = 0; i < num; ++i) {
    WriteImage(dir + "/" + std::to_string(i) + ".png", cv::Mat(2, 2, CV_8UC1, cv::Scalar(i * 10)));
    list += std::to_string(i) + ".png " + std::to_string(i) + "\n";
  }
  WriteText(dir + "/list.txt", list);
  return dir + "/list.txt";
}

// The labels of `batches` batches, from a layer of MakeConstantImages.
std::vector<int> LabelSequence(const std::string& text, uint64_t seed, int batches) {
  TestContext().Seed(seed);
  auto layer = MakeLayer(text);
  Blob data(TestContext()), label(TestContext());
  layer->SetUp({}, {&data, &label});
  std::vector<int> labels;
  for (int b = 0; b < batches; ++b) {
    const Batch got = Next(*layer, data, label);
    const int per_image = static_cast<int>(got.data.size() / got.label.size());
    for (size_t n = 0; n < got.label.size(); ++n) {
      labels.push_back(static_cast<int>(got.label[n]));
      // Each image still goes with its label (image i is constant i * 10).
      EXPECT_EQ(got.data[n * per_image], got.label[n] * 10);
    }
  }
  return labels;
}

TEST(ImageDataLayer, ShuffleIsSeededAndRedrawnEveryEpoch) {
  const std::string dir = TempDir();
  const int num = 7;
  const std::string list = MakeConstantImages(dir, num);
  // Batches of 3 straddle the epochs' ends: 4 epochs in 28 images.
  const std::string text = LayerText(list, dir + "/", 3, "shuffle: true");
  const std::vector<int> labels = LabelSequence(text, 11, 10);
  std::vector<std::vector<int>> epochs;
  for (int e = 0; e < 4; ++e) {
    std::vector<int> epoch(labels.begin() + e * num, labels.begin() + (e + 1) * num);
    std::vector<int> sorted = epoch;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<int>{0, 1, 2, 3, 4, 5, 6})) << "epoch " << e;
    epochs.push_back(epoch);
  }
  // Shuffled, and differently in each epoch (with this seed; the chance that
  // two of 7! orders coincide is small).
  EXPECT_NE(epochs[0], (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
  for (int a = 0; a < 4; ++a)
    for (int b = a + 1; b < 4; ++b) EXPECT_NE(epochs[a], epochs[b]) << a << " " << b;
  // The same seed gives the same orders; another seed others.
  EXPECT_EQ(LabelSequence(text, 11, 10), labels);
  EXPECT_NE(LabelSequence(text, 12, 10), labels);
  // Without shuffle: the list order.
  const std::vector<int> plain = LabelSequence(LayerText(list, dir + "/", 3), 11, 3);
  EXPECT_EQ(plain, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 0, 1}));
}

// Data-parallel training: replicas read disjoint shares of each epoch's
// shuffled order (positions r, r + R, ... of the endless run of epochs),
// which all of them draw alike from the shared seed, whatever their own
// generators; together they read every image of an epoch once.
TEST(ImageDataLayer, ReplicasReadDisjointSharesOfOneShuffledOrder) {
  const std::string dir = TempDir();
  const int num = 7, replicas = 2, batch = 2, batches = 4;
  const std::string list = MakeConstantImages(dir, num);
  const std::string text =
      LayerText(list, dir + "/", batch, "shuffle: true", "TRAIN");
  // labels_by_epoch[e][p]: the label at position p of epoch e's order.
  std::vector<std::vector<int>> labels_by_epoch(3, std::vector<int>(num, -1));
  for (int r = 0; r < replicas; ++r) {
    auto ctx = Context::Create("");
    ctx->set_replica({r, replicas, 4242});
    ctx->Seed(100 + r);  // replicas' own generators differ
    auto layer = LayerRegistry::Create(LayerParam(text), *ctx);
    Blob data(*ctx), label(*ctx);
    layer->SetUp({}, {&data, &label});
    for (int b = 0; b < batches; ++b) {
      const Batch got = Next(*layer, data, label);
      for (int n = 0; n < batch; ++n) {
        const int global = r + (b * batch + n) * replicas;
        int& slot = labels_by_epoch[global / num][global % num];
        EXPECT_EQ(slot, -1) << "position " << global << " read twice";
        slot = static_cast<int>(got.label[n]);
        const size_t per_image = got.data.size() / got.label.size();
        EXPECT_EQ(got.data[n * per_image], got.label[n] * 10);  // image and label together
      }
    }
  }
  // 16 positions: epochs 0 and 1 complete.
  for (int e = 0; e < 2; ++e) {
    std::vector<int> sorted = labels_by_epoch[e];
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<int>{0, 1, 2, 3, 4, 5, 6})) << "epoch " << e;
  }
  EXPECT_NE(labels_by_epoch[0], (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_NE(labels_by_epoch[0], labels_by_epoch[1]);
}

TEST(ImageDataLayer, RandSkipStartsInsideTheList) {
  const std::string dir = TempDir();
  const std::string list = MakeConstantImages(dir, 6);
  std::vector<int> starts;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const std::vector<int> labels =
        LabelSequence(LayerText(list, dir + "/", 2, "rand_skip: 4"), seed, 2);
    // A consecutive run (wrapping) from a start below rand_skip.
    EXPECT_LT(labels[0], 4);
    for (size_t i = 1; i < labels.size(); ++i) EXPECT_EQ(labels[i], (labels[0] + int(i)) % 6);
    starts.push_back(labels[0]);
  }
  EXPECT_NE(std::count(starts.begin(), starts.end(), starts[0]), 6) << "the skip never varies";
  // A skip that can reach past the list is an error when it does.
  const std::string error = ErrorOf([&] {
    for (uint64_t seed = 1; seed <= 20; ++seed)
      LabelSequence(LayerText(list, dir + "/", 2, "rand_skip: 100"), seed, 1);
  });
  EXPECT_NE(error.find("lists only 6 images"), std::string::npos) << error;
}

TEST(ImageDataLayer, ExactResumeOfShuffleCropsAndMirrors) {
  const std::string dir = TempDir();
  const std::string list = MakeImages(dir, 7, 6, 7, 3);
  const std::string text = LayerText(list, dir + "/", 3, "shuffle: true", "TRAIN") +
                           " transform_param { crop_size: 4 mirror: true }";
  auto layer = MakeLayer(text);
  Blob data(TestContext()), label(TestContext());
  layer->SetUp({}, {&data, &label});
  Next(*layer, data, label);
  Next(*layer, data, label);
  // Prefetched batches beyond the second do not count.
  const std::string saved = Resumable(layer.get())->ReaderState().Serialize();
  std::vector<Batch> expected;
  for (int i = 0; i < 6; ++i) expected.push_back(Next(*layer, data, label));  // 2 reshuffles

  auto other = MakeLayer(text);  // seeded differently by the shared context
  Blob data2(TestContext()), label2(TestContext());
  other->SetUp({}, {&data2, &label2});
  Resumable(other.get())->RestoreReaderState(DataReaderState::Parse(saved));
  Resumable(layer.get())->RestoreReaderState(DataReaderState::Parse(saved));
  for (int i = 0; i < 6; ++i) {
    const Batch a = Next(*other, data2, label2), b = Next(*layer, data, label);
    EXPECT_EQ(a.label, expected[i].label) << "batch " << i;
    EXPECT_EQ(a.data, expected[i].data) << "batch " << i;
    EXPECT_EQ(b.label, expected[i].label) << "batch " << i;
    EXPECT_EQ(b.data, expected[i].data) << "batch " << i;
  }
  EXPECT_EQ(Resumable(layer.get())->ReaderState(), Resumable(other.get())->ReaderState());

  // A state of another list, or of an unshuffled reader, is refused and
  // leaves the reader as it was.
  DataReaderState state = Resumable(layer.get())->ReaderState();
  const std::vector<float> before = Next(*other, data2, label2).label;
  state.next_key = "position 1 of 9 order 5";
  std::string error = ErrorOf([&] { Resumable(layer.get())->RestoreReaderState(state); });
  EXPECT_NE(error.find("list of 9 images"), std::string::npos) << error;
  state.next_key = "position 1 of 7";
  error = ErrorOf([&] { Resumable(layer.get())->RestoreReaderState(state); });
  EXPECT_NE(error.find("cannot restore"), std::string::npos) << error;
  EXPECT_EQ(Next(*layer, data, label).label, before);
}

// The reader state goes through a .solverstate: N iterations, snapshot,
// restore and N more give the weights of 2N uninterrupted iterations, bit for
// bit, with shuffling, random crops and mirrors.
TEST(ImageDataLayer, ExactResumeThroughTheSolver) {
  const std::string dir = TempDir();
  std::string list;
  for (int i = 0; i < 11; ++i) {  // 11 images: batches of 4 straddle epochs
    WriteImage(dir + "/" + std::to_string(i) + ".png", MakeImage(i, 5, 6, 3));
    list += std::to_string(i) + ".png " + std::to_string(i % 3) + "\n";
  }
  WriteText(dir + "/list.txt", list);
  auto params = [&](const std::string& prefix) {
    caffe::SolverParameter p;
    ReadProtoFromTextString(
        "net_param { "
        "layer { name: 'images' type: 'ImageData' top: 'data' top: 'label' "
        "  transform_param { scale: 0.004 crop_size: 4 mirror: true } "
        "  image_data_param { source: '" +
            dir + "/list.txt' root_folder: '" + dir +
            "/' "
            "  batch_size: 4 shuffle: true } } "
            "layer { name: 'ip' type: 'InnerProduct' bottom: 'data' top: 'ip' "
            "  inner_product_param { num_output: 3 weight_filler { type: 'xavier' } } } "
            "layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' top: 'loss' "
            "} "
            "} type: 'SGD' base_lr: 0.1 lr_policy: 'fixed' momentum: 0.9 max_iter: 100 display: 0 "
            "random_seed: 5 snapshot_after_train: false snapshot_prefix: '" +
            prefix + "'",
        "solver", &p);
    return p;
  };
  auto weights = [](Solver& solver) {
    std::vector<std::vector<float>> w;
    for (Blob* p : solver.net().learnable_params()) w.push_back(p->ReadData());
    return w;
  };
  const int N = 5;
  std::vector<std::vector<float>> uninterrupted;
  {
    auto solver = SolverRegistry::Create(params(dir + "/full"), TestContext());
    solver->Step(2 * N);
    uninterrupted = weights(*solver);
  }
  {
    auto first = SolverRegistry::Create(params(dir + "/half"), TestContext());
    first->Step(N);
    first->Snapshot();
  }
  TestContext().Seed(999);  // the restore must not depend on the context's generator
  auto resumed = SolverRegistry::Create(params(dir + "/half"), TestContext());
  resumed->Restore(dir + "/half_iter_" + std::to_string(N) + ".solverstate");
  resumed->Step(N);
  EXPECT_EQ(weights(*resumed), uninterrupted);
}

TEST(ImageDataLayer, ClearErrors) {
  const std::string dir = TempDir();
  Blob data(TestContext()), label(TestContext());
  auto setup_error = [&](const std::string& text) {
    return ErrorOf([&] { MakeLayer(text)->SetUp({}, {&data, &label}); });
  };
  std::string error = setup_error(LayerText(dir + "/missing.txt", "", 1));
  EXPECT_NE(error.find("layer 'images' (ImageData): "), std::string::npos) << error;
  EXPECT_NE(error.find("cannot open the image list " + dir + "/missing.txt"), std::string::npos)
      << error;

  WriteImage(dir + "/a.png", MakeImage(0, 2, 2, 3));
  WriteText(dir + "/no_label.txt", "a.png 1\na.png\n");
  error = setup_error(LayerText(dir + "/no_label.txt", dir + "/", 1));
  EXPECT_NE(error.find("line 2 of the image list " + dir + "/no_label.txt"), std::string::npos)
      << error;
  EXPECT_NE(error.find("'a.png'"), std::string::npos) << error;

  WriteText(dir + "/bad_label.txt", "a.png 1\n\na.png 1x\n");
  error = setup_error(LayerText(dir + "/bad_label.txt", dir + "/", 1));
  EXPECT_NE(error.find("line 3 of the image list"), std::string::npos) << error;
  EXPECT_NE(error.find("integer label"), std::string::npos) << error;

  WriteText(dir + "/empty.txt", "\n\n");
  error = setup_error(LayerText(dir + "/empty.txt", dir + "/", 1));
  EXPECT_NE(error.find("names no images"), std::string::npos) << error;

  // A missing image at setup, and one inside a later batch.
  WriteText(dir + "/missing_image.txt", "nothere.png 1\n");
  error = setup_error(LayerText(dir + "/missing_image.txt", dir + "/", 1));
  EXPECT_NE(error.find("cannot read image " + dir + "/nothere.png"), std::string::npos) << error;
  EXPECT_NE(error.find("line 1 of " + dir + "/missing_image.txt"), std::string::npos) << error;

  WriteText(dir + "/not_an_image.png", "hello");
  WriteText(dir + "/later.txt", "a.png 1\na.png 2\nnot_an_image.png 3\n");
  auto layer = MakeLayer(LayerText(dir + "/later.txt", dir + "/", 2));
  layer->SetUp({}, {&data, &label});
  EXPECT_EQ(Next(*layer, data, label).label, (std::vector<float>{1, 2}));
  error = ErrorOf([&] { Next(*layer, data, label); });
  EXPECT_NE(error.find("cannot read image " + dir + "/not_an_image.png"), std::string::npos)
      << error;
  EXPECT_NE(error.find("line 3 of " + dir + "/later.txt"), std::string::npos) << error;
  EXPECT_EQ(ErrorOf([&] { Next(*layer, data, label); }), error);  // stays failed

  WriteImage(dir + "/b.png", MakeImage(0, 3, 2, 3));
  WriteText(dir + "/sizes.txt", "a.png 1\nb.png 2\n");
  layer = MakeLayer(LayerText(dir + "/sizes.txt", dir + "/", 2));
  layer->SetUp({}, {&data, &label});
  error = ErrorOf([&] { Next(*layer, data, label); });
  EXPECT_NE(error.find("image b.png (line 2 of " + dir + "/sizes.txt) is 3 x 3 x 2"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("a.png (line 1"), std::string::npos) << error;

  error = setup_error(LayerText(dir + "/sizes.txt", dir + "/", 1, "new_height: 4"));
  EXPECT_NE(error.find("set new_height and new_width together"), std::string::npos) << error;
  error = setup_error(LayerText(dir + "/sizes.txt", dir + "/", 0));
  EXPECT_NE(error.find("batch_size must be positive"), std::string::npos) << error;
  error = setup_error(LayerText(dir + "/sizes.txt", dir + "/", 1) +
                      " transform_param { crop_size: 3 }");
  EXPECT_NE(error.find("crop_size 3 is larger than the 2 x 2 images"), std::string::npos) << error;
  error =
      ErrorOf([&] { MakeLayer(LayerText(dir + "/sizes.txt", dir + "/", 1))->SetUp({}, {&data}); });
  EXPECT_NE(error.find("produces 2 top blob(s), got 1"), std::string::npos) << error;
}

}  // namespace test
}  // namespace dlcaffe
