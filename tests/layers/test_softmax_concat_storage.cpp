// Softmax, Concat and Slice with 16-bit blobs (mixed precision). Softmax
// computes each output in float and stores it once, so on inputs the type
// holds exactly its top and bottom gradient are the roundings of the
// float32 layer's, bit for bit, in both kernels (a work-item per position;
// a work-group per row of many channels) and in place. Concat and Slice
// move values as they are stored: bit for bit the inputs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/layer_test_util.hpp"
#include "util/storage_values.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

const StorageType kSixteenBit[] = {StorageType::kFloat16, StorageType::kBFloat16};

// `count` values in [lo, hi) that `type` holds exactly.
std::vector<float> Values(int count, StorageType type, float lo, float hi, unsigned seed) {
  Blob source(TestContext(), {count});
  FillUniform(&source, lo, hi, seed);
  return RoundedTo(source.ReadData(), type);
}

struct SoftmaxRun {
  std::vector<float> top, bottom_diff;
};

// Forward, then backward from `dy`; with `round_top` the top is replaced by
// its rounding to that type between the two (what a 16-bit top holds).
SoftmaxRun RunSoftmax(StorageType type, const std::vector<int>& shape, bool in_place,
                      const std::vector<float>& x, const std::vector<float>& dy,
                      StorageType round_top = StorageType::kFloat32) {
  Context& ctx = TestContext();
  auto layer = MakeLayer("name: 's' type: 'Softmax'");
  Blob bottom(ctx), separate(ctx);
  bottom.set_storage_type(type);
  separate.set_storage_type(type);
  bottom.Reshape(shape);
  Blob* top = in_place ? &bottom : &separate;
  layer->SetUp({&bottom}, {top});
  bottom.WriteData(x);
  layer->Forward({&bottom}, {top});
  SoftmaxRun r;
  r.top = top->ReadData();
  if (round_top != StorageType::kFloat32) top->WriteData(RoundedTo(r.top, round_top));
  top->WriteDiff(dy);
  layer->Backward({top}, {true}, {&bottom});
  r.bottom_diff = bottom.ReadDiff();
  return r;
}

class SoftmaxStorage : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { SetTestOption("kernel_shape", GetParam()); }
  void TearDown() override { ResetTestOption("kernel_shape"); }
};

TEST_P(SoftmaxStorage, SixteenBitLayerRoundsTheFloatLayer) {
  // 3 x 7 x 5: positions walking 7 channels; 3 x 300: rows of 300 channels
  // (the work-group kernel from 256).
  for (const std::vector<int>& shape : {std::vector<int>{3, 7, 5}, std::vector<int>{3, 300}}) {
    int count = 1;
    for (int d : shape) count *= d;
    for (StorageType type : kSixteenBit) {
      for (bool in_place : {false, true}) {
        SCOPED_TRACE(std::string(StorageTypeName(type)) + " " + std::to_string(shape.back()) +
                     (in_place ? " in place" : ""));
        const std::vector<float> x = Values(count, type, -4.f, 4.f, 7),
                                 dy = Values(count, type, -1.f, 1.f, 8);
        const SoftmaxRun half = RunSoftmax(type, shape, in_place, x, dy);
        // The float layer, its backward reading the top as 16 bits hold it.
        const SoftmaxRun full = RunSoftmax(StorageType::kFloat32, shape, in_place, x, dy, type);
        ASSERT_EQ(half.top, RoundedTo(full.top, type));
        ASSERT_EQ(half.bottom_diff, RoundedTo(full.bottom_diff, type));
        ASSERT_NE(full.bottom_diff, std::vector<float>(count, 0.f));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, SoftmaxStorage, ::testing::Values("cpu", "gpu"));

TEST(ConcatSliceStorage, SixteenBitValuesMoveBitForBit) {
  Context& ctx = TestContext();
  for (StorageType type : kSixteenBit) {
    SCOPED_TRACE(StorageTypeName(type));
    // Concat of 2x3x5 and 2x4x5 along axis 1, then Slice back at 3.
    auto concat = MakeLayer("name: 'c' type: 'Concat' concat_param { axis: 1 }");
    auto slice = MakeLayer("name: 's' type: 'Slice' slice_param { axis: 1 slice_point: 3 }");
    Blob a(ctx), b(ctx), whole(ctx), a2(ctx), b2(ctx);
    for (Blob* blob : {&a, &b, &whole, &a2, &b2}) blob->set_storage_type(type);
    a.Reshape({2, 3, 5});
    b.Reshape({2, 4, 5});
    concat->SetUp({&a, &b}, {&whole});
    slice->SetUp({&whole}, {&a2, &b2});
    const std::vector<float> va = Values(30, type, -2.f, 2.f, 3), vb = Values(40, type, -2.f, 2.f, 4);
    a.WriteData(va);
    b.WriteData(vb);
    concat->Forward({&a, &b}, {&whole});
    const std::vector<float> w = whole.ReadData();
    for (int n = 0; n < 2; ++n)
      for (int j = 0; j < 5; ++j) {
        for (int c = 0; c < 3; ++c) ASSERT_EQ(w[(n * 7 + c) * 5 + j], va[(n * 3 + c) * 5 + j]);
        for (int c = 0; c < 4; ++c) ASSERT_EQ(w[(n * 7 + 3 + c) * 5 + j], vb[(n * 4 + c) * 5 + j]);
      }
    slice->Forward({&whole}, {&a2, &b2});
    EXPECT_EQ(a2.ReadData(), va);
    EXPECT_EQ(b2.ReadData(), vb);
    // Backward: Slice's gradients into the whole, Concat's back out.
    const std::vector<float> da = Values(30, type, -1.f, 1.f, 5), db = Values(40, type, -1.f, 1.f, 6);
    a2.WriteDiff(da);
    b2.WriteDiff(db);
    slice->Backward({&a2, &b2}, {true}, {&whole});
    concat->Backward({&whole}, {true, true}, {&a, &b});
    EXPECT_EQ(a.ReadDiff(), da);
    EXPECT_EQ(b.ReadDiff(), db);
  }
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
