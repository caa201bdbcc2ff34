#include <gtest/gtest.h>

#include <cmath>

#include "dlcaffe/io.hpp"
#include "dlcaffe/net.hpp"
#include "dlcaffe/solver.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

constexpr int kT = 3;  // time steps
constexpr int kN = 2;  // streams
constexpr int kK = 3;  // input dimension
constexpr int kS = 2;  // static input dimension
constexpr int kD = 4;  // num_output

std::string LSTMParam(bool expose_hidden = false) {
  return std::string("type: 'LSTM' recurrent_param { num_output: ") + std::to_string(kD) +
         " weight_filler { type: 'uniform' min: -0.5 max: 0.5 }"
         " bias_filler { type: 'uniform' min: -0.5 max: 0.5 }" +
         (expose_hidden ? " expose_hidden: true" : "") + " }";
}

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// The LSTM on the host, unrolled in a plain loop. Weights as Caffe stores
// them: W_xc (4D x K), b_c (4D), W_xc_static (4D x S, may be empty), W_hc
// (4D x D), gates in the order i, f, o, g.
struct LSTMReference {
  int T, N, K, S, D;
  std::vector<float> W_xc, b_c, W_xc_static, W_hc;

  // x: T x N x K, cont: T x N, x_static: N x S (or empty), h0/c0: N x D.
  // Returns h (T x N x D); h_T and c_T hold the final states.
  std::vector<double> Run(const std::vector<float>& x, const std::vector<float>& cont,
                          const std::vector<float>& x_static, std::vector<double> h_prev,
                          std::vector<double> c_prev, std::vector<double>* h_T,
                          std::vector<double>* c_T) const {
    std::vector<double> out(T * N * D);
    for (int t = 0; t < T; ++t) {
      std::vector<double> h_next(N * D), c_next(N * D);
      for (int n = 0; n < N; ++n) {
        const double cn = cont[t * N + n];
        std::vector<double> gate(4 * D);
        for (int j = 0; j < 4 * D; ++j) {
          double v = b_c[j];
          for (int k = 0; k < K; ++k) v += double(W_xc[j * K + k]) * x[(t * N + n) * K + k];
          for (int d = 0; d < D; ++d) v += double(W_hc[j * D + d]) * cn * h_prev[n * D + d];
          for (int s = 0; s < S; ++s) v += double(W_xc_static[j * S + s]) * x_static[n * S + s];
          gate[j] = v;
        }
        for (int d = 0; d < D; ++d) {
          const double i = Sigmoid(gate[d]);
          const double f = cn * Sigmoid(gate[D + d]);
          const double o = Sigmoid(gate[2 * D + d]);
          const double g = std::tanh(gate[3 * D + d]);
          const double c = f * c_prev[n * D + d] + i * g;
          c_next[n * D + d] = c;
          h_next[n * D + d] = o * std::tanh(c);
          out[(t * N + n) * D + d] = h_next[n * D + d];
        }
      }
      h_prev = h_next;
      c_prev = c_next;
    }
    if (h_T) *h_T = h_prev;
    if (c_T) *c_T = c_prev;
    return out;
  }
};

LSTMReference ReferenceFor(Layer& layer, int K, int S) {
  LSTMReference ref{kT, kN, K, S, kD, {}, {}, {}, {}};
  auto& blobs = layer.blobs();
  ref.W_xc = blobs[0]->ReadData();
  ref.b_c = blobs[1]->ReadData();
  if (S > 0) ref.W_xc_static = blobs[2]->ReadData();
  ref.W_hc = blobs[S > 0 ? 3 : 2]->ReadData();
  return ref;
}

std::vector<double> Zeros(int n) { return std::vector<double>(n, 0.0); }
std::vector<double> ToDouble(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

void ExpectNear(const std::vector<float>& actual, const std::vector<double>& expected,
                const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], 1e-5) << what << " element " << i;
}

}  // namespace

