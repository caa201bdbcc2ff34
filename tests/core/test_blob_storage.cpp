// Blobs in 16-bit storage (Blob::set_storage_type): half the bytes on the
// device, and host access in float through the exact conversions
// (dlcaffe/half_conversion.hpp): writes round to nearest even, reads widen,
// fills and protos go through the same rules, so snapshots stay float.
// Writes narrow on the device (an input batch each iteration), to the
// host's bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "dlcaffe/blob.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/half_conversion.hpp"
#include "dlcaffe/kernel_profile.hpp"
#include "util/storage_values.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

const std::vector<float> kValues = {0.f, -0.f, 1.f, -2.5f, 1.f / 3, 65504.f, 70000.f, 1e-7f,
                                    3.14159265f, -1e30f, 6e-8f, 1e38f, 0.1f};

TEST(BlobStorage, SixteenBitBlobsRoundOnWriteAndWidenOnRead) {
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    SCOPED_TRACE(StorageTypeName(type));
    Blob blob(TestContext());
    blob.set_storage_type(type);
    blob.Reshape({static_cast<int>(kValues.size())});
    EXPECT_EQ(blob.element_bytes(), 2u);
    blob.WriteData(kValues);
    blob.WriteDiff(kValues);
    const std::vector<float> expected = RoundedTo(kValues, type);
    EXPECT_EQ(blob.ReadData(), expected);
    EXPECT_EQ(blob.ReadDiff(), expected);
    // The device holds the 16-bit patterns themselves.
    std::vector<uint16_t> stored(kValues.size()), want(kValues.size());
    TestContext().Read(blob.data(), 0, stored.size() * 2, stored.data());
    FloatsToStorage(kValues.data(), static_cast<int>(kValues.size()), type, want.data());
    EXPECT_EQ(stored, want);
    // A partial write at an offset.
    const float two[] = {7.f, 1.f / 7};
    blob.WriteData(two, 2, 5);
    const std::vector<float> read = blob.ReadData();
    EXPECT_EQ(read[5], 7.f);
    EXPECT_EQ(read[6], RoundedTo({1.f / 7}, type)[0]);
    EXPECT_EQ(read[4], expected[4]);
    EXPECT_EQ(read[7], expected[7]);
    blob.SetData(0.1f);
    blob.SetDiff(-3.f);
    for (float v : blob.ReadData()) EXPECT_EQ(v, RoundedTo({0.1f}, type)[0]);
    for (float v : blob.ReadDiff()) EXPECT_EQ(v, -3.f);
  }
}

float FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// WriteData narrows with storage_convert.cl's kernel (the profile of a
// context of the test's own shows it), not on the host, and stores the
// host conversion's bits: NaN payloads and signs, infinities, overflow,
// ties to even, subnormals, and a spread of bit patterns, at an offset.
TEST(BlobStorage, WritesNarrowOnTheDeviceToTheHostsBits) {
  Context ctx(TestContext().info(), TestContext().options());
  ctx.EnableKernelProfile();
  std::vector<float> values = {
      FromBits(0x7F800001u), FromBits(0xFFC12345u), FromBits(0x7FBFFFFFu),  // NaNs
      std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
      65504.f, 65519.f, 65520.f, -70000.f, 3.4e38f,  // half's largest, its overflow
      1.f + 1.f / 2048, 1.f + 3.f / 2048, 1.f + 1.f / 256, 1.f + 3.f / 256,  // ties
      6e-8f, 3e-8f, 2.9802322e-8f, 1e-45f, -1e-40f, 1.2e-38f, -0.f};
  uint32_t state = 12345;
  for (int i = 0; i < 4096; ++i) {
    state = state * 1664525u + 1013904223u;
    values.push_back(FromBits(state));
  }
  const int n = static_cast<int>(values.size()), offset = 3;
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    SCOPED_TRACE(StorageTypeName(type));
    Blob blob(ctx);
    blob.set_storage_type(type);
    blob.Reshape({n + offset});
    blob.SetData(0.f);
    ctx.kernel_profile()->Collect();  // only the write counts
    blob.WriteData(values.data(), n, offset);
    int conversions = 0;
    for (const KernelTime& k : ctx.kernel_profile()->Collect())
      if (k.label.rfind(std::string("convert_float32_") + StorageTypeName(type), 0) == 0)
        conversions += k.calls;
    EXPECT_EQ(conversions, 1);
    std::vector<uint16_t> stored(n + offset), want(n);
    ctx.Read(blob.data(), 0, stored.size() * 2, stored.data());
    FloatsToStorage(values.data(), n, type, want.data());
    EXPECT_EQ(std::vector<uint16_t>(stored.begin(), stored.begin() + offset),
              std::vector<uint16_t>(offset, 0));
    EXPECT_EQ(std::vector<uint16_t>(stored.begin() + offset, stored.end()), want);
  }
}

