// AnnotatedData on records written here: images of solid coloured
// rectangles (one colour per label) on grey, with their boxes. Without
// augmentation the tops are the records; with SSD's (zoom-out, sampled
// crops, resize, mirror) every emitted box must still frame its rectangle in
// the image the data top holds, which checks the geometry of each step
// against the pixels; brightness distortion moves the pixels, not the boxes.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "caffe.pb.h"
#include "dlcaffe/data/data_state.hpp"
#include "dlcaffe/error.hpp"
#include "util/datum_database.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

constexpr int kHeight = 60, kWidth = 80, kGrey = 128;
// Colour of label l (BGR), l = 1, 2, 3.
const std::array<std::array<int, 3>, 4> kColours = {{{0, 0, 0}, {255, 0, 0}, {0, 255, 0}, {0, 0, 255}}};

struct Rect {
  int label, x0, y0, x1, y1;  // pixels [x0, x1) x [y0, y1)
};

// Image i: two or three rectangles at places that depend on i; the last
// one of label 3 is difficult.
std::vector<Rect> RectsOf(int i) {
  std::vector<Rect> rects = {{1, 4 + i % 7, 6 + i % 5, 30 + i % 7, 26 + i % 5},
                             {2, 40 - i % 6, 30, 70 - i % 6, 52 - i % 4}};
  if (i % 2 == 0) rects.push_back({3, 50, 4, 74, 20 + i % 3});
  return rects;
}

std::string MakeRecord(int i) {
  caffe::AnnotatedDatum a;
  a.set_type(caffe::AnnotatedDatum::BBOX);
  caffe::Datum* d = a.mutable_datum();
  d->set_channels(3), d->set_height(kHeight), d->set_width(kWidth), d->set_label(i);
  std::string pixels(size_t(3) * kHeight * kWidth, char(kGrey));
  for (const Rect& r : RectsOf(i))
    for (int c = 0; c < 3; ++c)
      for (int y = r.y0; y < r.y1; ++y)
        for (int x = r.x0; x < r.x1; ++x)
          pixels[(size_t(c) * kHeight + y) * kWidth + x] = char(kColours[r.label][c]);
  d->set_data(pixels);
  for (const Rect& r : RectsOf(i)) {
    caffe::AnnotationGroup* g = a.add_annotation_group();
    g->set_group_label(r.label);
    caffe::NormalizedBBox* b = g->add_annotation()->mutable_bbox();
    b->set_xmin(float(r.x0) / kWidth), b->set_ymin(float(r.y0) / kHeight);
    b->set_xmax(float(r.x1) / kWidth), b->set_ymax(float(r.y1) / kHeight);
    b->set_difficult(r.label == 3);
  }
  return a.SerializeAsString();
}

std::string Database(int count) {
  const std::string path = TempDir() + "/annotated_db";
  WriteRecordDatabase(path, count, MakeRecord);
  return path;
}

struct Batch {
  std::vector<int> shape;
  std::vector<float> data, rows;
};

// The layer's first `batches` batches.
std::vector<Batch> RunBatches(const std::string& layer_text, int batches) {
  auto layer = MakeLayer(layer_text);
  Blob data(TestContext()), label(TestContext());
  layer->SetUp({}, {&data, &label});
  std::vector<Batch> out;
  for (int b = 0; b < batches; ++b) {
    layer->Forward({}, {&data, &label});
    out.push_back({data.shape(), data.ReadData(), label.ReadData()});
  }
  return out;
}

// The bounding box (pixels, [x0, x1) x [y0, y1)) of label l's colour in
// image n of the batch (the mean 128 added back); false when absent.
bool ColourBox(const Batch& b, int n, int l, Rect* found) {
  const int H = b.shape[2], W = b.shape[3];
  int x0 = W, y0 = H, x1 = -1, y1 = -1;
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      bool match = true;
      for (int c = 0; c < 3; ++c)
        match = match && std::lround(b.data[((size_t(n) * 3 + c) * H + y) * W + x] + kGrey) ==
                             kColours[l][c];
      if (!match) continue;
      x0 = std::min(x0, x), y0 = std::min(y0, y), x1 = std::max(x1, x + 1), y1 = std::max(y1, y + 1);
    }
  *found = {l, x0, y0, x1, y1};
  return x1 > 0;
}