TEST(LSTM, ParametersHaveCaffesOrderAndShapes) {
  Blob x(TestContext(), {kT, kN, kK}), cont(TestContext(), {kT, kN}), h(TestContext());
  auto layer = MakeLayer(LSTMParam());
  layer->SetUp({&x, &cont}, {&h});
  ASSERT_EQ(layer->blobs().size(), 3u);
  EXPECT_EQ(layer->blobs()[0]->shape(), (std::vector<int>{4 * kD, kK}));  // W_xc
  EXPECT_EQ(layer->blobs()[1]->shape(), (std::vector<int>{4 * kD}));      // b_c
  EXPECT_EQ(layer->blobs()[2]->shape(), (std::vector<int>{4 * kD, kD}));  // W_hc
  EXPECT_EQ(h.shape(), (std::vector<int>{kT, kN, kD}));

  Blob x_static(TestContext(), {kN, kS});
  auto with_static = MakeLayer(LSTMParam());
  with_static->SetUp({&x, &cont, &x_static}, {&h});
  ASSERT_EQ(with_static->blobs().size(), 4u);
  EXPECT_EQ(with_static->blobs()[2]->shape(), (std::vector<int>{4 * kD, kS}));  // W_xc_static
  EXPECT_EQ(with_static->blobs()[3]->shape(), (std::vector<int>{4 * kD, kD}));  // W_hc
}

TEST(LSTM, ForwardMatchesReference) {
  // x with a trailing axis of 1: the input dimension is everything after N.
  Blob x(TestContext(), {kT, kN, kK, 1}), cont(TestContext(), {kT, kN}), h(TestContext());
  FillGaussian(&x, 0.f, 1.f, 21);
  // Stream 1 starts a new sequence at step 1.
  cont.WriteData(std::vector<float>{0, 0, 1, 0, 1, 1});
  auto layer = MakeLayer(LSTMParam());
  layer->SetUp({&x, &cont}, {&h});
  layer->Forward({&x, &cont}, {&h});
  const LSTMReference ref = ReferenceFor(*layer, kK, 0);
  ExpectNear(h.ReadData(),
             ref.Run(x.ReadData(), cont.ReadData(), {}, Zeros(kN * kD), Zeros(kN * kD),
                     nullptr, nullptr),
             "h");
}

// cont = 0 at a step starts a new sequence: earlier inputs of that stream no
// longer matter from there on.
TEST(LSTM, ContZeroResetsTheState) {
  Blob x(TestContext(), {kT, kN, kK}), cont(TestContext(), {kT, kN}), h(TestContext());
  FillGaussian(&x, 0.f, 1.f, 22);
  cont.WriteData(std::vector<float>{0, 0, 1, 1, 0, 1});  // stream 0 restarts at step 2
  auto layer = MakeLayer(LSTMParam());
  layer->SetUp({&x, &cont}, {&h});
  layer->Forward({&x, &cont}, {&h});
  const std::vector<float> before = h.ReadData();
  std::vector<float> xv = x.ReadData();
  for (int t = 0; t < 2; ++t)
    for (int k = 0; k < kK; ++k) xv[(t * kN + 0) * kK + k] += 1.f;  // stream 0, steps 0-1
  x.WriteData(xv);
  layer->Forward({&x, &cont}, {&h});
  const std::vector<float> after = h.ReadData();
  for (int d = 0; d < kD; ++d) {
    EXPECT_EQ(after[(2 * kN + 0) * kD + d], before[(2 * kN + 0) * kD + d]) << d;
    EXPECT_NE(after[(1 * kN + 0) * kD + d], before[(1 * kN + 0) * kD + d]) << d;
    EXPECT_EQ(after[(2 * kN + 1) * kD + d], before[(2 * kN + 1) * kD + d]) << d;
  }
}

