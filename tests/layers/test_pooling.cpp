#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <numeric>
#include <random>

#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

struct PoolConfig {
  std::string method;  // "MAX" or "AVE"
  int kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
  bool floor_mode = false;
  bool excludes_padding = false;  // AVE: average_excludes_padding
  std::string Prototxt() const {
    std::string s = "type: 'Pooling' pooling_param { pool: " + method +
                    " kernel_h: " + std::to_string(kernel_h) +
                    " kernel_w: " + std::to_string(kernel_w) +
                    " stride_h: " + std::to_string(stride_h) +
                    " stride_w: " + std::to_string(stride_w) +
                    " pad_h: " + std::to_string(pad_h) + " pad_w: " + std::to_string(pad_w);
    if (floor_mode) s += " round_mode: FLOOR";
    if (excludes_padding) s += " average_excludes_padding: true";
    return s + " }";
  }
};

// Output size, counted window by window: window i starts at i * stride - pad.
// CEIL keeps a window while the previous one did not reach the end of the
// padded input; FLOOR keeps windows that fit entirely. When the layer pads, a
// window starting past the input (inside the padding) is dropped, as in Caffe.
int ReferencePooledSize(int size, int kernel, int pad, int stride, bool floor_mode,
                        bool layer_pads) {
  const int padded = size + 2 * pad;
  int n = 0;
  for (int i = 0;; ++i) {
    const bool fits = floor_mode ? i * stride + kernel <= padded
                                 : (i == 0 || (i - 1) * stride + kernel < padded);
    if (!fits || (layer_pads && i * stride - pad >= size)) break;
    ++n;
  }
  return n;
}

struct PoolReference {
  std::vector<int> shape;      // top shape
  std::vector<float> top;
  std::vector<int> argmax;     // MAX: offset in the (n, c) plane, -1 if none
  std::vector<float> divisor;  // AVE: the window size Caffe divides by (or,
                               // excluding padding, the input elements in it)
};

PoolReference ReferencePool(const std::vector<float>& x, const std::vector<int>& shape,
                            const PoolConfig& c) {
  const int planes = shape[0] * shape[1], H = shape[2], W = shape[3];
  const bool pads = c.pad_h > 0 || c.pad_w > 0;
  const int PH = ReferencePooledSize(H, c.kernel_h, c.pad_h, c.stride_h, c.floor_mode, pads);
  const int PW = ReferencePooledSize(W, c.kernel_w, c.pad_w, c.stride_w, c.floor_mode, pads);
  PoolReference r;
  r.shape = {shape[0], shape[1], PH, PW};
  for (int p = 0; p < planes; ++p) {
    for (int ph = 0; ph < PH; ++ph) {
      for (int pw = 0; pw < PW; ++pw) {
        const int h0 = ph * c.stride_h - c.pad_h, w0 = pw * c.stride_w - c.pad_w;
        // AVE counts the padding but not what lies beyond it.
        const int h1p = std::min(h0 + c.kernel_h, H + c.pad_h);
        const int w1p = std::min(w0 + c.kernel_w, W + c.pad_w);
        float best = -FLT_MAX, sum = 0.f;
        int best_index = -1, inside = 0;
        for (int h = std::max(h0, 0); h < std::min(h0 + c.kernel_h, H); ++h) {
          for (int w = std::max(w0, 0); w < std::min(w0 + c.kernel_w, W); ++w) {
            const float v = x[(p * H + h) * W + w];
            sum += v;
            ++inside;
            if (v > best) {  // the first of equal maxima wins
              best = v;
              best_index = h * W + w;
            }
          }
        }
        const float divisor =
            c.excludes_padding ? float(std::max(inside, 1)) : float((h1p - h0) * (w1p - w0));
        r.top.push_back(c.method == "MAX" ? best : sum / divisor);
        r.argmax.push_back(best_index);
        r.divisor.push_back(divisor);
      }
    }
  }
  return r;
}

