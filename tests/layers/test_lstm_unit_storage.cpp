// LSTMUnit with 16-bit c_prev, gate inputs, c and h (mixed precision; cont
// stays float32). The kernels widen each value on load, compute in float as
// the float32 layer does and round each result once on store, h from the
// float c. So on inputs the type holds exactly, c and h are the roundings of
// the float32 layer's, and so are the gradients of c_prev and of the gate
// inputs when the float32 layer's backward reads c as the 16-bit layer
// stored it, bit for bit; with fractional and zero cont, on odd shapes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/error_of.hpp"
#include "util/layer_test_util.hpp"
#include "util/storage_values.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

struct UnitInputs {
  int num, dim;
  std::vector<float> c_prev, gates, cont, dc, dh;
};

struct UnitRun {
  std::vector<float> c, h, dc_prev, dgates;
};

// c_prev, gates, c and h stored as `type`; backward reads c rounded to
// `c_as` (a 16-bit layer's backward reads its own stored c).
UnitRun RunUnit(StorageType type, const UnitInputs& in, StorageType c_as) {
  Context& ctx = TestContext();
  auto layer = MakeLayer("name: 'unit' type: 'LSTMUnit'");
  Blob c_prev(ctx), gates(ctx), cont(ctx, {1, in.num}), c(ctx), h(ctx);
  for (Blob* b : {&c_prev, &gates, &c, &h}) b->set_storage_type(type);
  c_prev.Reshape({1, in.num, in.dim});
  gates.Reshape({1, in.num, 4 * in.dim});
  const std::vector<Blob*> bottom = {&c_prev, &gates, &cont}, top = {&c, &h};
  layer->SetUp(bottom, top);
  c_prev.WriteData(in.c_prev);
  gates.WriteData(in.gates);
  cont.WriteData(in.cont);
  layer->Forward(bottom, top);
  UnitRun r;
  r.c = c.ReadData();
  r.h = h.ReadData();
  c.WriteData(RoundedTo(r.c, c_as));
  c.WriteDiff(in.dc);
  h.WriteDiff(in.dh);
  layer->Backward(top, {true, true, false}, bottom);
  r.dc_prev = c_prev.ReadDiff();
  r.dgates = gates.ReadDiff();
  return r;
}

std::vector<float> Uniform(int n, float lo, float hi, unsigned seed) {
  Blob blob(TestContext(), {n});
  FillUniform(&blob, lo, hi, seed);
  return blob.ReadData();
}

TEST(LSTMUnitStorage, SixteenBitUnitRoundsTheFloatUnit) {
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    for (auto [num, dim] : {std::pair{1, 1}, std::pair{3, 13}, std::pair{5, 127}}) {
      SCOPED_TRACE(std::string(StorageTypeName(type)) + " " + std::to_string(num) + " x " +
                   std::to_string(dim));
      UnitInputs in{num, dim, {}, {}, {}, {}, {}};
      const int count = num * dim;
      in.c_prev = RoundedTo(Uniform(count, -2.f, 2.f, 1), type);
      in.gates = RoundedTo(Uniform(4 * count, -3.f, 3.f, 2), type);
      in.dc = RoundedTo(Uniform(count, -1.f, 1.f, 3), type);
      in.dh = RoundedTo(Uniform(count, -1.f, 1.f, 4), type);
      // Continuing, starting and a fractional continuation.
      for (int n = 0; n < num; ++n) in.cont.push_back(n % 3 == 0 ? 1.f : n % 3 == 1 ? 0.f : 0.375f);
      const UnitRun half = RunUnit(type, in, type);
      const UnitRun full = RunUnit(StorageType::kFloat32, in, type);
      ASSERT_EQ(half.c, RoundedTo(full.c, type));
      ASSERT_EQ(half.h, RoundedTo(full.h, type));
      ASSERT_EQ(half.dc_prev, RoundedTo(full.dc_prev, type));
      ASSERT_EQ(half.dgates, RoundedTo(full.dgates, type));
      // The 16-bit layer rounded: its results are not all the float ones.
      if (count > 1) ASSERT_NE(half.h, full.h);
    }
  }
}

TEST(LSTMUnitStorage, MixedTypesAreRefusedNamingTheLayer) {
  Context& ctx = TestContext();
  {
    auto layer = MakeLayer("name: 'unit' type: 'LSTMUnit'");
    Blob c_prev(ctx), gates(ctx, {1, 2, 12}), cont(ctx, {1, 2}), c(ctx), h(ctx);
    for (Blob* b : {&c_prev, &c, &h}) b->set_storage_type(StorageType::kFloat16);
    c_prev.Reshape({1, 2, 3});
    const std::string error =
        ErrorOf([&] { layer->SetUp({&c_prev, &gates, &cont}, {&c, &h}); });
    EXPECT_NE(error.find("layer 'unit' (LSTMUnit): c_prev, the gate inputs, c and h must be "
                         "stored alike; c_prev is float16, the gate inputs float32"),
              std::string::npos)
        << error;
  }
  {
    auto layer = MakeLayer("name: 'unit' type: 'LSTMUnit'");
    Blob c_prev(ctx), gates(ctx), cont(ctx), c(ctx), h(ctx);
    for (Blob* b : {&c_prev, &gates, &cont, &c, &h}) b->set_storage_type(StorageType::kBFloat16);
    c_prev.Reshape({1, 2, 3});
    gates.Reshape({1, 2, 12});
    cont.Reshape({1, 2});
    const std::string error =
        ErrorOf([&] { layer->SetUp({&c_prev, &gates, &cont}, {&c, &h}); });
    EXPECT_NE(error.find("layer 'unit' (LSTMUnit): bottom[2] (cont) must be stored in "
                         "float32, got bfloat16"),
              std::string::npos)
        << error;
  }
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