TEST(BlobStorage, ProtosHoldFloatsAndComeBackRounded) {
  Blob blob(TestContext());
  blob.set_storage_type(StorageType::kFloat16);
  blob.Reshape({1, static_cast<int>(kValues.size())});
  blob.WriteData(kValues);
  caffe::BlobProto proto;
  blob.ToProto(&proto);
  ASSERT_EQ(proto.data_size(), static_cast<int>(kValues.size()));
  const std::vector<float> expected = RoundedTo(kValues, StorageType::kFloat16);
  for (int i = 0; i < proto.data_size(); ++i) EXPECT_EQ(proto.data(i), expected[i]) << i;
  Blob bf16(TestContext());
  bf16.set_storage_type(StorageType::kBFloat16);
  bf16.FromProto(proto);
  EXPECT_EQ(bf16.shape(), blob.shape());
  EXPECT_EQ(bf16.ReadData(), RoundedTo(expected, StorageType::kBFloat16));
}

TEST(BlobStorage, ChangingTheTypeGivesFreshStorage) {
  Blob blob(TestContext(), {3, 5});
  blob.SetData(2.f);
  blob.set_storage_type(StorageType::kFloat16);
  EXPECT_EQ(blob.count(), 15);
  const float fresh = TestContext().fresh_value();
  for (float v : blob.ReadData()) {
    if (std::isnan(fresh))
      EXPECT_TRUE(std::isnan(v));
    else
      EXPECT_EQ(v, fresh);
  }
  blob.SetData(-1.5f);
  blob.Reshape({4, 5});  // growing keeps the type
  EXPECT_EQ(blob.storage_type(), StorageType::kFloat16);
  blob.WriteData(std::vector<float>(20, 0.5f));
  EXPECT_EQ(blob.ReadData(), std::vector<float>(20, 0.5f));
  blob.set_storage_type(StorageType::kFloat32);
  blob.WriteData(std::vector<float>(20, 1.f / 3));
  EXPECT_EQ(blob.ReadData(), std::vector<float>(20, 1.f / 3));
}

// A layer's data-only blob (set_diff_on_demand): no Reshape or change of
// type allocates its diff; asking for it still gives one, of the blob's size.
TEST(BlobStorage, ADiffOnDemandIsMadeOnlyWhenAskedFor) {
  Blob blob(TestContext(), {3, 5});
  EXPECT_NE(blob.diff_storage(), nullptr);  // an ordinary blob has one at once
  blob.set_diff_on_demand();
  EXPECT_EQ(blob.diff_storage(), nullptr);
  blob.Reshape({40, 50});  // past the capacity: new data, still no diff
  EXPECT_EQ(blob.diff_storage(), nullptr);
  blob.set_storage_type(StorageType::kFloat16);
  EXPECT_EQ(blob.diff_storage(), nullptr);
  blob.SetData(1.5f);
  EXPECT_EQ(blob.ReadData(), std::vector<float>(2000, 1.5f));
  blob.SetDiff(0.25f);  // asked for: made
  ASSERT_NE(blob.diff_storage(), nullptr);
  EXPECT_GE(blob.diff_storage()->bytes(), 2000u * 2);
  EXPECT_EQ(blob.ReadDiff(), std::vector<float>(2000, 0.25f));
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
