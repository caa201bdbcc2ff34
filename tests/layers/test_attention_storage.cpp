// Attention with 16-bit Q, K, V and output (mixed precision; the mask stays
// float32). The kernels widen each value on load and compute in float as
// the float32 layer does, rounding each output and gradient once on store.
// So on inputs the type holds exactly, the 16-bit layer's output is the
// rounding of the float32 layer's, and so are the gradients of Q, K and V
// when the float32 layer's backward reads the output as the 16-bit layer
// stored it (its delta = dO . O), bit for bit: in (B, H, T, D) with a mask, with the heads side by side and causal,
// and through the key/value cache of incremental decoding (kept in 16 bits
// too), whose rows equal the whole pass's.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "dlcaffe/decode_state.hpp"
#include "util/layer_test_util.hpp"
#include "util/storage_values.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

struct AttentionRun {
  std::vector<float> out, dq, dk, dv;
};

struct AttentionInputs {
  std::vector<int> q_shape, kv_shape, out_shape;
  std::vector<float> q, k, v, dout, mask;  // mask: (T, S) or empty
};

// `backward_reads` rounds the output that backward reads (delta = dO . O)
// to that type: a 16-bit layer's backward reads its own stored output.
AttentionRun RunAttention(const std::string& param, StorageType type, const AttentionInputs& in,
                          StorageType backward_reads = StorageType::kFloat32) {
  Context& ctx = TestContext();
  auto layer = MakeLayer(param);
  Blob q(ctx), k(ctx), v(ctx), mask(ctx), out(ctx);
  for (Blob* b : {&q, &k, &v, &out}) b->set_storage_type(type);
  q.Reshape(in.q_shape);
  k.Reshape(in.kv_shape);
  v.Reshape(in.kv_shape);
  std::vector<Blob*> bottom = {&q, &k, &v};
  if (!in.mask.empty()) {
    mask.Reshape({in.q_shape[in.q_shape.size() == 4 ? 2 : 1], in.kv_shape[in.kv_shape.size() == 4 ? 2 : 1]});
    mask.WriteData(in.mask);
    bottom.push_back(&mask);
  }
  layer->SetUp(bottom, {&out});
  q.WriteData(in.q);
  k.WriteData(in.k);
  v.WriteData(in.v);
  layer->Forward(bottom, {&out});
  AttentionRun r;
  r.out = out.ReadData();
  EXPECT_EQ(out.shape(), in.out_shape);
  if (backward_reads != type) out.WriteData(RoundedTo(r.out, backward_reads));
  out.WriteDiff(in.dout);
  layer->Backward({&out}, {true, true, true, false}, bottom);
  r.dq = q.ReadDiff();
  r.dk = k.ReadDiff();
  r.dv = v.ReadDiff();
  return r;
}

int Count(const std::vector<int>& shape) {
  int n = 1;
  for (int d : shape) n *= d;
  return n;
}

AttentionInputs MakeInputs(StorageType type, std::vector<int> q_shape, std::vector<int> kv_shape,
                           std::vector<int> out_shape, bool mask, int T, int S) {
  AttentionInputs in;
  in.q_shape = q_shape;
  in.kv_shape = kv_shape;
  in.out_shape = out_shape;
  const int nq = Count(q_shape), nkv = Count(kv_shape), no = Count(out_shape);
  Blob source(TestContext(), {nq + 2 * nkv + no});
  FillUniform(&source, -1.f, 1.f, 53);
  const std::vector<float> all = RoundedTo(source.ReadData(), type);
  auto next = all.begin();
  for (std::vector<float>* v : {&in.q, &in.k, &in.v, &in.dout}) {
    const int n = v == &in.q ? nq : v == &in.dout ? no : nkv;
    v->assign(next, next + n);
    next += n;
  }
  if (mask) {
    Blob m(TestContext(), {T * S});
    FillUniform(&m, -1.f, 1.f, 59);
    in.mask = m.ReadData();
    for (int i = 3; i < T * S; i += 7)
      if (i % S != 0) in.mask[i] = -std::numeric_limits<float>::infinity();
  }
  return in;
}

TEST(AttentionStorage, SixteenBitLayerRoundsTheFloatLayer) {
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    // (B, H, T, D): B 2, H 3, T 5, S 7, D 6, with a mask.
    const AttentionInputs plain =
        MakeInputs(type, {2, 3, 5, 6}, {2, 3, 7, 6}, {2, 3, 5, 6}, true, 5, 7);
    // (B, T, H*D) with 2 heads of 4, causal, T = S = 6.
    const AttentionInputs heads =
        MakeInputs(type, {2, 6, 8}, {2, 6, 8}, {2, 6, 8}, false, 6, 6);
    for (const auto& [param, in] :
         {std::pair<std::string, const AttentionInputs*>{"type: 'Attention'", &plain},
          {"type: 'Attention' attention_param { num_heads: 2 causal: true }", &heads}}) {
      SCOPED_TRACE(std::string(StorageTypeName(type)) + " " + param);
      const AttentionRun half = RunAttention(param, type, *in);
      const AttentionRun full = RunAttention(param, StorageType::kFloat32, *in, type);
      ASSERT_EQ(half.out, RoundedTo(full.out, type));
      ASSERT_EQ(half.dq, RoundedTo(full.dq, type));
      ASSERT_EQ(half.dk, RoundedTo(full.dk, type));
      ASSERT_EQ(half.dv, RoundedTo(full.dv, type));
      for (const std::vector<float>* v : {&full.out, &full.dq, &full.dk, &full.dv})
        ASSERT_NE(*v, std::vector<float>(v->size(), 0.f));
    }
  }
}

TEST(AttentionStorage, TheSixteenBitCacheGivesTheRowsOfTheWholePass) {
  const StorageType type = StorageType::kBFloat16;
  const std::string param = "type: 'Attention' attention_param { num_heads: 2 causal: true }";
  const int B = 1, T = 6, HD = 8;
  const AttentionInputs in = MakeInputs(type, {B, T, HD}, {B, T, HD}, {B, T, HD}, false, T, T);
  const std::vector<float> whole = RunAttention(param, type, in).out;

  Context& ctx = TestContext();
  auto layer = MakeLayer(param);
  Blob q(ctx), k(ctx), v(ctx), out(ctx);
  for (Blob* b : {&q, &k, &v, &out}) b->set_storage_type(type);
  DecodeState state;
  state.incremental = true;
  state.capacity = 8;
  for (const auto& [first, n] : std::vector<std::pair<int, int>>{{0, 4}, {4, 1}, {5, 1}}) {
    const auto rows = [&](const std::vector<float>& all) {
      return std::vector<float>(all.begin() + first * HD, all.begin() + (first + n) * HD);
    };
    for (Blob* b : {&q, &k, &v}) b->Reshape({B, n, HD});
    q.WriteData(rows(in.q));
    k.WriteData(rows(in.k));
    v.WriteData(rows(in.v));
    state.position = first;
    layer->SetDecodeState(state);
    if (first == 0) layer->SetUp({&q, &k, &v}, {&out});
    layer->Reshape({&q, &k, &v}, {&out});
    layer->Forward({&q, &k, &v}, {&out});
    ASSERT_EQ(out.ReadData(), rows(whole)) << "positions from " << first;
  }
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
