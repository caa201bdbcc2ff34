// Which backward step finishes each gradient, and the buckets built on it
// (src/parallel/gradient_buckets.hpp): a bucket sent too early would carry a
// gradient that a lower layer still adds to, and every float must travel in
// exactly one bucket.
#include <gtest/gtest.h>

#include <cstdlib>
#include <algorithm>
#include <numeric>
#include <set>

#include "../../src/core/execution_plan.hpp"
#include "../../src/parallel/gradient_buckets.hpp"
#include "dlcaffe/io.hpp"
#include "dlcaffe/net.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

// conv → BatchNorm → Scale (absorbed by the BatchNorm in training) → ReLU →
// ip_a and ip_b sharing one weight ("shared") → loss.
const char kNet[] = R"(name: "buckets"
layer { name: "data" type: "Input" top: "data" top: "label"
  input_param { shape { dim: 2 dim: 3 dim: 5 dim: 5 } shape { dim: 2 } } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
  convolution_param { num_output: 4 kernel_size: 3 weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "conv" }
layer { name: "scale" type: "Scale" bottom: "conv" top: "conv" scale_param { bias_term: true } }
layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
layer { name: "ip_a" type: "InnerProduct" bottom: "conv" top: "ip_a"
  param { name: "shared" } inner_product_param { num_output: 36 bias_term: false
  weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "ip_b" type: "InnerProduct" bottom: "ip_a" top: "ip_b"
  param { name: "shared" } inner_product_param { num_output: 36 bias_term: false } }
layer { name: "ip_c" type: "InnerProduct" bottom: "ip_b" top: "ip_c"
  inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip_c" bottom: "label" top: "loss" }
)";

std::unique_ptr<Net> MakeNet() {
  caffe::NetParameter param;
  ReadProtoFromTextString(kNet, "the test's net", &param);
  param.mutable_state()->set_phase(caffe::TRAIN);
  return std::make_unique<Net>(param, TestContext());
}

int LayerIndex(const Net& net, const std::string& name) {
  for (size_t i = 0; i < net.layer_names().size(); ++i)
    if (net.layer_names()[i] == name) return static_cast<int>(i);
  return -1;
}

// The learnable parameter index of layer `layer`'s blob `blob`.
int ParamIndex(const Net& net, const std::string& layer, int blob) {
  const Blob* b = net.layers()[LayerIndex(net, layer)]->blobs()[blob].get();
  for (size_t p = 0; p < net.learnable_params().size(); ++p)
    if (net.learnable_params()[p]->data() == b->data()) return static_cast<int>(p);
  return -1;
}

TEST(GradientBuckets, EachGradientIsFinalAtTheLowestLayerThatWritesIt) {
  auto net = MakeNet();
  const std::vector<int> final_layer = GradientFinalLayers(*net);
  ASSERT_EQ(final_layer.size(), net->learnable_params().size());
  const int bn = LayerIndex(*net, "bn");
  EXPECT_EQ(final_layer[ParamIndex(*net, "conv", 0)], LayerIndex(*net, "conv"));
  EXPECT_EQ(final_layer[ParamIndex(*net, "ip_c", 0)], LayerIndex(*net, "ip_c"));
  // ip_b's weight is ip_a's: ip_a, below it, adds the last part.
  EXPECT_EQ(ParamIndex(*net, "ip_b", 0), ParamIndex(*net, "ip_a", 0));
  EXPECT_EQ(final_layer[ParamIndex(*net, "ip_a", 0)], LayerIndex(*net, "ip_a"));
  // In training the BatchNorm's backward computes the Scale's gradients
  // (unless fusion is switched off: then the Scale's own backward does).
  if (TestContext().options().fusion) {
    ASSERT_EQ(net->plan().absorbs_after(bn), 1);
  }
  const int scale_final = final_layer[ParamIndex(*net, "scale", 0)];
  if (net->plan().absorbs_after(bn) > 0) {
    EXPECT_EQ(scale_final, bn);
  } else {
    EXPECT_EQ(scale_final, LayerIndex(*net, "scale"));
  }
  EXPECT_EQ(final_layer[ParamIndex(*net, "scale", 1)], scale_final);
}

TEST(GradientBuckets, BucketsGoTopFirstAndCoverEveryGradientOnce) {
  auto net = MakeNet();
  const std::vector<int> final_layer = GradientFinalLayers(*net);
  const auto& params = net->learnable_params();
  size_t total = 0, largest = 0;
  for (const Blob* p : params) {
    total += p->count();
    largest = std::max<size_t>(largest, p->count());
  }
  ASSERT_EQ(largest, 36u * 36u);  // the shared weight
  for (bool taper : {false, true}) {
  for (size_t bytes : {size_t(4), size_t(200), size_t(4000), size_t(1) << 30}) {
    const size_t capacity = bytes / sizeof(float);
    const std::vector<GradientBucket> buckets = PlanGradientBuckets(*net, bytes, taper);
    const std::vector<size_t> capacities = BucketCapacities(total, capacity, taper);
    ASSERT_EQ(buckets.size(), capacities.size());
    // covered[p][i]: how many pieces hold float i of parameter p.
    std::vector<std::vector<int>> covered(params.size());
    for (size_t p = 0; p < params.size(); ++p) covered[p].assign(params[p]->count(), 0);
    size_t next_start = 0;
    int previous_final = 1 << 30;
    for (const GradientBucket& bucket : buckets) {
      EXPECT_EQ(bucket.start, next_start);
      ASSERT_FALSE(bucket.pieces.empty());
      size_t count = 0;
      for (const GradientPiece& piece : bucket.pieces) {
        EXPECT_EQ(piece.start, bucket.start + count);
        ASSERT_LE(piece.offset + piece.count, params[piece.param]->count());
        for (size_t i = piece.offset; i < piece.offset + piece.count; ++i)
          ++covered[piece.param][i];
        count += piece.count;
        // Sent in the order backward finishes them, and the bucket waits
        // for its lowest.
        EXPECT_LE(final_layer[piece.param], previous_final);
        previous_final = final_layer[piece.param];
        EXPECT_GE(final_layer[piece.param], bucket.final_after_layer);
      }
      EXPECT_EQ(bucket.count, count);
      EXPECT_EQ(bucket.final_after_layer, final_layer[bucket.pieces.back().param]);
      // Filled to their capacities (a large parameter is split to fill
      // them), which the first bucket may not reach.
      const size_t b = &bucket - &buckets[0];
      EXPECT_LE(count, capacities[b]);
      if (b > 0 || !taper) {
        EXPECT_EQ(count, capacities[b]) << "bucket " << b;
      }
      if (&bucket == &buckets.back() && taper) {
        EXPECT_LE(count, std::max<size_t>(1, capacity / 16));
      }
      next_start += count;
    }
    EXPECT_EQ(next_start, total) << "bucket size " << bytes;
    for (size_t p = 0; p < params.size(); ++p)
      for (size_t i = 0; i < covered[p].size(); ++i)
        ASSERT_EQ(covered[p][i], 1) << "parameter " << p << " float " << i << ", bucket size "
                                    << bytes;
    if (!taper) {
      EXPECT_EQ(buckets.size(), (total + capacity - 1) / capacity);
    }
  }
  }
}

TEST(GradientBuckets, TaperedCapacitiesGrowFromTheLastBucketUp) {
  // 100 floats, at most 32 a bucket: from the last up 2, 4, 8, 16, 32, 32,
  // and the first takes the 6 left.
  EXPECT_EQ(BucketCapacities(100, 32, true), (std::vector<size_t>{6, 32, 32, 16, 8, 4, 2}));
  EXPECT_EQ(BucketCapacities(100, 32, false), (std::vector<size_t>{32, 32, 32, 4}));
  EXPECT_EQ(BucketCapacities(3, 32, true), (std::vector<size_t>{1, 2}));
  EXPECT_EQ(BucketCapacities(5, 1, true), (std::vector<size_t>{1, 1, 1, 1, 1}));
  EXPECT_TRUE(BucketCapacities(0, 32, true).empty());
  // resnet50's 25.6 million floats in 25 MB buckets: the last 1.56 MB.
  const std::vector<size_t> resnet50 = BucketCapacities(25557032, (25 << 20) / 4, true);
  EXPECT_EQ(resnet50.back(), size_t(25 << 20) / 4 / 16);
  EXPECT_EQ(resnet50.size(), 7u);
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
