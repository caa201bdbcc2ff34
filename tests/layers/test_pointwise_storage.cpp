// The pointwise layers in 16-bit storage (Layer::SupportsStorage): they load
// float16 or bfloat16 values as float, compute in float with the same body
// as in float32 storage, and round each result once to nearest even. So on
// inputs that the 16-bit type holds exactly, every output is the 16-bit
// rounding of the float32 layer's output, bit for bit, forward and backward
// (the float32 reference reads the same rounded top data in backward), in
// both kernel shapes, in place or not, on odd counts (vector loop and tail).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "dlcaffe/half_conversion.hpp"
#include "util/layer_test_util.hpp"
#include "util/storage_values.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

struct Case {
  std::string layer;  // the LayerParameter text
  float lo, hi;       // the input range
  bool backward;
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {"type: 'ReLU' relu_param { negative_slope: 0.1 }", -3, 3, true},
      {"type: 'Sigmoid'", -6, 6, true},
      {"type: 'TanH'", -3, 3, true},
      {"type: 'AbsVal'", -3, 3, true},
      {"type: 'BNLL'", -3, 3, true},
      {"type: 'Clip' clip_param { min: -0.5 max: 1.25 }", -2, 2, true},
      {"type: 'ELU' elu_param { alpha: 0.7 }", -3, 3, true},
      {"type: 'Erf'", -2, 2, true},
      {"type: 'Exp' exp_param { base: 2 scale: 0.5 shift: 0.25 }", -3, 3, true},
      {"type: 'GELU'", -3, 3, true},
      {"type: 'GELU' gelu_param { approximate: TANH }", -3, 3, true},
      {"type: 'HardSigmoid' hard_sigmoid_param { alpha: 0.2 beta: 0.5 }", -4, 4, true},
      {"type: 'HardSwish'", -4, 4, true},
      {"type: 'Log' log_param { base: 10 scale: 2 shift: 0.5 }", 0.1f, 4, true},
      {"type: 'Power' power_param { power: 2 scale: 0.5 shift: 1 }", -2, 2, true},
      {"type: 'Swish' swish_param { beta: 1.5 }", -4, 4, true},
      {"type: 'Threshold' threshold_param { threshold: 0.25 }", -1, 1, false},
  };
  return cases;
}

// Bit patterns, so that NaN == NaN and -0 != +0.
std::vector<uint32_t> Bits(const std::vector<float>& values) {
  std::vector<uint32_t> bits(values.size());
  std::memcpy(bits.data(), values.data(), values.size() * sizeof(float));
  return bits;
}

struct Result {
  std::vector<float> top, bottom_diff;
};

// Runs the layer with blobs of `type`; `top_data_for_backward`, if given,
// replaces the top's data before backward (the float32 reference reads the
// rounded values the 16-bit run stored).
Result RunLayer(const Case& c, StorageType type, bool in_place, const std::vector<float>& x,
           const std::vector<float>& dy, const std::vector<int>& shape,
           const std::vector<float>* top_data_for_backward = nullptr) {
  Context& ctx = TestContext();
  auto layer = MakeLayer("name: 'l' " + c.layer);
  Blob bottom(ctx), top_blob(ctx);
  bottom.set_storage_type(type);
  top_blob.set_storage_type(type);
  bottom.Reshape(shape);
  Blob* top = in_place ? &bottom : &top_blob;
  const std::vector<Blob*> bottoms{&bottom}, tops{top};
  layer->SetUp(bottoms, tops);
  bottom.WriteData(x);
  layer->Forward(bottoms, tops);
  Result r;
  r.top = top->ReadData();
  if (!c.backward) return r;
  if (top_data_for_backward) top->WriteData(*top_data_for_backward);
  top->WriteDiff(dy);
  layer->Backward(tops, {true}, bottoms);
  r.bottom_diff = bottom.ReadDiff();
  return r;
}

class PointwiseStorage : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { SetTestOption("kernel_shape", GetParam()); }
  void TearDown() override { ResetTestOption("kernel_shape"); }
};

TEST_P(PointwiseStorage, SixteenBitResultsAreTheRoundedFloatResults) {
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    for (const Case& c : Cases()) {
      for (bool in_place : {false, true}) {
        for (const std::vector<int>& shape :
             std::vector<std::vector<int>>{{1}, {13, 7}, {5, 127}}) {
          SCOPED_TRACE(c.layer + " " + StorageTypeName(type) + (in_place ? " in place" : "") +
                       " count " + std::to_string(shape.size() == 1 ? 1 : shape[0] * shape[1]));
          Blob source(TestContext(), shape);
          FillUniform(&source, c.lo, c.hi, 17);
          const std::vector<float> x = RoundedTo(source.ReadData(), type);
          FillUniform(&source, -1, 1, 23);
          const std::vector<float> dy = RoundedTo(source.ReadData(), type);

          const Result half = RunLayer(c, type, in_place, x, dy, shape);
          const std::vector<float> rounded_top = half.top;
          const Result full =
              RunLayer(c, StorageType::kFloat32, in_place, x, dy, shape, &rounded_top);
          ASSERT_EQ(Bits(half.top), Bits(RoundedTo(full.top, type))) << "forward";
          if (c.backward)
            ASSERT_EQ(Bits(half.bottom_diff), Bits(RoundedTo(full.bottom_diff, type)))
                << "backward";
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, PointwiseStorage, ::testing::Values("cpu", "gpu"));

}  // namespace
}  // namespace test
}  // namespace dlcaffe