// Distinct values at least 0.05 apart (a shuffled ramp), so that a gradient
// check's step of 0.01 never changes which element of a window is the maximum.
void FillDistinct(Blob* blob, unsigned seed) {
  std::vector<float> v(blob->count());
  std::iota(v.begin(), v.end(), 0.f);
  std::shuffle(v.begin(), v.end(), std::mt19937(seed));
  for (float& x : v) x = 0.05f * x - 0.025f * blob->count();
  blob->WriteData(v);
}

// Small integers: many ties, to check that the first maximum wins.
void FillWithTies(Blob* blob, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(blob->count());
  for (float& x : v) x = float(rng() % 4);
  blob->WriteData(v);
}

void ExpectForwardMatches(const PoolConfig& config, const std::vector<int>& shape,
                          bool ties) {
  SCOPED_TRACE(config.Prototxt());
  Blob bottom(TestContext(), shape), top(TestContext()), mask(TestContext());
  if (ties)
    FillWithTies(&bottom, 3);
  else
    FillGaussian(&bottom, 0.f, 1.f, 3);
  auto layer = MakeLayer(config.Prototxt());
  const bool is_max = config.method == "MAX";
  std::vector<Blob*> tops{&top};
  if (is_max) tops.push_back(&mask);
  layer->SetUp({&bottom}, tops);
  PoolReference ref = ReferencePool(bottom.ReadData(), shape, config);
  ASSERT_EQ(top.shape(), ref.shape);
  layer->Forward({&bottom}, tops);
  std::vector<float> y = top.ReadData();
  for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], ref.top[i], 1e-5f) << "output " << i;
  if (is_max) {
    ASSERT_EQ(mask.shape(), ref.shape);
    std::vector<float> m = mask.ReadData();
    for (size_t i = 0; i < m.size(); ++i) ASSERT_EQ(m[i], float(ref.argmax[i])) << "mask " << i;
  }
}