// Without expose_hidden the final state of one Forward starts the next, as
// in Caffe, unless cont = 0 at the first step; Reset() is not needed then.
TEST(LSTM, StateCarriesOverBetweenForwards) {
  Blob x(TestContext(), {kT, kN, kK}), cont(TestContext(), {kT, kN}), h(TestContext());
  FillGaussian(&x, 0.f, 1.f, 23);
  cont.WriteData(std::vector<float>{0, 0, 1, 1, 1, 1});
  auto layer = MakeLayer(LSTMParam());
  layer->SetUp({&x, &cont}, {&h});
  layer->Forward({&x, &cont}, {&h});
  const LSTMReference ref = ReferenceFor(*layer, kK, 0);
  std::vector<double> h_T, c_T;
  ref.Run(x.ReadData(), cont.ReadData(), {}, Zeros(kN * kD), Zeros(kN * kD), &h_T, &c_T);

  FillGaussian(&x, 0.f, 1.f, 24);
  cont.WriteData(std::vector<float>{1, 0, 1, 1, 1, 1});  // stream 0 continues
  layer->Forward({&x, &cont}, {&h});
  ExpectNear(h.ReadData(), ref.Run(x.ReadData(), cont.ReadData(), {}, h_T, c_T, nullptr, nullptr),
             "second pass");
}

TEST(LSTM, ExposeHiddenTakesAndGivesTheStates) {
  Blob x(TestContext(), {kT, kN, kK}), cont(TestContext(), {kT, kN});
  Blob h0(TestContext(), {1, kN, kD}), c0(TestContext(), {1, kN, kD});
  Blob h(TestContext()), h_T(TestContext()), c_T(TestContext());
  FillGaussian(&x, 0.f, 1.f, 25);
  FillGaussian(&h0, 0.f, 1.f, 26);
  FillGaussian(&c0, 0.f, 1.f, 27);
  cont.WriteData(std::vector<float>{1, 0, 1, 1, 1, 1});
  auto layer = MakeLayer(LSTMParam(true));
  const std::vector<Blob*> bottom{&x, &cont, &h0, &c0}, top{&h, &h_T, &c_T};
  layer->SetUp(bottom, top);
  ASSERT_EQ(layer->blobs().size(), 3u);
  ASSERT_EQ(h_T.shape(), (std::vector<int>{1, kN, kD}));
  ASSERT_EQ(c_T.shape(), (std::vector<int>{1, kN, kD}));
  const LSTMReference ref = ReferenceFor(*layer, kK, 0);
  std::vector<double> h_T_ref, c_T_ref;
  const std::vector<double> h_ref = ref.Run(x.ReadData(), cont.ReadData(), {},
                                            ToDouble(h0.ReadData()), ToDouble(c0.ReadData()),
                                            &h_T_ref, &c_T_ref);
  for (int pass = 0; pass < 2; ++pass) {  // no state is carried between passes
    layer->Forward(bottom, top);
    ExpectNear(h.ReadData(), h_ref, "h");
    ExpectNear(h_T.ReadData(), h_T_ref, "h_T");
    ExpectNear(c_T.ReadData(), c_T_ref, "c_T");
  }
}

TEST(LSTM, StaticInputForwardMatchesReference) {
  Blob x(TestContext(), {kT, kN, kK}), cont(TestContext(), {kT, kN});
  Blob x_static(TestContext(), {kN, kS}), h(TestContext());
  FillGaussian(&x, 0.f, 1.f, 28);
  FillGaussian(&x_static, 0.f, 1.f, 29);
  cont.WriteData(std::vector<float>{0, 0, 1, 1, 0, 1});
  auto layer = MakeLayer(LSTMParam());
  layer->SetUp({&x, &cont, &x_static}, {&h});
  layer->Forward({&x, &cont, &x_static}, {&h});
  const LSTMReference ref = ReferenceFor(*layer, kK, kS);
  ExpectNear(h.ReadData(),
             ref.Run(x.ReadData(), cont.ReadData(), x_static.ReadData(), Zeros(kN * kD),
                     Zeros(kN * kD), nullptr, nullptr),
             "h");
}

