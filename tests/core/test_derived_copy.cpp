// Copies derived from parameters (core/derived_copy.hpp): the weights rounded
// to 16 bits for the tensor cores, filters reordered channels-last. They are
// kept while the parameter's data keeps its version (Blob::data_version) and
// made again after every kind of write: host writes, fills, a reshape, a
// solver's update, a declared device write. A layer keeps its copy from pass
// to pass (a write the library is not told of leaves it stale, which shows
// that it is kept) and uses the new weights after a write it is told of.
#include <gtest/gtest.h>

#include <vector>

#include "../../src/core/derived_copy.hpp"
#include "dlcaffe/blob.hpp"
#include "dlcaffe/filler.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "dlcaffe/net.hpp"
#include "util/convolution_sums.hpp"
#include "util/layer_test_util.hpp"
#include "util/least_squares_problem.hpp"
#include "util/random_values.hpp"
#include "util/storage_values.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

// A DerivedCopy of `source` whose copies are numbered by when they were made.
struct CountedCopy {
  DerivedCopy copy;
  int made = 0;
  BufferPtr Get(Context& ctx, const Blob& source, int variant = 0) {
    return copy.Get(source, variant, [&] {
      ++made;
      return ctx.Allocate(4);
    });
  }
};

TEST(DerivedCopy, IsKeptUntilTheDataIsWritten) {
  Context& ctx = TestContext();
  Blob weights(ctx, {3, 4});
  CountedCopy c;
  const BufferPtr first = c.Get(ctx, weights);
  EXPECT_EQ(c.Get(ctx, weights), first);
  EXPECT_EQ(c.made, 1);

  weights.WriteData(std::vector<float>(12, 1.f));
  c.Get(ctx, weights);
  EXPECT_EQ(c.made, 2) << "after WriteData";
  weights.WriteData(std::vector<float>{2.f}.data(), 1, 5);
  c.Get(ctx, weights);
  EXPECT_EQ(c.made, 3) << "after a partial WriteData";
  weights.SetData(0.5f);
  c.Get(ctx, weights);
  EXPECT_EQ(c.made, 4) << "after SetData";
  caffe::FillerParameter gaussian;
  gaussian.set_type("gaussian");
  FillBlob(gaussian, &weights);
  c.Get(ctx, weights);
  EXPECT_EQ(c.made, 5) << "after a filler";
  weights.MarkDataWritten();
  c.Get(ctx, weights);
  EXPECT_EQ(c.made, 6) << "after MarkDataWritten";

  weights.Reshape({3, 4});
  c.Get(ctx, weights);
  EXPECT_EQ(c.made, 6) << "the same shape again is the same data";
  weights.Reshape({4, 3});
  c.Get(ctx, weights);
  EXPECT_EQ(c.made, 7) << "another shape, the same storage";

  Blob other(ctx, {4, 3});
  weights.ShareData(other);
  c.Get(ctx, weights);
  EXPECT_EQ(c.made, 8) << "after sharing another blob's data";
  other.WriteData(std::vector<float>(12, 3.f));
  c.Get(ctx, weights);
  EXPECT_EQ(c.made, 9) << "a write through the blob it shares with";

  c.Get(ctx, weights, 1);
  EXPECT_EQ(c.made, 10) << "another kind of copy";
  c.Get(ctx, weights, 1);
  EXPECT_EQ(c.made, 10);
  c.copy.Forget();
  c.Get(ctx, weights, 1);
  EXPECT_EQ(c.made, 11) << "after Forget";
}

TEST(DerivedCopy, ReadsDoNotChangeTheVersion) {
  Context& ctx = TestContext();
  Blob weights(ctx, {5});
  weights.WriteData(std::vector<float>(5, 1.f));
  const uint64_t version = weights.data_version();
  weights.ReadData();
  weights.data();
  weights.diff();
  weights.SetDiff(1.f);
  weights.WriteDiff(std::vector<float>(5, 2.f));
  EXPECT_EQ(weights.data_version(), version);
}

// Every solver updates through SGDSolver::ApplyUpdate, which marks what it
// wrote.
TEST(DerivedCopy, ASolversUpdateIsAWrite) {
  for (const char* type : {"SGD", "Adam"}) {
    SCOPED_TRACE(type);
    LeastSquaresRun run = MakeLeastSquaresRun(LeastSquaresSolverParams(type));
    std::vector<uint64_t> before;
    for (Blob* p : run.solver->net().learnable_params()) before.push_back(p->data_version());
    run.solver->Step(1);
    const auto& params = run.solver->net().learnable_params();
    ASSERT_EQ(params.size(), before.size());
    for (size_t i = 0; i < params.size(); ++i)
      EXPECT_NE(params[i]->data_version(), before[i]) << "learnable parameter " << i;
  }
}

// A channels-last convolution (forced on: the GPU shape's kernels read its
// reordered filters on any device) keeps its filters' copy between passes.
TEST(DerivedCopy, AConvolutionUsesItsWeightsAsLastWritten) {
  SetTestOption("kernel_shape", "gpu");
  SetTestOption("winograd", "off");
  SetTestOption("conv_channels_last", "on");
  const ConvolutionShape g{2, 8, 5, 6, 8, 3, 1, 1, 1, 1};
  Context& ctx = TestContext();
  auto layer = LayerRegistry::Create(
      LayerParam("name: 'conv' type: 'Convolution' convolution_param { num_output: 8 "
                 "kernel_size: 3 pad: 1 bias_term: false }"),
      ctx);
  Blob bottom(ctx, {g.images, g.channels, g.height, g.width}), top(ctx);
  layer->SetUp({&bottom}, {&top});
  Blob& weights = *layer->blobs()[0];
  // Values of float16, so every product is exact and only the sums' order
  // separates the layer from the reference.
  const std::vector<float> x = RoundedTo(RandomValues(bottom.count(), 3), StorageType::kFloat16);
  bottom.WriteData(x);
  const auto expect_top_of = [&](const std::vector<float>& w, const char* what) {
    layer->Forward({&bottom}, {&top});
    ExpectExactSums(top.ReadData(),
                    DirectConvolution(g, x, w, std::vector<float>(g.outputs, 0.f),
                                      std::vector<float>(top.count(), 0.f),
                                      ConvolutionResult::kTop),
                    g.channels * g.kernel * g.kernel, 0, what);
  };
  const std::vector<float> w1 = RoundedTo(RandomValues(weights.count(), 4), StorageType::kFloat16);
  const std::vector<float> w2 = RoundedTo(RandomValues(weights.count(), 5), StorageType::kFloat16);
  weights.WriteData(w1);
  expect_top_of(w1, "first weights");
  weights.WriteData(w2);
  expect_top_of(w2, "weights written by WriteData");

  // A device write the blob is not told of: the kept copy still holds w2.
  ctx.Write(weights.data(), 0, w1.size() * sizeof(float), w1.data());
  expect_top_of(w2, "kept copy (the write was not declared)");
  weights.MarkDataWritten();
  expect_top_of(w1, "after MarkDataWritten");
  ResetTestOption("kernel_shape");
  ResetTestOption("winograd");
  ResetTestOption("conv_channels_last");
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