// Backward against a reference that scatters each top diff to the inputs of
// its window (MAX: to the argmax; AVE: spread over the window).
void ExpectBackwardMatches(const PoolConfig& config, const std::vector<int>& shape) {
  SCOPED_TRACE(config.Prototxt());
  Blob bottom(TestContext(), shape), top(TestContext());
  FillWithTies(&bottom, 5);
  auto layer = MakeLayer(config.Prototxt());
  layer->SetUp({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  FillGaussian(&top, 0.f, 1.f, 9);  // use the data as a source of diffs
  std::vector<float> dy = top.ReadData();
  top.WriteDiff(dy);
  layer->Backward({&top}, {true}, {&bottom});
  PoolReference ref = ReferencePool(bottom.ReadData(), shape, config);
  const int H = shape[2], W = shape[3], PH = ref.shape[2], PW = ref.shape[3];
  std::vector<float> dx(bottom.count(), 0.f);
  for (int p = 0; p < shape[0] * shape[1]; ++p) {
    for (int ph = 0; ph < PH; ++ph) {
      for (int pw = 0; pw < PW; ++pw) {
        const int t = (p * PH + ph) * PW + pw;
        if (config.method == "MAX") {
          dx[p * H * W + ref.argmax[t]] += dy[t];
          continue;
        }
        const int h0 = ph * config.stride_h - config.pad_h, w0 = pw * config.stride_w - config.pad_w;
        for (int h = std::max(h0, 0); h < std::min(h0 + config.kernel_h, H); ++h)
          for (int w = std::max(w0, 0); w < std::min(w0 + config.kernel_w, W); ++w)
            dx[(p * H + h) * W + w] += dy[t] / ref.divisor[t];
      }
    }
  }
  std::vector<float> got = bottom.ReadDiff();
  for (size_t i = 0; i < dx.size(); ++i) ASSERT_NEAR(got[i], dx[i], 1e-5f) << "input " << i;
}

// Overlapping, strided, padded and rectangular windows.
std::vector<PoolConfig> Configs(const std::string& method) {
  return {
      {method, 3, 3, 2, 2, 0, 0},        // LeNet/CIFAR style, CEIL overhang
      {method, 2, 2, 1, 1, 0, 0},        // dense overlap
      {method, 3, 3, 2, 2, 1, 1},        // CIFAR-10 quick: padded
      {method, 3, 2, 2, 1, 1, 0},        // rectangular kernel, stride, pad
      {method, 3, 3, 2, 2, 2, 1},        // pad 2 < kernel 3
      {method, 3, 3, 2, 2, 1, 1, true},  // FLOOR
      {method, 2, 2, 2, 2, 0, 0},        // LeNet: windows do not overlap
      {method, 2, 3, 3, 3, 1, 1},        // non-overlapping, padded, rectangular
  };
}

const std::vector<std::vector<int>> kShapes = {{1, 3, 13, 13}, {3, 2, 7, 5}};

}  // namespace

TEST(Pooling, OutputSizeCeilFloorAndPaddingRule) {
  struct Case {
    int size, kernel, pad, stride;
    bool floor_mode;
    int expected;
  };
  // Hand-derived: ceil((size + 2 pad - kernel) / stride) + 1, FLOOR likewise,
  // minus a last window that would start in the padding.
  const Case cases[] = {
      {6, 3, 0, 2, false, 3},  // ceil(1.5) + 1
      {6, 3, 0, 2, true, 2},   // floor(1.5) + 1
      {5, 2, 1, 2, false, 3},  // ceil(2.5) + 1 = 4, last window starts at 5: dropped
      {5, 2, 1, 2, true, 3},   // floor(2.5) + 1
      {32, 3, 0, 2, false, 16},
      {28, 2, 0, 2, false, 14},
      {13, 3, 1, 2, false, 7},
  };
  for (const Case& c : cases) {
    PoolConfig config{"MAX", c.kernel, c.kernel, c.stride, c.stride, c.pad, c.pad, c.floor_mode};
    Blob bottom(TestContext(), {1, 1, c.size, c.size}), top(TestContext());
    auto layer = MakeLayer(config.Prototxt());
    layer->SetUp({&bottom}, {&top});
    EXPECT_EQ(top.shape(), (std::vector<int>{1, 1, c.expected, c.expected})) << config.Prototxt();
    EXPECT_EQ(ReferencePooledSize(c.size, c.kernel, c.pad, c.stride, c.floor_mode, c.pad > 0),
              c.expected);
  }
}

// Caffe's TestForwardMax example, worked out by hand: 3 x 5 input, 2 x 2
// kernel, stride 1.
TEST(Pooling, CaffeMaxExample) {
  const float plane[] = {1, 2, 5, 2, 3, 9, 4, 1, 4, 8, 1, 2, 5, 2, 3};
  Blob bottom(TestContext(), {2, 2, 3, 5}), top(TestContext()), mask(TestContext());
  for (int p = 0; p < 4; ++p) bottom.WriteData(plane, 15, p * 15);
  auto layer = MakeLayer("type: 'Pooling' pooling_param { pool: MAX kernel_size: 2 }");
  layer->SetUp({&bottom}, {&top, &mask});
  ASSERT_EQ(top.shape(), (std::vector<int>{2, 2, 2, 4}));
  layer->Forward({&bottom}, {&top, &mask});
  const float expected[] = {9, 5, 5, 8, 9, 5, 5, 8};
  const float expected_mask[] = {5, 2, 2, 9, 5, 12, 12, 9};
  std::vector<float> y = top.ReadData(), m = mask.ReadData();
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(y[i], expected[i % 8]) << i;
    EXPECT_EQ(m[i], expected_mask[i % 8]) << i;
  }
}

TEST(Pooling, MaxForwardMatchesReference) {
  for (const auto& shape : kShapes)
    for (const PoolConfig& c : Configs("MAX")) {
      ExpectForwardMatches(c, shape, /*ties=*/false);
      ExpectForwardMatches(c, shape, /*ties=*/true);
    }
}

TEST(Pooling, AveForwardMatchesReference) {
  for (const auto& shape : kShapes)
    for (const PoolConfig& c : Configs("AVE")) ExpectForwardMatches(c, shape, false);
}

TEST(Pooling, BackwardMatchesReference) {
  for (const auto& shape : kShapes) {
    for (const PoolConfig& c : Configs("MAX")) ExpectBackwardMatches(c, shape);
    for (const PoolConfig& c : Configs("AVE")) ExpectBackwardMatches(c, shape);
  }
}

