// The Nesterov solver against Caffe's closed form on the least-squares problem.
#include <gtest/gtest.h>

#include <google/protobuf/text_format.h>

#include <fstream>

#include "dlcaffe/io.hpp"
#include "util/least_squares_problem.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

// h_new = momentum * h + rate * g;  update = (1 + momentum) h_new - momentum h_old.
ReferenceRule NesterovRule(double momentum) {
  return [momentum](const WeightStep& s, double* h) {
    const double h_old = h[0];
    h[0] = momentum * h_old + s.rate * s.regularized();
    return (1 + momentum) * h[0] - momentum * h_old;
  };
}

caffe::SolverParameter Params(float momentum, float weight_decay = 0, int iter_size = 1,
                              float clip = -1) {
  caffe::SolverParameter p = LeastSquaresSolverParams("Nesterov");
  p.set_momentum(momentum);
  p.set_weight_decay(weight_decay);
  p.set_iter_size(iter_size);
  p.set_clip_gradients(clip);
  return p;
}

}  // namespace

TEST(NesterovSolver, WithoutMomentumIsGradientDescent) {
  ExpectSolverMatchesReference(Params(0), NesterovRule(0), 5);
}
TEST(NesterovSolver, WithMomentum) {
  ExpectSolverMatchesReference(Params(0.9f), NesterovRule(0.9), 7);
}
TEST(NesterovSolver, WithMomentumAndWeightDecay) {
  ExpectSolverMatchesReference(Params(0.9f, 0.1f), NesterovRule(0.9), 7);
}
TEST(NesterovSolver, WithL1WeightDecay) {
  caffe::SolverParameter p = Params(0.5f, 0.2f);
  p.set_regularization_type("L1");
  ExpectSolverMatchesReference(p, NesterovRule(0.5), 5);
}
TEST(NesterovSolver, WithIterSize) {
  ExpectSolverMatchesReference(Params(0.9f, 0.1f, 3), NesterovRule(0.9), 5);
}
TEST(NesterovSolver, WithGradientClippingAndIterSize) {
  ExpectSolverMatchesReference(Params(0.9f, 0.01f, 2, 0.1f), NesterovRule(0.9), 6);
}

TEST(NesterovSolver, DeprecatedSolverTypeEnumSelectsIt) {
  const std::string dir = TempDir();
  caffe::SolverParameter p = Params(0.9f);
  p.clear_type();
  p.set_solver_type(caffe::SolverParameter_SolverType_NESTEROV);
  std::string text;
  ASSERT_TRUE(google::protobuf::TextFormat::PrintToString(p, &text));
  std::ofstream(dir + "/solver.prototxt") << text;
  auto solver = SolverRegistry::Create(ReadSolverParams(dir + "/solver.prototxt"), TestContext());
  EXPECT_STREQ(solver->type(), "Nesterov");
}

}  // namespace test
}  // namespace dlcaffe
