// LSTM and RNN with 16-bit x, x_static, states and outputs (mixed precision;
// cont stays float32). The unrolled net stores the layer's type in every
// blob but cont's, with no Convert layer inside, and its layers round each
// stored value once (each one's own test checks that bit for bit). So the
// whole layer lands near the float32 layer on the same weights and inputs:
// within a few roundings of the type per step, forward (also with the state
// carried into a second pass) and backward, with a static input and exposed
// states or without; and debug_info changes no bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../../src/core/recurrent_layer.hpp"
#include "../../src/passes/net_pass.hpp"
#include "util/error_of.hpp"
#include "util/layer_test_util.hpp"
#include "util/storage_values.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

constexpr int kT = 4;  // time steps
constexpr int kN = 3;  // streams
constexpr int kK = 5;  // input dimension
constexpr int kS = 2;  // static input dimension
constexpr int kD = 6;  // num_output

struct Config {
  const char* type;  // LSTM or RNN
  int states;        // recurrent states (h, c or h)
  bool static_input, expose_hidden, debug_info;
};

std::string Param(const Config& c) {
  return std::string("name: 'rec' type: '") + c.type + "' recurrent_param { num_output: " +
         std::to_string(kD) +
         " weight_filler { type: 'uniform' min: -0.5 max: 0.5 }"
         " bias_filler { type: 'uniform' min: -0.5 max: 0.5 }" +
         (c.expose_hidden ? " expose_hidden: true" : "") +
         (c.debug_info ? " debug_info: true" : "") + " }";
}

struct Inputs {
  std::vector<float> x, cont, x_static, dtop;
  std::vector<std::vector<float>> states, dstates;  // initial states, final states' diffs
  std::vector<std::vector<float>> weights;
};

struct RecurrentRun {
  std::vector<float> top, second_top;  // second_top: the carried state's pass
  std::vector<std::vector<float>> final_states;
  std::vector<std::vector<float>> bottom_diffs, param_diffs;
};

RecurrentRun RunRecurrent(const Config& config, StorageType type, const Inputs& in) {
  Context& ctx = TestContext();
  auto layer = MakeLayer(Param(config));
  Blob x(ctx), cont(ctx, {kT, kN}), x_static(ctx), top(ctx);
  std::vector<std::unique_ptr<Blob>> states, final_states;
  std::vector<Blob*> bottom = {&x, &cont}, tops = {&top};
  for (Blob* b : {&x, &x_static, &top}) b->set_storage_type(type);
  x.Reshape({kT, kN, kK});
  x_static.Reshape({kN, kS});
  if (config.static_input) bottom.push_back(&x_static);
  for (int s = 0; config.expose_hidden && s < config.states; ++s) {
    states.push_back(std::make_unique<Blob>(ctx));
    states.back()->set_storage_type(type);
    states.back()->Reshape({1, kN, kD});
    bottom.push_back(states.back().get());
    final_states.push_back(std::make_unique<Blob>(ctx));
    final_states.back()->set_storage_type(type);
    tops.push_back(final_states.back().get());
  }
  layer->SetUp(bottom, tops);
  EXPECT_EQ(layer->blobs().size(), in.weights.size());
  for (size_t p = 0; p < layer->blobs().size(); ++p) {
    layer->blobs()[p]->WriteData(in.weights[p]);
    layer->blobs()[p]->SetDiff(0.f);
  }
  x.WriteData(in.x);
  cont.WriteData(in.cont);
  if (config.static_input) x_static.WriteData(in.x_static);
  for (size_t s = 0; s < states.size(); ++s) states[s]->WriteData(in.states[s]);
  layer->Forward(bottom, tops);
  RecurrentRun r;
  r.top = top.ReadData();
  for (auto& state : final_states) r.final_states.push_back(state->ReadData());
  top.WriteDiff(in.dtop);
  for (size_t s = 0; s < final_states.size(); ++s) final_states[s]->WriteDiff(in.dstates[s]);
  std::vector<bool> propagate_down(bottom.size(), true);
  propagate_down[1] = false;
  layer->Backward(tops, propagate_down, bottom);
  for (size_t b = 0; b < bottom.size(); ++b)
    if (b != 1) r.bottom_diffs.push_back(bottom[b]->ReadDiff());
  for (auto& blob : layer->blobs()) r.param_diffs.push_back(blob->ReadDiff());
  if (!config.expose_hidden) {
    // The state the first pass ended with starts the second (cont 1).
    cont.WriteData(std::vector<float>(kT * kN, 1.f));
    layer->Forward(bottom, tops);
    r.second_top = top.ReadData();
  }
  // Inside: every blob in the layer's type but cont's, and nothing converted.
  const Net& net = dynamic_cast<const RecurrentLayer&>(*layer).unrolled_net();
  for (const auto& inner : net.layers()) EXPECT_NE(std::string(inner->type()), "Convert");
  for (size_t b = 0; b < net.blobs().size(); ++b) {
    const std::string& name = net.blob_names()[b];
    const bool is_cont = name.rfind("cont", 0) == 0;
    EXPECT_EQ(StorageTypeName(net.blobs()[b]->storage_type()),
              StorageTypeName(is_cont ? StorageType::kFloat32 : type))
        << name;
  }
  return r;
}

