// Data-parallel training (data_parallel.hpp) against its definition: R
// replicas with batch B each, reading disjoint shares of an LMDB through a
// Data layer, take the same steps as one replica with batch R × B reading the
// same records, because their gradients are averaged before each update. The
// sums run in another order (per replica, then across replicas), so the
// weights agree to float rounding, not bit for bit. The replicas themselves
// must agree bit for bit: they apply the same averaged gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "caffe.pb.h"
#include "dlcaffe/data_parallel.hpp"
#include "dlcaffe/io.hpp"
#include "dlcaffe/solver.hpp"
#include "util/datum_database.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

constexpr int kRecords = 37;  // not a multiple of any batch: epochs wrap mid-batch

// Record i: a 1 × 5 × 4 image of pixels (i * 37 + j * 11) % 256, label i % 4.
std::string MakeDataset() {
  const std::string path = TempDir() + "/db";
  WriteDatumDatabase(path, kRecords, [](int i) {
    return RawDatum(1, 5, 4, i % 4, [i](int j) { return i * 37 + j * 11; });
  });
  return path;
}

caffe::NetParameter TrainNet(const std::string& source, int batch) {
  caffe::NetParameter net;
  const std::string text = R"(name: "mlp"
layer { name: "data" type: "Data" top: "data" top: "label"
  transform_param { scale: 0.00390625 }
  data_param { source: ")" + source + R"(" batch_size: )" + std::to_string(batch) +
                           R"( backend: LMDB } }
layer { name: "ip1" type: "InnerProduct" bottom: "data" top: "ip1"
  inner_product_param { num_output: 7 weight_filler { type: "gaussian" std: 0.3 }
                        bias_filler { type: "constant" value: 0.1 } } }
layer { name: "relu" type: "ReLU" bottom: "ip1" top: "ip1" }
layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2"
  inner_product_param { num_output: 4 weight_filler { type: "gaussian" std: 0.3 } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" }
)";
  ReadProtoFromTextString(text, "the test's net", &net);
  return net;
}

caffe::SolverParameter Solver(const std::string& type, const std::string& source, int batch,
                              int iters) {
  caffe::SolverParameter param;
  *param.mutable_net_param() = TrainNet(source, batch);
  param.set_type(type);
  // A rate that moves each solver well within a few steps.
  const std::map<std::string, float> rates = {{"SGD", 0.2f},     {"Nesterov", 0.2f},
                                              {"AdaGrad", 0.1f}, {"RMSProp", 0.01f},
                                              {"AdaDelta", 1.f}, {"Adam", 0.01f},
                                              {"AdamW", 0.01f}};
  param.set_base_lr(rates.at(type));
  // AdaGrad and RMSProp take no momentum; AdaDelta's is its decay.
  if (type != "AdaGrad" && type != "RMSProp") param.set_momentum(type == "AdaDelta" ? 0.95f : 0.9f);
  param.set_weight_decay(0.001f);
  param.set_lr_policy("fixed");
  param.set_max_iter(iters);
  param.set_display(0);
  param.set_snapshot(0);
  param.set_snapshot_after_train(false);
  param.set_random_seed(1234);
  return param;
}

using Weights = std::vector<std::vector<float>>;

Weights WeightsOf(const Net& net) {
  Weights weights;
  for (const Blob* p : net.learnable_params()) weights.push_back(p->ReadData());
  return weights;
}

Weights TrainOne(const caffe::SolverParameter& param) {
  auto ctx = Context::Create("");
  auto solver = SolverRegistry::Create(param, *ctx);
  solver->Solve();
  return WeightsOf(solver->net());
}

// Trains `replicas` replicas on the default device; returns each one's
// weights, by replica index.
std::vector<Weights> TrainReplicas(const caffe::SolverParameter& param, int replicas) {
  DataParallelOptions options;
  options.devices.assign(replicas, "");
  options.bucket_bytes = 64;  // several buckets even for this small net
  std::mutex mutex;
  std::vector<Weights> weights(replicas);
  options.on_trained = [&](dlcaffe::Solver& solver) {
    std::lock_guard<std::mutex> lock(mutex);
    weights[solver.net().context().replica().index] = WeightsOf(solver.net());
  };
  auto processes = ProcessGroup::Single();
  TrainDataParallel(param, options, *processes);
  return weights;
}

double MaxDifference(const Weights& a, const Weights& b) {
  double most = 0;
  for (size_t p = 0; p < a.size(); ++p)
    for (size_t i = 0; i < a[p].size(); ++i)
      most = std::max(most, static_cast<double>(std::fabs(a[p][i] - b[p][i])));
  return most;
}

double MaxChange(const Weights& trained, const Weights& initial) {
  return MaxDifference(trained, initial);
}

struct Case {
  std::string solver;
  int replicas, batch, iter_size, iters;
};

class DataParallelEquivalence : public ::testing::TestWithParam<Case> {};

TEST_P(DataParallelEquivalence, MatchesOneReplicaWithTheCombinedBatch) {
  const Case c = GetParam();
  const std::string source = MakeDataset();
  caffe::SolverParameter parallel = Solver(c.solver, source, c.batch, c.iters);
  caffe::SolverParameter single = Solver(c.solver, source, c.batch * c.replicas, c.iters);
  parallel.set_iter_size(c.iter_size);
  single.set_iter_size(c.iter_size);

  const std::vector<Weights> replicas = TrainReplicas(parallel, c.replicas);
  const Weights one = TrainOne(single);
  caffe::SolverParameter untrained = single;
  untrained.set_max_iter(0);
  const Weights initial = TrainOne(untrained);

  // Training moved the weights far beyond the tolerance below (AdaDelta's
  // first steps are the smallest, ~2e-3), so the comparison can tell a wrong
  // step from rounding.
  ASSERT_GT(MaxChange(one, initial), 1e-3);
  std::cout << c.solver << ": largest change " << MaxChange(one, initial)
            << ", largest difference from one replica " << MaxDifference(replicas[0], one)
            << std::endl;
  // Rounding of sums in another order, over a few steps: at most 1.4e-7 on
  // PoCL (RMSProp; 3e-8 to 6e-8 for the others, printed above), the bound
  // leaving room for other devices' GEMM orders; a wrong mean (e.g. summed,
  // not averaged) or a wrong share of the data moves weights by about as
  // much as training does (2e-3 to 0.35 here).
  EXPECT_LT(MaxDifference(replicas[0], one), 2e-5)
      << c.replicas << " replicas × batch " << c.batch << " against one replica × batch "
      << c.batch * c.replicas;
  for (int r = 1; r < c.replicas; ++r)
    EXPECT_EQ(replicas[r], replicas[0]) << "replica " << r << " differs from replica 0";
}

// Epochs of 37 records wrap mid-batch within these iteration counts.
INSTANTIATE_TEST_SUITE_P(
    Solvers, DataParallelEquivalence,
    ::testing::Values(Case{"SGD", 2, 3, 1, 9}, Case{"Adam", 2, 3, 1, 9},
                      Case{"SGD", 2, 4, 2, 6}, Case{"SGD", 3, 2, 1, 8},
                      Case{"Nesterov", 2, 3, 1, 5}, Case{"AdaGrad", 2, 3, 1, 5},
                      Case{"RMSProp", 2, 3, 1, 5}, Case{"AdaDelta", 2, 3, 1, 5},
                      Case{"AdamW", 2, 3, 1, 5}),
    [](const ::testing::TestParamInfo<Case>& info) {
      return info.param.solver + "_" + std::to_string(info.param.replicas) + "x" +
             std::to_string(info.param.batch) + "_iter_size_" +
             std::to_string(info.param.iter_size);
    });

}  // namespace
}  // namespace test
}  // namespace dlcaffe
