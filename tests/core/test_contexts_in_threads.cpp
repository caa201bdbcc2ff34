// What docs/cpp-api.md promises about threads: contexts are independent, so
// threads that each own a Context and a Net may run at the same time and get
// exactly what one thread alone gets.
#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

#include "dlcaffe/context.hpp"
#include "dlcaffe/io.hpp"
#include "dlcaffe/net.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

const char kNet[] = R"(name: "small"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 3 dim: 2 dim: 13 dim: 11 } } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
  convolution_param { num_output: 5 kernel_size: 3 pad: 1 weight_filler { type: "gaussian" std: 0.3 } } }
layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
layer { name: "pool" type: "Pooling" bottom: "conv" top: "pool" pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "fc" type: "InnerProduct" bottom: "pool" top: "fc"
  inner_product_param { num_output: 7 weight_filler { type: "gaussian" std: 0.2 } } }
layer { name: "prob" type: "Softmax" bottom: "fc" top: "prob" }
)";

// Each call: a context of its own, the net with `weights`, `rounds` forward
// passes on inputs that change per round; the outputs of every round.
std::vector<std::vector<float>> RunAlone(const caffe::NetParameter& weights, int rounds) {
  auto ctx = Context::Create();
  caffe::NetParameter param;
  ReadProtoFromTextString(kNet, "small.prototxt", &param);
  param.mutable_state()->set_phase(caffe::TEST);
  Net net(param, *ctx);
  net.CopyTrainedLayersFrom(weights);
  Blob& input = *net.input_blobs()[0];
  std::vector<std::vector<float>> outputs;
  for (int round = 0; round < rounds; ++round) {
    std::vector<float> x(input.count());
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7 + round * 3) % 17) - 8.f;
    input.WriteData(x);
    net.Forward();
    outputs.push_back(net.output_blobs()[0]->ReadData());
  }
  return outputs;
}

TEST(ContextsInThreads, ThreadsWithTheirOwnContextsMatchOneThreadAlone) {
  caffe::NetParameter param;
  ReadProtoFromTextString(kNet, "small.prototxt", &param);
  param.mutable_state()->set_phase(caffe::TEST);
  Net seeded(param, TestContext());
  caffe::NetParameter weights;
  seeded.ToProto(&weights);

  const int rounds = 20;
  const auto expected = RunAlone(weights, rounds);
  const int threads = 4;
  std::vector<std::vector<std::vector<float>>> got(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] { got[t] = RunAlone(weights, rounds); });
  for (auto& w : workers) w.join();
  for (int t = 0; t < threads; ++t) {
    ASSERT_EQ(got[t].size(), expected.size());
    for (int r = 0; r < rounds; ++r) EXPECT_EQ(got[t][r], expected[r]) << "thread " << t;
  }
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