std::vector<float> Uniform(int n, float lo, float hi, unsigned seed) {
  Blob blob(TestContext(), {n});
  FillUniform(&blob, lo, hi, seed);
  return blob.ReadData();
}

// |half - full| <= bound * max |full| for every element, and the 16-bit
// layer did round somewhere.
void ExpectClose(const std::vector<float>& half, const std::vector<float>& full, double bound,
                 const std::string& what) {
  ASSERT_EQ(half.size(), full.size()) << what;
  double scale = 0, error = 0;
  for (size_t i = 0; i < full.size(); ++i) {
    scale = std::max(scale, std::fabs(double(full[i])));
    error = std::max(error, std::fabs(double(half[i]) - full[i]));
  }
  EXPECT_GT(scale, 0) << what;
  EXPECT_LE(error, bound * scale) << what << ": largest difference " << error << " of "
                                  << scale;
  EXPECT_NE(half, full) << what << ": nothing was rounded";
}

class RecurrentStorage : public ::testing::TestWithParam<Config> {};

TEST_P(RecurrentStorage, SixteenBitLayerStaysNearTheFloatLayer) {
  const Config config = GetParam();
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    SCOPED_TRACE(StorageTypeName(type));
    Inputs in;
    in.x = RoundedTo(Uniform(kT * kN * kK, -1.f, 1.f, 11), type);
    // Stream 0 starts from no state, stream 1 starts a new sequence at step 2.
    for (int t = 0; t < kT; ++t)
      for (int n = 0; n < kN; ++n)
        in.cont.push_back((t == 0 && n == 0) || (t == 2 && n == 1) ? 0.f : 1.f);
    in.x_static = RoundedTo(Uniform(kN * kS, -1.f, 1.f, 12), type);
    in.dtop = RoundedTo(Uniform(kT * kN * kD, -1.f, 1.f, 13), type);
    for (int s = 0; s < config.states; ++s) {
      in.states.push_back(RoundedTo(Uniform(kN * kD, -1.f, 1.f, 14 + s), type));
      in.dstates.push_back(RoundedTo(Uniform(kN * kD, -1.f, 1.f, 16 + s), type));
    }
    {
      Config plain = config;
      plain.debug_info = false;
      auto weights = MakeLayer(Param(plain));
      Blob x(TestContext(), {kT, kN, kK}), cont(TestContext(), {kT, kN}),
          x_static(TestContext(), {kN, kS}), top(TestContext());
      std::vector<Blob*> bottom = {&x, &cont};
      if (config.static_input) bottom.push_back(&x_static);
      std::vector<std::unique_ptr<Blob>> extra;
      std::vector<Blob*> tops = {&top};
      for (int s = 0; config.expose_hidden && s < config.states; ++s) {
        extra.push_back(std::make_unique<Blob>(TestContext(), std::vector<int>{1, kN, kD}));
        bottom.push_back(extra.back().get());
        extra.push_back(std::make_unique<Blob>(TestContext()));
        tops.push_back(extra.back().get());
      }
      weights->SetUp(bottom, tops);
      for (auto& blob : weights->blobs()) in.weights.push_back(blob->ReadData());
    }
    const RecurrentRun half = RunRecurrent(config, type, in);
    const RecurrentRun full = RunRecurrent(config, StorageType::kFloat32, in);
    // A few roundings of the type per step (eps 2^-11 for float16, 2^-8
    // for bfloat16), over kT steps; measured on PoCL: up to 2.6 eps.
    const double eps = type == StorageType::kFloat16 ? 1.0 / 2048 : 1.0 / 256;
    const double bound = 2 * kT * eps;
    ExpectClose(half.top, full.top, bound, "top");
    if (!config.expose_hidden) ExpectClose(half.second_top, full.second_top, bound, "second top");
    for (size_t s = 0; s < full.final_states.size(); ++s)
      ExpectClose(half.final_states[s], full.final_states[s], bound, "final state");
    for (size_t b = 0; b < full.bottom_diffs.size(); ++b)
      ExpectClose(half.bottom_diffs[b], full.bottom_diffs[b], bound,
                  "bottom diff " + std::to_string(b));
    for (size_t p = 0; p < full.param_diffs.size(); ++p)
      ExpectClose(half.param_diffs[p], full.param_diffs[p], bound,
                  "param diff " + std::to_string(p));
    if (config.debug_info) {
      Config plain = config;
      plain.debug_info = false;
      const RecurrentRun quiet = RunRecurrent(plain, type, in);
      EXPECT_EQ(half.top, quiet.top);
      EXPECT_EQ(half.bottom_diffs, quiet.bottom_diffs);
      EXPECT_EQ(half.param_diffs, quiet.param_diffs);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Layers, RecurrentStorage,
    ::testing::Values(Config{"LSTM", 2, false, false, false}, Config{"LSTM", 2, true, true, false},
                      Config{"LSTM", 2, false, false, true}, Config{"RNN", 1, false, false, false},
                      Config{"RNN", 1, true, true, false}),
    [](const ::testing::TestParamInfo<Config>& info) {
      return std::string(info.param.type) + (info.param.static_input ? "_static" : "") +
             (info.param.expose_hidden ? "_exposed" : "") +
             (info.param.debug_info ? "_debug_info" : "");
    });

// In a 16-bit net the recurrent layer stores 16 bits: x narrows, cont (an
// Input read only by it) stays float32, nothing is converted for it.
TEST(RecurrentStorage, ANetStoresTheLayerIn16BitsAndKeepsContInFloat) {
  for (const char* type : {"LSTM", "RNN"}) {
    caffe::NetParameter typed;
    AssignStorageTypes(NetFromText(std::string(R"(
        name: 'seq' default_forward_type: BFLOAT16
        layer { name: 'x' type: 'Input' top: 'x' input_param { shape { dim: 4 dim: 3 dim: 5 } } }
        layer { name: 'cont' type: 'Input' top: 'cont' input_param { shape { dim: 4 dim: 3 } } }
        layer { name: 'rec' type: ')") + type + R"(' bottom: 'x' bottom: 'cont' top: 'h'
                recurrent_param { num_output: 6 } })"),
                       TestContext(), &typed);
    ASSERT_EQ(typed.layer_size(), 3) << type << ": " << typed.DebugString();
    EXPECT_EQ(typed.layer(0).forward_type(), caffe::BFLOAT16) << type;
    EXPECT_EQ(typed.layer(1).forward_type(), caffe::FLOAT) << type;
    EXPECT_EQ(typed.layer(2).forward_type(), caffe::BFLOAT16) << type;
    EXPECT_EQ(typed.layer(2).bottom(1), "cont") << type;
  }
}

TEST(RecurrentStorage, BlobsOfOtherTypesAreRefusedNamingTheLayer) {
  Context& ctx = TestContext();
  const Config lstm{"LSTM", 2, false, false, false};
  {
    auto layer = MakeLayer(Param(lstm));
    Blob x(ctx), cont(ctx), h(ctx);
    for (Blob* b : {&x, &cont, &h}) b->set_storage_type(StorageType::kFloat16);
    x.Reshape({kT, kN, kK});
    cont.Reshape({kT, kN});
    const std::string error = ErrorOf([&] { layer->SetUp({&x, &cont}, {&h}); });
    EXPECT_NE(error.find("layer 'rec' (LSTM): bottom[1] (cont) must be stored in float32, got "
                         "float16"),
              std::string::npos)
        << error;
  }
  {
    auto layer = MakeLayer(Param(lstm));
    Blob x(ctx), cont(ctx, {kT, kN}), h(ctx);
    x.set_storage_type(StorageType::kBFloat16);
    x.Reshape({kT, kN, kK});
    const std::string error = ErrorOf([&] { layer->SetUp({&x, &cont}, {&h}); });
    EXPECT_NE(error.find("layer 'rec' (LSTM): top[0] must be stored as x is (bfloat16), got "
                         "float32"),
              std::string::npos)
        << error;
  }
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