// One time step of one stream: the slices and the concatenation are views.
TEST(LSTM, SingleStepSingleStream) {
  Blob x(TestContext(), {1, 1, kK}), cont(TestContext(), {1, 1}), h(TestContext());
  FillGaussian(&x, 0.f, 1.f, 40);
  cont.WriteData(std::vector<float>{0});
  auto layer = MakeLayer(LSTMParam());
  layer->SetUp({&x, &cont}, {&h});
  ASSERT_EQ(h.shape(), (std::vector<int>{1, 1, kD}));
  layer->Forward({&x, &cont}, {&h});
  LSTMReference ref = ReferenceFor(*layer, kK, 0);
  ref.T = 1;
  ref.N = 1;
  ExpectNear(h.ReadData(),
             ref.Run(x.ReadData(), cont.ReadData(), {}, Zeros(kD), Zeros(kD), nullptr, nullptr),
             "h");
  GradientCheckOptions options;
  options.step = 1e-3f;
  CheckGradient(*layer, {&x, &cont}, {&h}, {0}, options);
}

// Gradients of x and of every parameter (W_xc, b_c, W_hc). cont = 0 at the
// first step so the state carried between the checker's passes plays no part.
TEST(LSTM, GradientMatchesNumeric) {
  Blob x(TestContext(), {kT, kN, kK}), cont(TestContext(), {kT, kN}), h(TestContext());
  FillGaussian(&x, 0.f, 1.f, 30);
  cont.WriteData(std::vector<float>{0, 0, 1, 0, 1, 1});
  auto layer = MakeLayer(LSTMParam());
  layer->SetUp({&x, &cont}, {&h});
  GradientCheckOptions options;
  options.step = 1e-3f;
  CheckGradient(*layer, {&x, &cont}, {&h}, {0}, options);
}

TEST(LSTM, GradientWithStaticInput) {
  Blob x(TestContext(), {kT, kN, kK}), cont(TestContext(), {kT, kN});
  Blob x_static(TestContext(), {kN, kS}), h(TestContext());
  FillGaussian(&x, 0.f, 1.f, 31);
  FillGaussian(&x_static, 0.f, 1.f, 32);
  cont.WriteData(std::vector<float>{0, 0, 1, 1, 1, 0});
  auto layer = MakeLayer(LSTMParam());
  layer->SetUp({&x, &cont, &x_static}, {&h});
  GradientCheckOptions options;
  options.step = 1e-3f;
  CheckGradient(*layer, {&x, &cont, &x_static}, {&h}, {0, 2}, options);
}

// With expose_hidden every input is differentiable: x, the initial states
// h_0 and c_0, with gradients arriving from h and the final states h_T, c_T.
TEST(LSTM, GradientWithExposedHidden) {
  Blob x(TestContext(), {kT, kN, kK}), cont(TestContext(), {kT, kN});
  Blob h0(TestContext(), {1, kN, kD}), c0(TestContext(), {1, kN, kD});
  Blob h(TestContext()), h_T(TestContext()), c_T(TestContext());
  FillGaussian(&x, 0.f, 1.f, 33);
  FillGaussian(&h0, 0.f, 1.f, 34);
  FillGaussian(&c0, 0.f, 1.f, 35);
  cont.WriteData(std::vector<float>{1, 0, 1, 1, 0, 1});
  auto layer = MakeLayer(LSTMParam(true));
  const std::vector<Blob*> bottom{&x, &cont, &h0, &c0}, top{&h, &h_T, &c_T};
  layer->SetUp(bottom, top);
  GradientCheckOptions options;
  options.step = 1e-3f;
  CheckGradient(*layer, bottom, top, {0, 2, 3}, options);
}

TEST(LSTM, ErrorsNameTheProblem) {
  Blob x(TestContext(), {kT, kN, kK}), cont(TestContext(), {kT, kN}), h(TestContext());
  Blob bad_cont(TestContext(), {kT, kN + 1});
  EXPECT_THROW(MakeLayer(LSTMParam())->SetUp({&x, &bad_cont}, {&h}), Error);
  EXPECT_THROW(MakeLayer("type: 'LSTM' recurrent_param { num_output: 0 }")->SetUp({&x, &cont}, {&h}),
               Error);
  // expose_hidden needs the initial states as bottoms and the final ones as tops.
  EXPECT_THROW(MakeLayer(LSTMParam(true))->SetUp({&x, &cont}, {&h}), Error);
  Blob h0(TestContext(), {1, kN, kD}), c0_bad(TestContext(), {1, kN, kD + 1});
  Blob h_T(TestContext()), c_T(TestContext());
  EXPECT_THROW(MakeLayer(LSTMParam(true))->SetUp({&x, &cont, &h0, &c0_bad}, {&h, &h_T, &c_T}),
               Error);

  auto layer = MakeLayer(LSTMParam());
  layer->SetUp({&x, &cont}, {&h});
  EXPECT_FALSE(layer->AllowForceBackward(1));
  layer->Forward({&x, &cont}, {&h});
  EXPECT_THROW(layer->Backward({&h}, {true, true}, {&x, &cont}), Error);
  // The number of time steps is fixed by the unrolling.
  Blob x_longer(TestContext(), {kT + 1, kN, kK}), cont_longer(TestContext(), {kT + 1, kN});
  try {
    layer->Reshape({&x_longer, &cont_longer}, {&h});
    FAIL() << "a new number of time steps must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("time steps"), std::string::npos) << e.what();
  }
}

