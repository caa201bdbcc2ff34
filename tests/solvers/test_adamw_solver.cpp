// The AdamW solver (dlcaffe's decoupled weight decay) against PyTorch's
// torch.optim.AdamW step, written out on the least-squares problem.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "util/least_squares_problem.hpp"

namespace dlcaffe {
namespace test {

namespace {

// torch.optim.AdamW, step t = iter + 1, in its own order:
//   w *= 1 - lr * wd
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2    (g carries no decay)
//   w -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// With L1 the decay step is w -= lr * wd * sign(w).
ReferenceRule PyTorchAdamWRule(double beta1, double beta2, double eps) {
  return [beta1, beta2, eps](const WeightStep& s, double* h) {
    const double sign = s.w > 0 ? 1.0 : (s.w < 0 ? -1.0 : 0.0);
    const double decayed = s.l1 ? s.w - s.rate * s.decay * sign : s.w * (1 - s.rate * s.decay);
    h[0] = beta1 * h[0] + (1 - beta1) * s.grad;
    h[1] = beta2 * h[1] + (1 - beta2) * s.grad * s.grad;
    const int t = s.iter + 1;
    const double bias1 = 1 - std::pow(beta1, t), bias2 = 1 - std::pow(beta2, t);
    const double denom = std::sqrt(h[1]) / std::sqrt(bias2) + eps;
    const double stepped = decayed - s.rate / bias1 * h[0] / denom;
    return s.w - stepped;
  };
}

caffe::SolverParameter Params(float weight_decay = 0, int iter_size = 1, float clip = -1) {
  caffe::SolverParameter p = LeastSquaresSolverParams("AdamW");
  p.set_momentum(0.9f);  // beta1; momentum2 (beta2) keeps Caffe's default 0.999
  p.set_weight_decay(weight_decay);
  p.set_iter_size(iter_size);
  p.set_clip_gradients(clip);
  return p;
}

}  // namespace

TEST(AdamWSolver, WithoutDecay) {
  ExpectSolverMatchesReference(Params(), PyTorchAdamWRule(0.9, 0.999, 1e-8), 8);
}
TEST(AdamWSolver, EpsIsAddedToTheBiasCorrectedRoot) {
  // Unlike Caffe's Adam: a large eps tells the two placements apart.
  caffe::SolverParameter p = Params();
  p.set_momentum(0.5f);
  p.set_momentum2(0.9f);
  p.set_delta(0.1f);
  ExpectSolverMatchesReference(p, PyTorchAdamWRule(0.5, 0.9, 0.1), 8);
}
TEST(AdamWSolver, DecoupledWeightDecay) {
  // Large enough that decay through the moments (Caffe's Adam) would differ.
  ExpectSolverMatchesReference(Params(0.5f), PyTorchAdamWRule(0.9, 0.999, 1e-8), 7);
}
TEST(AdamWSolver, DecoupledL1Decay) {
  caffe::SolverParameter p = Params(0.3f);
  p.set_regularization_type("L1");
  ExpectSolverMatchesReference(p, PyTorchAdamWRule(0.9, 0.999, 1e-8), 5);
}
TEST(AdamWSolver, WithIterSize) {
  ExpectSolverMatchesReference(Params(0.1f, 3), PyTorchAdamWRule(0.9, 0.999, 1e-8), 5);
}
TEST(AdamWSolver, WithGradientClippingAndIterSize) {
  caffe::SolverParameter p = Params(0.1f, 2, 0.1f);
  p.set_delta(0.05f);
  ExpectSolverMatchesReference(p, PyTorchAdamWRule(0.9, 0.999, 0.05), 6);
}

TEST(AdamWSolver, SnapshotAndResumeContinueExactly) {
  ExpectResumeContinuesExactly(Params(0.1f), 3, 4);
}

}  // namespace test
}  // namespace dlcaffe
