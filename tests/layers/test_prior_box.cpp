#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "util/error_of.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

struct PriorBoxCase {
  std::vector<double> min_sizes, max_sizes, ratios, variances;
  bool flip = true, clip = false;
  double img_h = 0, img_w = 0, step_h = 0, step_w = 0, offset = 0.5;
  std::string text;  // prior_box_param's contents
};

// SSD's priors in double, written from the parameters' meaning: per cell, per
// min_size: the square, the sqrt(min * max) square, then each distinct ratio
// (and its inverse under flip) but 1.
std::vector<double> Reference(const PriorBoxCase& c, int H, int W, int image_h, int image_w) {
  std::vector<double> ratios;
  for (double r : c.ratios) {
    bool known = std::fabs(r - 1) < 1e-6;
    for (double have : ratios) known = known || std::fabs(r - have) < 1e-6;
    if (known) continue;
    ratios.push_back(r);
    if (c.flip) ratios.push_back(1 / r);
  }
  const double img_h = c.img_h ? c.img_h : image_h, img_w = c.img_w ? c.img_w : image_w;
  const double step_h = c.step_h ? c.step_h : img_h / H, step_w = c.step_w ? c.step_w : img_w / W;
  std::vector<double> boxes, variances;
  for (int h = 0; h < H; ++h)
    for (int w = 0; w < W; ++w) {
      const double cx = (w + c.offset) * step_w, cy = (h + c.offset) * step_h;
      auto add = [&](double bw, double bh) {
        for (double v : {(cx - bw / 2) / img_w, (cy - bh / 2) / img_h, (cx + bw / 2) / img_w,
                         (cy + bh / 2) / img_h})
          boxes.push_back(c.clip ? std::min(std::max(v, 0.0), 1.0) : v);
        for (int k = 0; k < 4; ++k)
          variances.push_back(c.variances.empty() ? 0.1 : c.variances[c.variances.size() == 1 ? 0 : k]);
      };
      for (size_t s = 0; s < c.min_sizes.size(); ++s) {
        const double m = c.min_sizes[s];
        add(m, m);
        if (!c.max_sizes.empty()) add(std::sqrt(m * c.max_sizes[s]), std::sqrt(m * c.max_sizes[s]));
        for (double r : ratios) add(m * std::sqrt(r), m / std::sqrt(r));
      }
    }
  boxes.insert(boxes.end(), variances.begin(), variances.end());
  return boxes;
}

void ExpectPriors(const PriorBoxCase& c, int H, int W, int image_h, int image_w) {
  SCOPED_TRACE(c.text);
  Blob map(TestContext(), {2, 3, H, W}), image(TestContext(), {2, 3, image_h, image_w});
  Blob top(TestContext());
  auto layer = MakeLayer("type: 'PriorBox' prior_box_param { " + c.text + " }");
  layer->SetUp({&map, &image}, {&top});
  const std::vector<double> expected = Reference(c, H, W, image_h, image_w);
  ASSERT_EQ(top.shape(), (std::vector<int>{1, 2, static_cast<int>(expected.size() / 2)}));
  layer->Forward({&map, &image}, {&top});
  const std::vector<float> got = top.ReadData();
  // Float centres and sizes, one division: within a few ulp of 1.
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], 1e-6) << "value " << i;
}

}  // namespace

// SSD300's conv4_3 priors on an odd map: one min and max size, ratio 2
// flipped, clipped, four variances, the image size and step given.
TEST(PriorBox, Ssd300StylePriorsMatchTheReference) {
  PriorBoxCase c;
  c.min_sizes = {30}, c.max_sizes = {60}, c.ratios = {2}, c.variances = {0.1, 0.1, 0.2, 0.2};
  c.clip = true, c.img_h = c.img_w = 300, c.step_h = c.step_w = 8;
  c.text = "min_size: 30 max_size: 60 aspect_ratio: 2 flip: true clip: true variance: 0.1 "
           "variance: 0.1 variance: 0.2 variance: 0.2 img_size: 300 step: 8 offset: 0.5";
  ExpectPriors(c, 5, 7, 300, 300);
}

// Two min sizes without max sizes, a ratio given twice and one already
// there as the inverse of another, sizes and steps from the bottoms
// (a non-square image), one variance, no clip, another offset.
TEST(PriorBox, SizesFromTheBottomsAndRepeatedRatios) {
  PriorBoxCase c;
  c.min_sizes = {11, 23}, c.ratios = {2, 3, 2, 0.5}, c.variances = {0.25}, c.offset = 0.25;
  c.text = "min_size: 11 min_size: 23 aspect_ratio: 2 aspect_ratio: 3 aspect_ratio: 2 "
           "aspect_ratio: 0.5 variance: 0.25 offset: 0.25";
  ExpectPriors(c, 3, 4, 37, 53);
  // Without flip, 0.5 is a ratio of its own; img_h/img_w and step_h/step_w.
  c.flip = false, c.variances = {}, c.img_h = 40, c.img_w = 60, c.step_h = 12, c.step_w = 15;
  c.text = "min_size: 11 min_size: 23 aspect_ratio: 2 aspect_ratio: 3 aspect_ratio: 2 "
           "aspect_ratio: 0.5 flip: false offset: 0.25 img_h: 40 img_w: 60 step_h: 12 step_w: 15";
  ExpectPriors(c, 3, 4, 37, 53);
}

// The boxes depend on the bottoms' shapes only: their gradients are zero,
// written (a Split above the map sums them with the heads' gradients).
TEST(PriorBox, WritesZeroGradientsToItsBottoms) {
  Blob map(TestContext(), {1, 3, 2, 3}), image(TestContext(), {1, 3, 20, 30}), top(TestContext());
  auto layer = MakeLayer("type: 'PriorBox' prior_box_param { min_size: 4 }");
  layer->SetUp({&map, &image}, {&top});
  layer->Forward({&map, &image}, {&top});
  map.SetDiff(std::nanf(""));
  image.SetDiff(std::nanf(""));
  layer->Backward({&top}, {true, true}, {&map, &image});
  for (const Blob* b : {&map, &image})
    for (float g : b->ReadDiff()) ASSERT_EQ(g, 0.f);
}

TEST(PriorBox, BadParametersAreNamed) {
  Blob map(TestContext(), {1, 3, 2, 2}), image(TestContext(), {1, 3, 20, 20}), top(TestContext());
  const auto error = [&](const std::string& text) {
    return ErrorOf([&] { MakeLayer("type: 'PriorBox' prior_box_param { " + text + " }")->SetUp({&map, &image}, {&top}); });
  };
  EXPECT_NE(error("aspect_ratio: 2").find("needs at least one min_size"), std::string::npos);
  EXPECT_NE(error("min_size: 10 max_size: 5").find("must be larger than its min_size"), std::string::npos);
  EXPECT_NE(error("min_size: 10 min_size: 12 max_size: 20").find("give one for each"), std::string::npos);
  EXPECT_NE(error("min_size: 10 variance: 0.1 variance: 0.2").find("one variance or four"), std::string::npos);
  EXPECT_NE(error("min_size: 10 img_size: 300 img_h: 300 img_w: 300").find("not both"), std::string::npos);
  EXPECT_NE(error("min_size: 10 step_h: 8").find("both step_h and step_w"), std::string::npos);
  EXPECT_NE(error("min_size: -3").find("must be positive"), std::string::npos);
}

}  // namespace test
}  // namespace dlcaffe