// average_excludes_padding (ONNX AveragePool count_include_pad = 0): the
// divisor is the number of input elements in the window.
std::vector<PoolConfig> ExcludingPaddingConfigs() {
  std::vector<PoolConfig> configs = Configs("AVE");
  for (PoolConfig& c : configs) c.excludes_padding = true;
  configs.push_back({"AVE", 1, 1, 3, 3, 0, 0, false, true});  // CEIL: a window past the input
  return configs;
}

TEST(Pooling, AveExcludingPaddingByHand) {
  // All ones, 3 x 3 kernel, pad 1, stride 1: every average is 1 (Caffe's
  // divisor 9 would give 4/9 in the corners and 6/9 on the edges).
  Blob bottom(TestContext(), {1, 1, 4, 5}), top(TestContext());
  bottom.SetData(1.f);
  auto layer = MakeLayer(
      "type: 'Pooling' pooling_param { pool: AVE kernel_size: 3 pad: 1 stride: 1 "
      "average_excludes_padding: true }");
  layer->SetUp({&bottom}, {&top});
  ASSERT_EQ(top.shape(), (std::vector<int>{1, 1, 4, 5}));
  layer->Forward({&bottom}, {&top});
  for (float v : top.ReadData()) EXPECT_FLOAT_EQ(v, 1.f);
  // Backward: each input gets sum over its windows of 1 / (window's inputs);
  // the corner (0, 0) is in windows of 4, 6, 6 and 9 inputs.
  top.SetDiff(1.f);
  layer->Backward({&top}, {true}, {&bottom});
  EXPECT_FLOAT_EQ(bottom.ReadDiff()[0], 1.f / 4 + 2.f / 6 + 1.f / 9);
}

TEST(Pooling, AveExcludingPaddingMatchesReference) {
  for (const auto& shape : kShapes)
    for (const PoolConfig& c : ExcludingPaddingConfigs()) {
      ExpectForwardMatches(c, shape, false);
      ExpectBackwardMatches(c, shape);
    }
}

TEST(Pooling, AveExcludingPaddingGradientMatchesNumeric) {
  for (const PoolConfig& c : ExcludingPaddingConfigs()) {
    SCOPED_TRACE(c.Prototxt());
    Blob bottom(TestContext(), {3, 2, 7, 5}), top(TestContext());
    FillGaussian(&bottom, 0.f, 1.f, 19);
    auto layer = MakeLayer(c.Prototxt());
    layer->SetUp({&bottom}, {&top});
    CheckGradient(*layer, {&bottom}, {&top});
  }
}

TEST(Pooling, MaxGradientMatchesNumeric) {
  for (const PoolConfig& c : Configs("MAX")) {
    SCOPED_TRACE(c.Prototxt());
    Blob bottom(TestContext(), {3, 2, 7, 5}), top(TestContext());
    FillDistinct(&bottom, 17);
    auto layer = MakeLayer(c.Prototxt());
    layer->SetUp({&bottom}, {&top});
    CheckGradient(*layer, {&bottom}, {&top});
  }
}

TEST(Pooling, AveGradientMatchesNumeric) {
  for (const PoolConfig& c : Configs("AVE")) {
    SCOPED_TRACE(c.Prototxt());
    Blob bottom(TestContext(), {3, 2, 7, 5}), top(TestContext());
    FillGaussian(&bottom, 0.f, 1.f, 19);
    auto layer = MakeLayer(c.Prototxt());
    layer->SetUp({&bottom}, {&top});
    CheckGradient(*layer, {&bottom}, {&top});
  }
}

TEST(Pooling, GlobalPooling) {
  for (const std::string method : {"MAX", "AVE"}) {
    SCOPED_TRACE(method);
    Blob bottom(TestContext(), {3, 2, 7, 5}), top(TestContext());
    FillDistinct(&bottom, 23);
    auto layer = MakeLayer("type: 'Pooling' pooling_param { pool: " + method +
                           " global_pooling: true }");
    layer->SetUp({&bottom}, {&top});
    ASSERT_EQ(top.shape(), (std::vector<int>{3, 2, 1, 1}));
    layer->Forward({&bottom}, {&top});
    PoolConfig whole{method, 7, 5, 1, 1, 0, 0};
    PoolReference ref = ReferencePool(bottom.ReadData(), bottom.shape(), whole);
    std::vector<float> y = top.ReadData();
    for (int i = 0; i < 6; ++i) EXPECT_NEAR(y[i], ref.top[i], 1e-5f) << i;
    CheckGradient(*layer, {&bottom}, {&top});
  }
}