// Inside a Net: the weights are saved and loaded in Caffe's layout, and a test
// net sharing the trained weights computes with them at every time step.
TEST(LSTM, InNetWeightsSaveLoadAndShare) {
  const std::string net_text =
      "name: 'lstm_net' "
      "layer { name: 'data' type: 'Input' top: 'x' top: 'cont' "
      "  input_param { shape { dim: 3 dim: 2 dim: 3 } shape { dim: 3 dim: 2 } } } "
      "layer { name: 'lstm' type: 'LSTM' bottom: 'x' bottom: 'cont' top: 'h' "
      "  recurrent_param { num_output: 4 "
      "    weight_filler { type: 'uniform' min: -0.5 max: 0.5 } "
      "    bias_filler { type: 'uniform' min: -0.5 max: 0.5 } } }";
  caffe::NetParameter param;
  ReadProtoFromTextString(net_text, "<lstm net>", &param);
  param.mutable_state()->set_phase(caffe::TRAIN);
  Net train(param, TestContext());
  param.mutable_state()->set_phase(caffe::TEST);
  Net test(param, TestContext());
  ASSERT_EQ(train.learnable_params().size(), 3u);

  auto run = [](Net& net, const std::vector<float>& xv) {
    net.blob_by_name("x")->WriteData(xv);
    net.blob_by_name("cont")->WriteData(std::vector<float>{0, 0, 1, 1, 1, 1});
    net.Forward();
    return net.blob_by_name("h")->ReadData();
  };
  Blob xs(TestContext(), {kT, kN, kK});
  FillGaussian(&xs, 0.f, 1.f, 36);
  const std::vector<float> xv = xs.ReadData();

  test.ShareTrainedLayersWith(train);
  EXPECT_EQ(run(test, xv), run(train, xv));
  // A changed recurrent weight reaches every step of the sharing net.
  Blob* W_hc = train.layer_by_name("lstm")->blobs()[2].get();
  std::vector<float> w = W_hc->ReadData();
  for (float& v : w) v *= -1.5f;
  W_hc->WriteData(w);
  EXPECT_EQ(run(test, xv), run(train, xv));

  // Round trip through a NetParameter with blobs (what a .caffemodel holds).
  caffe::NetParameter saved;
  train.ToProto(&saved);
  ASSERT_EQ(saved.layer(1).blobs_size(), 3);
  param.mutable_state()->set_phase(caffe::TRAIN);
  Net loaded(param, TestContext());
  loaded.CopyTrainedLayersFrom(saved);
  EXPECT_EQ(run(loaded, xv), run(train, xv));
}

