// The pointwise layers in 16-bit storage (Layer::SupportsStorage): they load
// float16 or bfloat16 values as float, compute in float with the same body
// as in float32 storage, and round each result once to nearest even. So on
// inputs that the 16-bit type holds exactly, every output is the 16-bit
// rounding of the float32 layer's output, bit for bit, forward and backward
// (the float32 reference reads the same rounded top data in backward), in
// both kernel shapes, in place or not, on odd counts (vector loop and tail).
// CI runs each layer (and each Eltwise operation) in both 16-bit types but
// one kernel shape, alternating, so that each shape meets every other layer
// in both types; DLCAFFE_NIGHTLY=1 runs every layer in both shapes
// (util/test_depth.hpp).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dlcaffe/half_conversion.hpp"
#include "util/layer_test_util.hpp"
#include "util/storage_values.hpp"
#include "util/test_context.hpp"
#include "util/test_depth.hpp"

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
      {"type: 'Dropout' dropout_param { dropout_ratio: 0.3 } phase: TRAIN", -2, 2, true},
      {"type: 'Dropout' dropout_param { dropout_ratio: 0.3 } phase: TEST", -2, 2, true},
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
  ctx.Seed(99);  // Dropout's mask: the same in both runs
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
  // Whether entry `index` of a sweep runs in this kernel shape: in CI the
  // entries alternate between the shapes (each layer's kernels, in three
  // storage types, are a program build each per shape); all of them at
  // nightly depth.
  bool InThisShape(int index) const {
    return InSample(index, 2, std::string(GetParam()) == "gpu" ? 1 : 0);
  }
};

TEST_P(PointwiseStorage, SixteenBitResultsAreTheRoundedFloatResults) {
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    for (size_t i = 0; i < Cases().size(); ++i) {
      if (!InThisShape(static_cast<int>(i))) continue;
      const Case& c = Cases()[i];
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
          if (c.backward) {
            ASSERT_EQ(Bits(half.bottom_diff), Bits(RoundedTo(full.bottom_diff, type)))
                << "backward";
          }
        }
      }
    }
  }
}

// Eltwise over three bottoms, each operation, the same way (in CI, each
// operation in one kernel shape: InThisShape).
TEST_P(PointwiseStorage, EltwiseResultsAreTheRoundedFloatResults) {
  const std::vector<std::string> params = {
      "eltwise_param { operation: SUM }", "eltwise_param { operation: SUM coeff: 0.5 coeff: -1 coeff: 3 }",
      "eltwise_param { operation: PROD }", "eltwise_param { operation: PROD stable_prod_grad: false }",
      "eltwise_param { operation: MAX }"};
  const std::vector<int> shape = {5, 127};
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    for (size_t i = 0; i < params.size(); ++i) {
      if (!InThisShape(static_cast<int>(i))) continue;
      const std::string& param = params[i];
      SCOPED_TRACE(param + " " + StorageTypeName(type));
      Context& ctx = TestContext();
      std::vector<std::vector<float>> inputs;
      Blob source(ctx, shape);
      for (unsigned k = 0; k < 3; ++k) {
        FillUniform(&source, 0.25f, 2.f, 31 + k);  // away from 0: PROD's quotient
        inputs.push_back(RoundedTo(source.ReadData(), type));
      }
      FillUniform(&source, -1, 1, 37);
      const std::vector<float> dy = RoundedTo(source.ReadData(), type);
      struct Result { std::vector<float> top; std::vector<std::vector<float>> dx; };
      const auto run = [&](StorageType t, const std::vector<float>* top_data) {
        auto layer = MakeLayer("name: 'e' type: 'Eltwise' " + param);
        std::vector<std::unique_ptr<Blob>> blobs;
        std::vector<Blob*> bottoms;
        for (int k = 0; k < 4; ++k) {
          blobs.emplace_back(new Blob(ctx));
          blobs.back()->set_storage_type(t);
          blobs.back()->Reshape(shape);
        }
        for (int k = 0; k < 3; ++k) bottoms.push_back(blobs[k].get());
        const std::vector<Blob*> tops{blobs[3].get()};
        layer->SetUp(bottoms, tops);
        for (int k = 0; k < 3; ++k) bottoms[k]->WriteData(inputs[k]);
        layer->Forward(bottoms, tops);
        Result r;
        r.top = tops[0]->ReadData();
        if (top_data) tops[0]->WriteData(*top_data);
        tops[0]->WriteDiff(dy);
        layer->Backward(tops, {true, true, true}, bottoms);
        for (Blob* b : bottoms) r.dx.push_back(b->ReadDiff());
        return r;
      };
      const Result half = run(type, nullptr);
      const Result full = run(StorageType::kFloat32, &half.top);
      ASSERT_EQ(Bits(half.top), Bits(RoundedTo(full.top, type))) << "forward";
      for (int k = 0; k < 3; ++k)
        ASSERT_EQ(Bits(half.dx[k]), Bits(RoundedTo(full.dx[k], type))) << "bottom " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, PointwiseStorage, ::testing::Values("cpu", "gpu"));

}  // namespace
}  // namespace test
}  // namespace dlcaffe