TEST(Pooling, ReshapeFollowsTheBottom) {
  Blob bottom(TestContext(), {1, 1, 5, 5}), top(TestContext());
  auto layer = MakeLayer("type: 'Pooling' pooling_param { pool: MAX kernel_size: 2 stride: 2 }");
  layer->SetUp({&bottom}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{1, 1, 3, 3}));
  bottom.Reshape({2, 3, 13, 13});
  FillGaussian(&bottom, 0.f, 1.f, 29);
  layer->Reshape({&bottom}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{2, 3, 7, 7}));
  layer->Forward({&bottom}, {&top});
  PoolReference ref = ReferencePool(bottom.ReadData(), bottom.shape(), {"MAX", 2, 2, 2, 2, 0, 0});
  std::vector<float> y = top.ReadData();
  for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], ref.top[i]) << i;
}

// STOCHASTIC in TRAIN: each output is an element of its window, drawn with
// probability proportional to its value; backward routes the gradient to it.
TEST(Pooling, StochasticTrainSamplesFromTheWindow) {
  Blob bottom(TestContext(), {3, 2, 7, 5}), top(TestContext());
  // Distinct positive values, so the sampled element is known from its value.
  std::vector<float> x(bottom.count());
  std::iota(x.begin(), x.end(), 1.f);
  std::shuffle(x.begin(), x.end(), std::mt19937(31));
  bottom.WriteData(x);
  auto layer = MakeLayer(
      "type: 'Pooling' phase: TRAIN pooling_param { pool: STOCHASTIC kernel_size: 3 stride: 2 }");
  layer->SetUp({&bottom}, {&top});
  ASSERT_EQ(top.shape(), (std::vector<int>{3, 2, 3, 2}));
  layer->Forward({&bottom}, {&top});
  std::vector<float> y = top.ReadData();
  std::vector<float> dy(y.size()), expected_dx(x.size(), 0.f);
  for (size_t t = 0; t < y.size(); ++t) {
    dy[t] = 0.5f + float(t % 5);
    const int plane = int(t) / 6, ph = int(t) / 2 % 3, pw = int(t) % 2;
    int found = -1;
    for (int h = 2 * ph; h < std::min(2 * ph + 3, 7); ++h)
      for (int w = 2 * pw; w < std::min(2 * pw + 3, 5); ++w)
        if (x[(plane * 7 + h) * 5 + w] == y[t]) found = (plane * 7 + h) * 5 + w;
    ASSERT_GE(found, 0) << "output " << t << " = " << y[t] << " is not in its window";
    expected_dx[found] += dy[t];
  }
  top.WriteDiff(dy);
  layer->Backward({&top}, {true}, {&bottom});
  std::vector<float> dx = bottom.ReadDiff();
  for (size_t i = 0; i < dx.size(); ++i) EXPECT_EQ(dx[i], expected_dx[i]) << i;
}

