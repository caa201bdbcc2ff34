// Beyond Caffe: training N iterations, snapshotting, and resuming to 2N gives
// the same weights, bit for bit, as 2N iterations without a stop — with a
// Data layer (position, random crops and mirrors) in the net.
#include <gtest/gtest.h>

#include <random>

#include "dlcaffe/io.hpp"
#include "dlcaffe/solver.hpp"
#include "util/datum_database.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

// 37 random 2x6x6 images in three classes (37 is not a multiple of the batch,
// so the resumed reader must also get the wrap-around right).
std::string MakeDatabase() {
  const std::string path = TempDir() + "/resume_lmdb";
  std::mt19937 rng(5);
  WriteDatumDatabase(path, 37, [&rng](int i) {
    return RawDatum(2, 6, 6, i % 3, [&rng](int) { return static_cast<int>(rng() % 256); });
  });
  return path;
}

caffe::SolverParameter Params(const std::string& type, const std::string& db,
                              const std::string& prefix) {
  caffe::SolverParameter p;
  ReadProtoFromTextString(R"(
    layer { name: 'data' type: 'Data' top: 'data' top: 'label'
            transform_param { scale: 0.0039 crop_size: 5 mirror: true }
            data_param { source: ')" + db + R"(' batch_size: 5 backend: LMDB } }
    layer { name: 'ip1' type: 'InnerProduct' bottom: 'data' top: 'ip1'
            inner_product_param { num_output: 7 weight_filler { type: 'xavier' } } }
    layer { name: 'relu' type: 'ReLU' bottom: 'ip1' top: 'ip1' }
    layer { name: 'ip2' type: 'InnerProduct' bottom: 'ip1' top: 'ip2'
            inner_product_param { num_output: 3 weight_filler { type: 'xavier' } } }
    layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip2' bottom: 'label' top: 'loss' })",
                          "<net>", p.mutable_net_param());
  p.set_type(type);
  p.set_base_lr(0.05f);
  p.set_lr_policy("inv");
  p.set_gamma(0.01f);
  p.set_power(0.75f);
  p.set_momentum(0.9f);
  p.set_weight_decay(0.001f);
  p.set_max_iter(100);
  p.set_display(0);
  p.set_random_seed(77);
  p.set_snapshot_prefix(prefix);
  p.set_snapshot_after_train(false);
  return p;
}

std::vector<std::vector<float>> Weights(Solver& solver) {
  std::vector<std::vector<float>> w;
  for (Blob* p : solver.net().learnable_params()) w.push_back(p->ReadData());
  return w;
}

}  // namespace

class ExactResume : public ::testing::TestWithParam<std::string> {};

TEST_P(ExactResume, ResumedRunEqualsUninterruptedRunBitwise) {
  const std::string db = MakeDatabase();
  const std::string prefix = TempDir() + "/resume";
  const int N = 9;
  std::vector<std::vector<float>> uninterrupted;
  {
    auto solver = SolverRegistry::Create(Params(GetParam(), db, prefix + "_full"), TestContext());
    solver->Step(2 * N);
    uninterrupted = Weights(*solver);
  }
  {
    auto first = SolverRegistry::Create(Params(GetParam(), db, prefix), TestContext());
    first->Step(N);
    first->Snapshot();
  }
  // Disturb the shared context's generator: the restore must not depend on it.
  TestContext().Seed(12345);
  auto resumed = SolverRegistry::Create(Params(GetParam(), db, prefix), TestContext());
  resumed->Restore(prefix + "_iter_" + std::to_string(N) + ".solverstate");
  ASSERT_EQ(resumed->iter(), N);
  resumed->Step(N);
  const auto weights = Weights(*resumed);
  ASSERT_EQ(weights.size(), uninterrupted.size());
  for (size_t i = 0; i < weights.size(); ++i)
    EXPECT_EQ(weights[i], uninterrupted[i]) << "parameter blob " << i << " differs";
}

TEST_P(ExactResume, StateKeepsCaffesFieldsReadable) {
  const std::string db = MakeDatabase();
  const std::string prefix = TempDir() + "/fields";
  auto solver = SolverRegistry::Create(Params(GetParam(), db, prefix), TestContext());
  solver->Step(3);
  solver->Snapshot();
  caffe::SolverState state;
  ReadProtoFromBinaryFile(prefix + "_iter_3.solverstate", &state);
  EXPECT_EQ(state.iter(), 3);
  EXPECT_EQ(state.learned_net(), prefix + "_iter_3.caffemodel");
  EXPECT_GE(state.history_size(), 4);
  ASSERT_EQ(state.data_cursor_size(), 1);
  EXPECT_EQ(state.data_cursor(0).layer_name(), "train/data");
  EXPECT_EQ(state.data_cursor(0).position(), 15u);  // 3 batches of 5 delivered
}

TEST(ExactResumeErrors, TruncatedStateIsRefused) {
  const std::string db = MakeDatabase();
  const std::string prefix = TempDir() + "/truncated";
  auto solver = SolverRegistry::Create(Params("SGD", db, prefix), TestContext());
  solver->Step(1);
  solver->Snapshot();
  const std::string path = prefix + "_iter_1.solverstate";
  caffe::SolverState state;
  ReadProtoFromBinaryFile(path, &state);
  std::string bytes;
  state.SerializeToString(&bytes);
  WriteFileAtomically(path, bytes.substr(0, bytes.size() - 7));
  try {
    solver->Restore(path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Solvers, ExactResume, ::testing::Values("SGD", "Adam"));

}  // namespace test
}  // namespace dlcaffe
