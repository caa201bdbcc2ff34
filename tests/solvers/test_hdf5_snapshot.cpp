// snapshot_format: HDF5 — Caffe's .caffemodel.h5 and .solverstate.h5 — and
// exact resume from them, with an HDF5Data layer shuffling its rows.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "dlcaffe/io.hpp"
#include "dlcaffe/solver.hpp"
#include "util/hdf5_test_files.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

// Two files of 7 and 6 rows of 4 values, labels in three classes.
std::string MakeData(const std::string& dir) {
  std::string list;
  for (int f = 0; f < 2; ++f) {
    const int rows = 7 - f;
    H5Dataset data{"data", {uint64_t(rows), 4}, {}}, label{"label", {uint64_t(rows)}, {}};
    for (int r = 0; r < rows; ++r) {
      label.values.push_back((r + f) % 3);
      for (int k = 0; k < 4; ++k) data.values.push_back(((r * 7 + k * 3 + f) % 11) / 11.0 - 0.5);
    }
    const std::string path = dir + "/part" + std::to_string(f) + ".h5";
    WriteH5(path, {data, label});
    list += path + "\n";
  }
  std::ofstream(dir + "/list.txt") << list;
  return dir + "/list.txt";
}

caffe::SolverParameter Params(const std::string& list, const std::string& prefix) {
  caffe::SolverParameter p;
  ReadProtoFromTextString(R"(
    layer { name: 'data' type: 'HDF5Data' top: 'data' top: 'label'
            hdf5_data_param { source: ')" +
                              list + R"(' batch_size: 4 shuffle: true } }
    layer { name: 'ip1' type: 'InnerProduct' bottom: 'data' top: 'ip1'
            inner_product_param { num_output: 5 weight_filler { type: 'xavier' } } }
    layer { name: 'relu' type: 'ReLU' bottom: 'ip1' top: 'ip1' }
    layer { name: 'ip2' type: 'InnerProduct' bottom: 'ip1' top: 'ip2'
            inner_product_param { num_output: 3 weight_filler { type: 'xavier' } } }
    layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip2' bottom: 'label' top: 'loss' })",
                          "<net>", p.mutable_net_param());
  p.set_type("SGD");
  p.set_base_lr(0.05f);
  p.set_lr_policy("step");
  p.set_gamma(0.5f);
  p.set_stepsize(4);
  p.set_momentum(0.9f);
  p.set_max_iter(100);
  p.set_display(0);
  p.set_random_seed(77);
  p.set_snapshot_prefix(prefix);
  p.set_snapshot_after_train(false);
  p.set_snapshot_format(caffe::SolverParameter_SnapshotFormat_HDF5);
  return p;
}

std::vector<std::vector<float>> Weights(Solver& solver) {
  std::vector<std::vector<float>> w;
  for (Blob* p : solver.net().learnable_params()) w.push_back(p->ReadData());
  return w;
}

}  // namespace

TEST(Hdf5Snapshot, WritesCaffesFilesAndResumesExactly) {
  const std::string dir = TempDir();
  const std::string list = MakeData(dir);
  const int N = 5;
  std::vector<std::vector<float>> uninterrupted;
  {
    auto solver = SolverRegistry::Create(Params(list, dir + "/full"), TestContext());
    solver->Step(2 * N);
    uninterrupted = Weights(*solver);
  }
  const std::string prefix = dir + "/run";
  {
    auto first = SolverRegistry::Create(Params(list, prefix), TestContext());
    first->Step(N);
    first->Snapshot();
    // Caffe's layout: the weights by layer, the state's fields as datasets.
    const std::string model = prefix + "_iter_5.caffemodel.h5";
    const std::string state = prefix + "_iter_5.solverstate.h5";
    EXPECT_EQ(ReadH5(model, "data/ip1/0").values.size(), 20u);
    EXPECT_EQ(ReadH5(model, "data/ip2/1").values.size(), 3u);
    EXPECT_EQ(ReadH5(state, "iter").values, std::vector<double>({5}));
    EXPECT_EQ(ReadH5(state, "iter").type, H5T_NATIVE_INT);
    EXPECT_EQ(ReadH5(state, "current_step").values, std::vector<double>({1}));
    EXPECT_EQ(ReadH5(state, "history/0").dims, std::vector<uint64_t>({5, 4}));
    EXPECT_TRUE(H5Has(state, "history/3"));
    EXPECT_FALSE(H5Has(state, "history/4"));
    EXPECT_TRUE(H5Has(state, "learned_net"));
    caffe::SolverState read;
    EXPECT_EQ(Solver::ReadSnapshot(state, &read), model);
    EXPECT_EQ(read.iter(), N);
    EXPECT_EQ(read.history_size(), 4);
    EXPECT_EQ(read.data_cursor_size(), 1);
    EXPECT_FALSE(FileExists(prefix + "_iter_5.caffemodel"));
  }
  TestContext().Seed(12345);  // the restore must not depend on it
  auto resumed = SolverRegistry::Create(Params(list, prefix), TestContext());
  resumed->Restore(prefix + "_iter_5.solverstate.h5");
  ASSERT_EQ(resumed->iter(), N);
  resumed->Step(N);
  const auto weights = Weights(*resumed);
  ASSERT_EQ(weights.size(), uninterrupted.size());
  for (size_t i = 0; i < weights.size(); ++i)
    EXPECT_EQ(weights[i], uninterrupted[i]) << "parameter blob " << i << " differs";
}

TEST(Hdf5Snapshot, CaffesStateWithoutRunStateResumes) {
  // What Caffe writes: iter, learned_net, current_step, history; no dlcaffe
  // extension.
  const std::string dir = TempDir();
  const std::string list = MakeData(dir);
  auto solver = SolverRegistry::Create(Params(list, dir + "/c"), TestContext());
  solver->Step(2);
  solver->Snapshot();
  const std::string model = dir + "/c_iter_2.caffemodel.h5";
  std::vector<H5Dataset> state = {{"iter", {1}, {7}, H5T_NATIVE_INT},
                                  {"current_step", {1}, {0}, H5T_NATIVE_INT}};
  for (int i = 0; i < 4; ++i) {
    H5Dataset h = ReadH5(dir + "/c_iter_2.solverstate.h5", "history/" + std::to_string(i));
    h.name = "history/" + std::to_string(i);
    h.type = H5T_NATIVE_FLOAT;
    state.push_back(h);
  }
  WriteH5(dir + "/caffe.solverstate.h5", state);
  auto resumed = SolverRegistry::Create(Params(list, dir + "/c"), TestContext());
  resumed->Restore(dir + "/caffe.solverstate.h5");
  EXPECT_EQ(resumed->iter(), 7);
  resumed->Step(1);
}

}  // namespace test
}  // namespace dlcaffe
