#include <gtest/gtest.h>

#include <cmath>

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

std::string RNNParam(bool expose_hidden = false) {
  return std::string("type: 'RNN' recurrent_param { num_output: ") + std::to_string(kD) +
         " weight_filler { type: 'uniform' min: -0.5 max: 0.5 }"
         " bias_filler { type: 'uniform' min: -0.5 max: 0.5 }" +
         (expose_hidden ? " expose_hidden: true" : "") + " }";
}

// The RNN on the host, unrolled in a plain loop, with Caffe's weight layout:
//     h_t = tanh(W_hh (cont_t h_{t-1}) + W_xh x_t + b_h + W_xh_static x_static)
//     o_t = tanh(W_ho h_t + b_o)
struct RNNReference {
  int T, N, K, S, D;
  std::vector<float> W_xh, b_h, W_xh_static, W_hh, W_ho, b_o;

  // x: T x N x K, cont: T x N, x_static: N x S (or empty), h_prev: N x D.
  // Returns o (T x N x D); h_T holds the final state.
  std::vector<double> Run(const std::vector<float>& x, const std::vector<float>& cont,
                          const std::vector<float>& x_static, std::vector<double> h_prev,
                          std::vector<double>* h_T) const {
    std::vector<double> out(T * N * D);
    for (int t = 0; t < T; ++t) {
      std::vector<double> h_next(N * D);
      for (int n = 0; n < N; ++n) {
        const double cn = cont[t * N + n];
        for (int j = 0; j < D; ++j) {
          double v = b_h[j];
          for (int k = 0; k < K; ++k) v += double(W_xh[j * K + k]) * x[(t * N + n) * K + k];
          for (int d = 0; d < D; ++d) v += double(W_hh[j * D + d]) * cn * h_prev[n * D + d];
          for (int s = 0; s < S; ++s) v += double(W_xh_static[j * S + s]) * x_static[n * S + s];
          h_next[n * D + j] = std::tanh(v);
        }
        for (int j = 0; j < D; ++j) {
          double v = b_o[j];
          for (int d = 0; d < D; ++d) v += double(W_ho[j * D + d]) * h_next[n * D + d];
          out[(t * N + n) * D + j] = std::tanh(v);
        }
      }
      h_prev = h_next;
    }
    if (h_T) *h_T = h_prev;
    return out;
  }
};