std::string Layer(const std::string& source, const std::string& phase, const std::string& transform,
                  const std::string& samplers = "") {
  return "name: 'data' type: 'AnnotatedData' top: 'data' top: 'label' include { phase: " + phase +
         " } data_param { source: '" + source + "' batch_size: 4 backend: LMDB } transform_param { " +
         transform + " } annotated_data_param { " + samplers + " }";
}

}  // namespace

TEST(AnnotatedData, WithoutAugmentationTheTopsAreTheRecords) {
  const std::string db = Database(6);
  const std::vector<Batch> batches = RunBatches(Layer(db, "TEST", "mean_value: 128"), 2);
  for (int b = 0; b < 2; ++b) {
    ASSERT_EQ(batches[b].shape, (std::vector<int>{4, 3, kHeight, kWidth}));
    std::vector<float> expected;
    for (int n = 0; n < 4; ++n) {
      const int i = (4 * b + n) % 6;
      Rect found;
      for (const Rect& r : RectsOf(i)) {
        expected.insert(expected.end(), {float(n), float(r.label), 0.f, float(r.x0) / kWidth,
                                         float(r.y0) / kHeight, float(r.x1) / kWidth,
                                         float(r.y1) / kHeight, r.label == 3 ? 1.f : 0.f});
        ASSERT_TRUE(ColourBox(batches[b], n, r.label, &found));
        EXPECT_EQ(found.x0, r.x0);
        EXPECT_EQ(found.y1, r.y1);
      }
    }
    EXPECT_EQ(batches[b].rows, expected);
  }
}

// Every emitted box frames its colour in the augmented image (within the
// resize's rounding), and every rectangle seen whole has its box.
TEST(AnnotatedData, AugmentedBoxesFrameTheirObjects) {
  const std::string db = Database(7);
  const std::string transform =
      "mirror: true mean_value: 128 resize_param { prob: 1 resize_mode: WARP height: 48 width: 64 "
      "interp_mode: NEAREST } emit_constraint { emit_type: CENTER } "
      "expand_param { prob: 0.5 max_expand_ratio: 2.0 }";
  const std::string samplers =
      "batch_sampler { max_sample: 1 max_trials: 1 } "
      "batch_sampler { sampler { min_scale: 0.3 max_scale: 1.0 min_aspect_ratio: 0.5 "
      "max_aspect_ratio: 2.0 } sample_constraint { min_jaccard_overlap: 0.1 } max_sample: 1 "
      "max_trials: 50 } "
      "batch_sampler { sampler { min_scale: 0.3 max_scale: 1.0 min_aspect_ratio: 0.5 "
      "max_aspect_ratio: 2.0 } sample_constraint { min_object_coverage: 0.9 } max_sample: 1 "
      "max_trials: 50 }";
  const std::vector<Batch> batches = RunBatches(Layer(db, "TRAIN", transform, samplers), 10);
  int boxes = 0, mirrored = 0, cut = 0;
  for (const Batch& b : batches) {
    ASSERT_EQ(b.shape, (std::vector<int>{4, 3, 48, 64}));
    ASSERT_EQ(b.rows.size() % 8, 0u);
    for (size_t r = 0; r + 8 <= b.rows.size(); r += 8) {
      const float* row = &b.rows[r];
      if (row[0] < 0) continue;  // no box in the batch
      const int n = int(row[0]), l = int(row[1]);
      SCOPED_TRACE("image " + std::to_string(n) + " label " + std::to_string(l));
      ASSERT_TRUE(l >= 1 && l <= 3);
      EXPECT_EQ(row[7], l == 3 ? 1.f : 0.f);
      Rect found;
      ASSERT_TRUE(ColourBox(b, n, l, &found));
      // The visible part of the rectangle is the box (one pixel for the
      // nearest-neighbour resize's rounding on each side).
      EXPECT_NEAR(row[3] * 64, found.x0, 1.01);
      EXPECT_NEAR(row[4] * 48, found.y0, 1.01);
      EXPECT_NEAR(row[5] * 64, found.x1, 1.01);
      EXPECT_NEAR(row[6] * 48, found.y1, 1.01);
      ++boxes;
    }
    for (int n = 0; n < 4; ++n)
      for (int l = 1; l <= 3; ++l) {
        Rect found;
        if (!ColourBox(b, n, l, &found)) continue;
        const bool whole = found.x0 > 0 && found.y0 > 0 && found.x1 < 64 && found.y1 < 48;
        bool listed = false;
        for (size_t r = 0; r + 8 <= b.rows.size(); r += 8)
          listed = listed || (b.rows[r] == n && b.rows[r + 1] == l);
        if (whole) {
          EXPECT_TRUE(listed) << "image " << n << " shows label " << l << " whole";
        }
        cut += !whole;
        // Label 1 starts on the left: seen on the right half, the image is mirrored.
        if (l == 1 && found.x0 > 32) ++mirrored;
      }
  }
  // The run exercised what it checks.
  EXPECT_GT(boxes, 40);
  EXPECT_GT(mirrored, 0);
  EXPECT_GT(cut, 0);
}

