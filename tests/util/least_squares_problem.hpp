// The least-squares problem of Caffe's solver tests, y = X w + b with
// E = ||y - t||^2 / (2N), and a host reference loop (double precision) that
// replays any solver's per-weight rule on it, so each solver test only writes
// its closed-form update.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "caffe.pb.h"
#include "dlcaffe/solver.hpp"

namespace dlcaffe {
namespace test {

constexpr int kLeastSquaresN = 7;  // samples
constexpr int kLeastSquaresD = 5;  // features
// Learnable values in the order the references use: the kLeastSquaresD weights
// (lr_mult 1, decay_mult 1), then the bias (lr_mult 2, decay_mult 0).
constexpr int kLeastSquaresParams = kLeastSquaresD + 1;

// Solver settings on the problem: `type`, base_lr 0.05 with lr_policy "step"
// (gamma 0.5, stepsize 3), no display, no snapshots, seeded.
caffe::SolverParameter LeastSquaresSolverParams(const std::string& type);

// A solver on the problem with seeded Gaussian X and t, and its start point.
struct LeastSquaresRun {
  std::unique_ptr<Solver> solver;
  std::vector<float> X, t;
  std::vector<double> start;  // kLeastSquaresParams values, as the references order them
};
LeastSquaresRun MakeLeastSquaresRun(const caffe::SolverParameter& param);

// The net's current learnable values in reference order.
std::vector<double> LeastSquaresValues(Solver& solver);

// What a solver's rule sees for one weight in one iteration.
struct WeightStep {
  double w;      // the weight before the step
  double grad;   // the gradient after clipping and iter_size normalisation, no decay
  double rate;   // the policy's learning rate * lr_mult
  double decay;  // weight_decay * decay_mult
  bool l1;       // regularization_type "L1"
  int iter;      // the iteration (0-based) this step completes
  // Caffe's regularised gradient: grad + decay * w (L2) or decay * sign(w) (L1).
  double regularized() const;
};
// One solver's rule for one weight: returns the update (w -= update) and
// advances that weight's history h[0], h[1] (both zero at the start).
using ReferenceRule = std::function<double(const WeightStep& step, double* h)>;

// Replays `iters` iterations of the solver's rule from `values` (reference
// order) with Caffe's loop: iter_size passes over the same batch, gradient
// clipping on the accumulated gradient, then normalisation, then the rule.
void ReferenceSteps(const caffe::SolverParameter& param, const std::vector<float>& X,
                    const std::vector<float>& t, const ReferenceRule& rule, int iters,
                    std::vector<double>* values);

// Runs the solver `iters` iterations on the problem and expects the weights to
// match the reference within `tolerance` (relative to max(1, |w|)).
void ExpectSolverMatchesReference(const caffe::SolverParameter& param,
                                  const ReferenceRule& rule, int iters,
                                  double tolerance = 1e-4);

// Trains `before` iterations, snapshots, trains `after` more; a fresh solver
// restored from the snapshot and trained `after` iterations must end with
// bitwise the same weights (so the history and iteration are restored whole).
void ExpectResumeContinuesExactly(caffe::SolverParameter param, int before, int after);

}  // namespace test
}  // namespace dlcaffe