RNNReference ReferenceFor(Layer& layer, int S) {
  RNNReference ref{kT, kN, kK, S, kD, {}, {}, {}, {}, {}, {}};
  auto& blobs = layer.blobs();
  int p = 0;
  ref.W_xh = blobs[p++]->ReadData();
  ref.b_h = blobs[p++]->ReadData();
  if (S > 0) ref.W_xh_static = blobs[p++]->ReadData();
  ref.W_hh = blobs[p++]->ReadData();
  ref.W_ho = blobs[p++]->ReadData();
  ref.b_o = blobs[p++]->ReadData();
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

TEST(RNN, ParametersHaveCaffesOrderAndShapes) {
  Blob x(TestContext(), {kT, kN, kK}), cont(TestContext(), {kT, kN}), o(TestContext());
  auto layer = MakeLayer(RNNParam());
  layer->SetUp({&x, &cont}, {&o});
  const std::vector<std::vector<int>> shapes{{kD, kK}, {kD}, {kD, kD}, {kD, kD}, {kD}};
  ASSERT_EQ(layer->blobs().size(), shapes.size());  // W_xh, b_h, W_hh, W_ho, b_o
  for (size_t p = 0; p < shapes.size(); ++p)
    EXPECT_EQ(layer->blobs()[p]->shape(), shapes[p]) << "param " << p;
  EXPECT_EQ(o.shape(), (std::vector<int>{kT, kN, kD}));

  Blob x_static(TestContext(), {kN, kS});
  auto with_static = MakeLayer(RNNParam());
  with_static->SetUp({&x, &cont, &x_static}, {&o});
  ASSERT_EQ(with_static->blobs().size(), 6u);
  EXPECT_EQ(with_static->blobs()[2]->shape(), (std::vector<int>{kD, kS}));  // W_xh_static
  EXPECT_EQ(with_static->blobs()[3]->shape(), (std::vector<int>{kD, kD}));  // W_hh
}

TEST(RNN, ForwardMatchesReference) {
  Blob x(TestContext(), {kT, kN, kK}), cont(TestContext(), {kT, kN}), o(TestContext());
  FillGaussian(&x, 0.f, 1.f, 41);
  cont.WriteData(std::vector<float>{0, 0, 1, 0, 1, 1});  // stream 1 restarts at step 1
  auto layer = MakeLayer(RNNParam());
  layer->SetUp({&x, &cont}, {&o});
  layer->Forward({&x, &cont}, {&o});
  ExpectNear(o.ReadData(),
             ReferenceFor(*layer, 0).Run(x.ReadData(), cont.ReadData(), {}, Zeros(kN * kD),
                                         nullptr),
             "o");
}

// cont = 0 at a step starts a new sequence: earlier inputs of that stream no
// longer matter from there on.
TEST(RNN, ContZeroResetsTheState) {
  Blob x(TestContext(), {kT, kN, kK}), cont(TestContext(), {kT, kN}), o(TestContext());
  FillGaussian(&x, 0.f, 1.f, 42);
  cont.WriteData(std::vector<float>{0, 0, 1, 1, 1, 0});  // stream 1 restarts at step 2
  auto layer = MakeLayer(RNNParam());
  layer->SetUp({&x, &cont}, {&o});
  layer->Forward({&x, &cont}, {&o});
  const std::vector<float> before = o.ReadData();
  std::vector<float> xv = x.ReadData();
  for (int t = 0; t < 2; ++t)
    for (int k = 0; k < kK; ++k) xv[(t * kN + 1) * kK + k] -= 1.f;  // stream 1, steps 0-1
  x.WriteData(xv);
  layer->Forward({&x, &cont}, {&o});
  const std::vector<float> after = o.ReadData();
  for (int d = 0; d < kD; ++d) {
    EXPECT_EQ(after[(2 * kN + 1) * kD + d], before[(2 * kN + 1) * kD + d]) << d;
    EXPECT_NE(after[(1 * kN + 1) * kD + d], before[(1 * kN + 1) * kD + d]) << d;
    EXPECT_EQ(after[(2 * kN + 0) * kD + d], before[(2 * kN + 0) * kD + d]) << d;
  }
}

// Without expose_hidden the final state of one Forward starts the next, as
// in Caffe, unless cont = 0 at the first step.
TEST(RNN, StateCarriesOverBetweenForwards) {
  Blob x(TestContext(), {kT, kN, kK}), cont(TestContext(), {kT, kN}), o(TestContext());
  FillGaussian(&x, 0.f, 1.f, 43);
  cont.WriteData(std::vector<float>{0, 0, 1, 1, 1, 1});
  auto layer = MakeLayer(RNNParam());
  layer->SetUp({&x, &cont}, {&o});
  layer->Forward({&x, &cont}, {&o});
  const RNNReference ref = ReferenceFor(*layer, 0);
  std::vector<double> h_T;
  ref.Run(x.ReadData(), cont.ReadData(), {}, Zeros(kN * kD), &h_T);

  FillGaussian(&x, 0.f, 1.f, 44);
  cont.WriteData(std::vector<float>{0, 1, 1, 1, 1, 1});  // stream 1 continues
  layer->Forward({&x, &cont}, {&o});
  ExpectNear(o.ReadData(), ref.Run(x.ReadData(), cont.ReadData(), {}, h_T, nullptr),
             "second pass");
}

TEST(RNN, ExposeHiddenTakesAndGivesTheState) {
  Blob x(TestContext(), {kT, kN, kK}), cont(TestContext(), {kT, kN});
  Blob h0(TestContext(), {1, kN, kD}), o(TestContext()), h_T(TestContext());
  FillGaussian(&x, 0.f, 1.f, 45);
  FillGaussian(&h0, 0.f, 1.f, 46);
  cont.WriteData(std::vector<float>{1, 0, 1, 1, 1, 1});
  auto layer = MakeLayer(RNNParam(true));
  const std::vector<Blob*> bottom{&x, &cont, &h0}, top{&o, &h_T};
  layer->SetUp(bottom, top);
  ASSERT_EQ(h_T.shape(), (std::vector<int>{1, kN, kD}));
  std::vector<double> h_T_ref;
  const std::vector<double> o_ref = ReferenceFor(*layer, 0).Run(
      x.ReadData(), cont.ReadData(), {}, ToDouble(h0.ReadData()), &h_T_ref);
  for (int pass = 0; pass < 2; ++pass) {  // no state is carried between passes
    layer->Forward(bottom, top);
    ExpectNear(o.ReadData(), o_ref, "o");
    ExpectNear(h_T.ReadData(), h_T_ref, "h_T");
  }
}

TEST(RNN, StaticInputForwardMatchesReference) {
  Blob x(TestContext(), {kT, kN, kK}), cont(TestContext(), {kT, kN});
  Blob x_static(TestContext(), {kN, kS}), o(TestContext());
  FillGaussian(&x, 0.f, 1.f, 47);
  FillGaussian(&x_static, 0.f, 1.f, 48);
  cont.WriteData(std::vector<float>{0, 0, 1, 1, 0, 1});
  auto layer = MakeLayer(RNNParam());
  layer->SetUp({&x, &cont, &x_static}, {&o});
  layer->Forward({&x, &cont, &x_static}, {&o});
  ExpectNear(o.ReadData(),
             ReferenceFor(*layer, kS).Run(x.ReadData(), cont.ReadData(), x_static.ReadData(),
                                          Zeros(kN * kD), nullptr),
             "o");
}

// One time step of one stream: the slices and the concatenation are views.
TEST(RNN, SingleStepSingleStream) {
  Blob x(TestContext(), {1, 1, kK}), cont(TestContext(), {1, 1}), o(TestContext());
  FillGaussian(&x, 0.f, 1.f, 57);
  cont.WriteData(std::vector<float>{0});
  auto layer = MakeLayer(RNNParam());
  layer->SetUp({&x, &cont}, {&o});
  ASSERT_EQ(o.shape(), (std::vector<int>{1, 1, kD}));
  layer->Forward({&x, &cont}, {&o});
  RNNReference ref = ReferenceFor(*layer, 0);
  ref.T = 1;
  ref.N = 1;
  ExpectNear(o.ReadData(), ref.Run(x.ReadData(), cont.ReadData(), {}, Zeros(kD), nullptr), "o");
  GradientCheckOptions options;
  options.step = 1e-3f;
  CheckGradient(*layer, {&x, &cont}, {&o}, {0}, options);
}

// Gradients of x and of every parameter (W_xh, b_h, W_hh, W_ho, b_o). cont = 0
// at the first step so the state carried between the checker's passes plays
// no part.
TEST(RNN, GradientMatchesNumeric) {
  Blob x(TestContext(), {kT, kN, kK}), cont(TestContext(), {kT, kN}), o(TestContext());
  FillGaussian(&x, 0.f, 1.f, 49);
  cont.WriteData(std::vector<float>{0, 0, 1, 0, 1, 1});
  auto layer = MakeLayer(RNNParam());
  layer->SetUp({&x, &cont}, {&o});
  GradientCheckOptions options;
  options.step = 1e-3f;
  CheckGradient(*layer, {&x, &cont}, {&o}, {0}, options);
}

TEST(RNN, GradientWithStaticInput) {
  Blob x(TestContext(), {kT, kN, kK}), cont(TestContext(), {kT, kN});
  Blob x_static(TestContext(), {kN, kS}), o(TestContext());
  FillGaussian(&x, 0.f, 1.f, 50);
  FillGaussian(&x_static, 0.f, 1.f, 51);
  cont.WriteData(std::vector<float>{0, 0, 1, 1, 1, 0});
  auto layer = MakeLayer(RNNParam());
  layer->SetUp({&x, &cont, &x_static}, {&o});
  GradientCheckOptions options;
  options.step = 1e-3f;
  CheckGradient(*layer, {&x, &cont, &x_static}, {&o}, {0, 2}, options);
}

// With expose_hidden and a static input, every input but cont is
// differentiable, with gradients arriving from o and from the final state.
TEST(RNN, GradientWithExposedHiddenAndStaticInput) {
  Blob x(TestContext(), {kT, kN, kK}), cont(TestContext(), {kT, kN});
  Blob x_static(TestContext(), {kN, kS}), h0(TestContext(), {1, kN, kD});
  Blob o(TestContext()), h_T(TestContext());
  FillGaussian(&x, 0.f, 1.f, 52);
  FillGaussian(&x_static, 0.f, 1.f, 53);
  FillGaussian(&h0, 0.f, 1.f, 54);
  cont.WriteData(std::vector<float>{1, 0, 1, 1, 0, 1});
  auto layer = MakeLayer(RNNParam(true));
  const std::vector<Blob*> bottom{&x, &cont, &x_static, &h0}, top{&o, &h_T};
  layer->SetUp(bottom, top);
  ASSERT_EQ(layer->blobs().size(), 6u);
  GradientCheckOptions options;
  options.step = 1e-3f;
  CheckGradient(*layer, bottom, top, {0, 2, 3}, options);
}

TEST(RNN, ErrorsNameTheProblem) {
  Blob x(TestContext(), {kT, kN, kK}), cont(TestContext(), {kT, kN}), o(TestContext());
  Blob bad_cont(TestContext(), {kT + 1, kN});
  EXPECT_THROW(MakeLayer(RNNParam())->SetUp({&x, &bad_cont}, {&o}), Error);
  Blob bad_static(TestContext(), {kN + 1, kS});
  EXPECT_THROW(MakeLayer(RNNParam())->SetUp({&x, &cont, &bad_static}, {&o}), Error);
  Blob x_1d(TestContext(), {kT});
  EXPECT_THROW(MakeLayer(RNNParam())->SetUp({&x_1d, &cont}, {&o}), Error);

  auto layer = MakeLayer(RNNParam());
  layer->SetUp({&x, &cont}, {&o});
  EXPECT_FALSE(layer->AllowForceBackward(1));
  EXPECT_TRUE(layer->AllowForceBackward(0));
  layer->Forward({&x, &cont}, {&o});
  EXPECT_THROW(layer->Backward({&o}, {true, true}, {&x, &cont}), Error);
  Blob x_shorter(TestContext(), {kT - 1, kN, kK}), cont_shorter(TestContext(), {kT - 1, kN});
  EXPECT_THROW(layer->Reshape({&x_shorter, &cont_shorter}, {&o}), Error);
}

// The number of streams may change between passes (the unrolled net and the
// static input's reshape follow N).
TEST(RNN, StreamsMayChange) {
  Blob x(TestContext(), {kT, kN, kK}), cont(TestContext(), {kT, kN});
  Blob x_static(TestContext(), {kN, kS}), o(TestContext());
  auto layer = MakeLayer(RNNParam());
  layer->SetUp({&x, &cont, &x_static}, {&o});
  const int n = 3;
  Blob x3(TestContext(), {kT, n, kK}), cont3(TestContext(), {kT, n});
  Blob x_static3(TestContext(), {n, kS});
  FillGaussian(&x3, 0.f, 1.f, 55);
  FillGaussian(&x_static3, 0.f, 1.f, 56);
  cont3.WriteData(std::vector<float>{0, 0, 0, 1, 0, 1, 1, 1, 0});
  layer->Reshape({&x3, &cont3, &x_static3}, {&o});
  ASSERT_EQ(o.shape(), (std::vector<int>{kT, n, kD}));
  layer->Forward({&x3, &cont3, &x_static3}, {&o});
  RNNReference ref = ReferenceFor(*layer, kS);
  ref.N = n;
  ExpectNear(o.ReadData(),
             ref.Run(x3.ReadData(), cont3.ReadData(), x_static3.ReadData(), Zeros(n * kD),
                     nullptr),
             "o");
}

}  // namespace test
}  // namespace dlcaffe