TEST(AnnotatedData, BrightnessMovesPixelsNotBoxes) {
  const std::string db = Database(4);
  const std::vector<Batch> plain = RunBatches(Layer(db, "TRAIN", ""), 1);
  const std::vector<Batch> bright = RunBatches(
      Layer(db, "TRAIN", "distort_param { brightness_prob: 1.0 brightness_delta: 32 }"), 1);
  EXPECT_EQ(plain[0].rows, bright[0].rows);
  int shifted = 0;
  for (int n = 0; n < 4; ++n) {
    // One delta for the image: read it off a grey pixel (unsaturated).
    const size_t grey = size_t(n) * 3 * kHeight * kWidth;  // pixel (0, 0), channel 0
    const float delta = bright[0].data[grey] - plain[0].data[grey];
    EXPECT_LE(std::fabs(delta), 32.5f);
    shifted += delta != 0;
    for (size_t j = 0; j < size_t(3) * kHeight * kWidth; ++j) {
      const size_t k = size_t(n) * 3 * kHeight * kWidth + j;
      const float expected = std::min(255.f, std::max(0.f, plain[0].data[k] + delta));
      ASSERT_NEAR(bright[0].data[k], expected, 1.f) << "image " << n << " pixel " << j;
    }
  }
  EXPECT_GT(shifted, 0);
}

// Resuming from a saved reader state gives the batches, augmentation draws
// included, that followed it.
TEST(AnnotatedData, ResumesTheSameBatches) {
  const std::string db = Database(7);
  const std::string text =
      Layer(db, "TRAIN", "mirror: true mean_value: 128 expand_param { prob: 0.5 max_expand_ratio: 2 } "
                         "resize_param { prob: 1 height: 30 width: 40 interp_mode: NEAREST }",
            "batch_sampler { sampler { min_scale: 0.3 } max_sample: 1 max_trials: 20 }");
  auto first = MakeLayer(text);
  Blob data(TestContext()), label(TestContext());
  first->SetUp({}, {&data, &label});
  first->Forward({}, {&data, &label});
  const std::string saved = dynamic_cast<ResumableDataLayer&>(*first).ReaderState().Serialize();
  std::vector<std::vector<float>> expected;
  for (int b = 0; b < 3; ++b) {
    first->Forward({}, {&data, &label});
    expected.push_back(data.ReadData());
    expected.push_back(label.ReadData());
  }
  auto resumed = MakeLayer(text);
  resumed->SetUp({}, {&data, &label});
  dynamic_cast<ResumableDataLayer&>(*resumed).RestoreReaderState(DataReaderState::Parse(saved));
  for (int b = 0; b < 3; ++b) {
    resumed->Forward({}, {&data, &label});
    EXPECT_EQ(data.ReadData(), expected[2 * b]) << "batch " << b;
    EXPECT_EQ(label.ReadData(), expected[2 * b + 1]) << "batch " << b;
  }
}

TEST(AnnotatedData, RejectsWhatItDoesNotDo) {
  const std::string db = Database(2);
  for (const std::string& transform :
       {std::string("crop_size: 20"),
        std::string("resize_param { resize_mode: FIT_SMALL_SIZE height: 10 width: 10 }"),
        std::string("noise_param { prob: 0.5 }")}) {
    SCOPED_TRACE(transform);
    auto layer = MakeLayer(Layer(db, "TRAIN", transform));
    Blob data(TestContext()), label(TestContext());
    EXPECT_THROW(layer->SetUp({}, {&data, &label}), Error);
  }
}

}  // namespace test
}  // namespace dlcaffe