// debug_info runs the unrolled net layer by layer with logging; the results
// are those of the plain run.
TEST(LSTM, DebugInfoKeepsTheResults) {
  Blob x(TestContext(), {kT, kN, kK}), cont(TestContext(), {kT, kN});
  Blob h_plain(TestContext()), h_debug(TestContext());
  FillGaussian(&x, 0.f, 1.f, 37);
  cont.WriteData(std::vector<float>{0, 0, 1, 0, 1, 1});
  auto plain = MakeLayer(LSTMParam());
  auto debug = MakeLayer(
      "type: 'LSTM' recurrent_param { num_output: 4 debug_info: true "
      "weight_filler { type: 'gaussian' std: 0.3 } }");
  plain->SetUp({&x, &cont}, {&h_plain});
  debug->SetUp({&x, &cont}, {&h_debug});
  for (size_t p = 0; p < plain->blobs().size(); ++p)
    debug->blobs()[p]->WriteData(plain->blobs()[p]->ReadData());
  plain->Forward({&x, &cont}, {&h_plain});
  debug->Forward({&x, &cont}, {&h_debug});
  EXPECT_EQ(h_debug.ReadData(), h_plain.ReadData());

  Blob dh(TestContext(), {kT, kN, kD});
  FillGaussian(&dh, 0.f, 1.f, 38);
  std::vector<std::vector<float>> x_diffs;
  std::vector<std::vector<float>> W_hc_diffs;
  for (auto [layer, h] : {std::make_pair(plain.get(), &h_plain),
                          std::make_pair(debug.get(), &h_debug)}) {
    h->WriteDiff(dh.ReadData());
    for (auto& blob : layer->blobs()) blob->SetDiff(0.f);
    layer->Backward({h}, {true, false}, {&x, &cont});
    x_diffs.push_back(x.ReadDiff());
    W_hc_diffs.push_back(layer->blobs()[2]->ReadDiff());
  }
  EXPECT_EQ(x_diffs[1], x_diffs[0]);
  EXPECT_EQ(W_hc_diffs[1], W_hc_diffs[0]);
}

// A solver trains the LSTM (through its shared per-step weights) to output its
// previous input: the loss of a fixed batch falls to a small part of its start.
TEST(LSTM, LearnsToDelayItsInput) {
  const int T = 6, N = 16;
  caffe::SolverParameter solver_param;
  ReadProtoFromTextString(
      "layer { name: 'data' type: 'Input' top: 'x' top: 'cont' top: 'target' "
      "  input_param { shape { dim: 6 dim: 16 dim: 1 } shape { dim: 6 dim: 16 } "
      "                shape { dim: 6 dim: 16 dim: 1 } } } "
      "layer { name: 'lstm' type: 'LSTM' bottom: 'x' bottom: 'cont' top: 'h' "
      "  recurrent_param { num_output: 8 weight_filler { type: 'uniform' min: -0.3 max: 0.3 } } } "
      "layer { name: 'out' type: 'InnerProduct' bottom: 'h' top: 'y' "
      "  inner_product_param { num_output: 1 axis: 2 weight_filler { type: 'xavier' } } } "
      "layer { name: 'loss' type: 'EuclideanLoss' bottom: 'y' bottom: 'target' top: 'loss' }",
      "<delay net>", solver_param.mutable_net_param());
  solver_param.set_type("Adam");
  solver_param.set_base_lr(0.03f);
  solver_param.set_momentum(0.9f);
  solver_param.set_momentum2(0.999f);
  solver_param.set_lr_policy("fixed");
  solver_param.set_max_iter(1000);
  solver_param.set_display(0);
  solver_param.set_snapshot_after_train(false);
  solver_param.set_random_seed(1701);
  auto solver = SolverRegistry::Create(solver_param, TestContext());
  Net& net = solver->net();
  ASSERT_EQ(net.learnable_params().size(), 5u);  // W_xc, b_c, W_hc, out weights and bias

  Blob xs(TestContext(), {T, N, 1});
  FillGaussian(&xs, 0.f, 1.f, 39);
  const std::vector<float> x = xs.ReadData();
  std::vector<float> cont(T * N, 1.f), target(T * N, 0.f);
  for (int n = 0; n < N; ++n) cont[n] = 0.f;
  for (int i = N; i < T * N; ++i) target[i] = x[i - N];
  net.blob_by_name("x")->WriteData(x);
  net.blob_by_name("cont")->WriteData(cont);
  net.blob_by_name("target")->WriteData(target);

  const float start = net.Forward();
  solver->Step(150);
  const float end = net.Forward();
  EXPECT_LT(end, 0.02f * start) << "loss from " << start << " to " << end;
}

}  // namespace test
}  // namespace dlcaffe
