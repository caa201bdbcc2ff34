// Embed and PositionEmbedding with 16-bit activations (mixed precision): the
// tables and their gradients stay float, an Embed's indices stay float32.
// Each output is computed in float and rounded once on store, and the
// table gradients are float sums of the widened gradient values, so on
// values the type holds exactly the 16-bit layer's top (and bottom
// gradient) is the rounding of the float32 layer's and its table gradients
// equal the float32 layer's, bit for bit.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/layer_test_util.hpp"
#include "util/storage_layer_run.hpp"
#include "util/storage_values.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

struct EmbedRun {
  std::vector<float> top;
  std::vector<std::vector<float>> param_diffs;
};

// Embed's top in `type`, its float32 indices; the table and bias written.
EmbedRun RunEmbed(StorageType type, const std::vector<float>& indices,
                  const std::vector<float>& dy, const std::vector<float>& table,
                  const std::vector<float>& bias) {
  Context& ctx = TestContext();
  auto layer = MakeLayer(
      "type: 'Embed' embed_param { num_output: 5 input_dim: 9 bias_term: true }");
  Blob index(ctx, {3, 4}), top(ctx);
  top.set_storage_type(type);
  layer->SetUp({&index}, {&top});
  index.WriteData(indices);
  layer->blobs()[0]->WriteData(table);
  layer->blobs()[1]->WriteData(bias);
  for (auto& blob : layer->blobs()) blob->SetDiff(0.f);
  layer->Forward({&index}, {&top});
  EmbedRun r;
  r.top = top.ReadData();
  top.WriteDiff(dy);
  layer->Backward({&top}, {false}, {&index});
  for (auto& blob : layer->blobs()) r.param_diffs.push_back(blob->ReadDiff());
  return r;
}

TEST(EmbeddingStorage, SixteenBitEmbedRoundsTheFloatLayer) {
  std::vector<float> indices(12);
  for (int i = 0; i < 12; ++i) indices[i] = static_cast<float>((i * 4 + 1) % 9);  // repeats
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    SCOPED_TRACE(StorageTypeName(type));
    Blob source(TestContext(), {60 + 45 + 5});
    FillUniform(&source, -1.f, 1.f, 61);
    const std::vector<float> all = source.ReadData();
    const std::vector<float> dy = RoundedTo(std::vector<float>(all.begin(), all.begin() + 60), type);
    const std::vector<float> table(all.begin() + 60, all.begin() + 105), bias(all.begin() + 105, all.end());
    const EmbedRun half = RunEmbed(type, indices, dy, table, bias);
    const EmbedRun full = RunEmbed(StorageType::kFloat32, indices, dy, table, bias);
    ASSERT_EQ(half.top, RoundedTo(full.top, type));
    ASSERT_EQ(half.param_diffs, full.param_diffs);
    for (const std::vector<float>& d : full.param_diffs)
      ASSERT_NE(d, std::vector<float>(d.size(), 0.f));
  }
}

TEST(EmbeddingStorage, SixteenBitPositionEmbeddingRoundsTheFloatLayer) {
  const std::vector<int> shape = {2, 6, 5};  // T 6, D 5
  const std::string param =
      "type: 'PositionEmbedding' position_embedding_param { max_positions: 8 }";
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    for (bool in_place : {false, true}) {
      SCOPED_TRACE(std::string(StorageTypeName(type)) + (in_place ? ", in place" : ""));
      Blob source(TestContext(), {120 + 40});
      FillUniform(&source, -1.f, 1.f, 67);
      const std::vector<float> all = source.ReadData();
      const std::vector<float> activations =
          RoundedTo(std::vector<float>(all.begin(), all.begin() + 120), type);
      const StorageRunInputs run{shape,
                                 std::vector<float>(activations.begin(), activations.begin() + 60),
                                 std::vector<float>(activations.begin() + 60, activations.end()),
                                 std::vector<float>(all.begin() + 120, all.end()), in_place};
      const StorageRun half = RunLayerInStorage(param, type, run);
      const StorageRun full = RunLayerInStorage(param, StorageType::kFloat32, run);
      ASSERT_EQ(half.top, RoundedTo(full.top, type));
      ASSERT_EQ(half.bottom_diff, full.bottom_diff);  // dy passes through
      ASSERT_EQ(half.param_diffs, full.param_diffs);
      ASSERT_NE(full.param_diffs[0], std::vector<float>(40, 0.f));
    }
  }
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