// Windows {1, 3}: 3 must be drawn with probability 3/4, and each pass draws
// afresh.
TEST(Pooling, StochasticTrainDrawsProportionally) {
  const int windows = 4000;
  Blob bottom(TestContext(), {1, 1, 1, 2 * windows}), top(TestContext());
  std::vector<float> x(2 * windows);
  for (int i = 0; i < windows; ++i) {
    x[2 * i] = 1.f;
    x[2 * i + 1] = 3.f;
  }
  bottom.WriteData(x);
  auto layer = MakeLayer(
      "type: 'Pooling' pooling_param { pool: STOCHASTIC kernel_h: 1 kernel_w: 2 stride: 2 }");
  layer->SetUp({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  std::vector<float> first = top.ReadData();
  layer->Forward({&bottom}, {&top});
  std::vector<float> second = top.ReadData();
  int threes = 0, changed = 0;
  for (int i = 0; i < windows; ++i) {
    ASSERT_TRUE(first[i] == 1.f || first[i] == 3.f) << first[i];
    threes += first[i] == 3.f;
    changed += first[i] != second[i];
  }
  // Standard deviation of the fraction: sqrt(3/16 / 4000) = 0.007.
  EXPECT_NEAR(threes / double(windows), 0.75, 0.035);
  // Two independent draws differ with probability 3/8.
  EXPECT_NEAR(changed / double(windows), 0.375, 0.04);
}

// STOCHASTIC in TEST: the probability-weighted average sum(x^2) / sum(x).
TEST(Pooling, StochasticTestIsTheWeightedAverage) {
  Blob bottom(TestContext(), {1, 3, 13, 13}), top(TestContext());
  FillUniform(&bottom, 0.f, 1.f, 37);
  auto layer = MakeLayer(
      "type: 'Pooling' phase: TEST pooling_param { pool: STOCHASTIC kernel_size: 3 stride: 2 }");
  layer->SetUp({&bottom}, {&top});
  ASSERT_EQ(top.shape(), (std::vector<int>{1, 3, 6, 6}));
  layer->Forward({&bottom}, {&top});
  std::vector<float> x = bottom.ReadData(), y = top.ReadData();
  for (int p = 0; p < 3; ++p)
    for (int ph = 0; ph < 6; ++ph)
      for (int pw = 0; pw < 6; ++pw) {
        double sum = 0, weighted = 0;
        for (int h = 2 * ph; h < std::min(2 * ph + 3, 13); ++h)
          for (int w = 2 * pw; w < std::min(2 * pw + 3, 13); ++w) {
            const double v = x[(p * 13 + h) * 13 + w];
            sum += v;
            weighted += v * v;
          }
        EXPECT_NEAR(y[(p * 6 + ph) * 6 + pw], weighted / sum, 1e-5) << p << " " << ph << " " << pw;
      }
  top.SetDiff(1.f);
  EXPECT_THROW(layer->Backward({&top}, {true}, {&bottom}), Error);
}

TEST(Pooling, BadParametersAreUserErrors) {
  Blob bottom(TestContext(), {1, 2, 6, 6}), top(TestContext()), extra(TestContext());
  const char* bad[] = {
      "pool: MAX kernel_size: 3 pad: 3",                       // pad >= kernel
      "pool: AVE kernel_size: 2 pad: 2",                       // pad >= kernel
      "pool: STOCHASTIC kernel_size: 3 pad: 1",                // no padding
      "pool: MAX kernel_size: 2 kernel_h: 2 kernel_w: 2",      // both forms
      "pool: MAX kernel_h: 2",                                 // half a rectangle
      "pool: MAX",                                             // no kernel
      "pool: MAX global_pooling: true kernel_size: 2",         // global with a kernel
      "pool: MAX global_pooling: true stride: 2",              // global with a stride
      "pool: MAX kernel_size: 2 pad: 1 pad_h: 1 pad_w: 1",     // both forms
      "pool: MAX kernel_size: 2 stride: 0",                    // zero stride
      "pool: MAX kernel_size: 9",                              // larger than the input
      "pool: MAX kernel_size: 2 average_excludes_padding: true",  // AVE only
  };
  for (const char* p : bad) {
    auto layer = MakeLayer(std::string("type: 'Pooling' pooling_param { ") + p + " }");
    EXPECT_THROW(layer->SetUp({&bottom}, {&top}), Error) << p;
  }
  // AVE has no mask top.
  auto ave = MakeLayer("type: 'Pooling' pooling_param { pool: AVE kernel_size: 2 }");
  EXPECT_THROW(ave->SetUp({&bottom}, {&top, &extra}), Error);
  // Not 4-D.
  Blob flat(TestContext(), {2, 36});
  auto max_layer = MakeLayer("type: 'Pooling' pooling_param { pool: MAX kernel_size: 2 }");
  EXPECT_THROW(max_layer->SetUp({&flat}, {&top}), Error);
}

}  // namespace test
}  // namespace dlcaffe
