// Kernel sources that include others (ProgramCache::SourceText): a form's
// source shares its family's definitions through `#include "name.cl"`, which
// the cache replaces by that file's text (the OpenCL compiler is given one
// text and no files), each file once, cycles and repeats included.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dlcaffe/context.hpp"
#include "dlcaffe/half_conversion.hpp"
#include "dlcaffe/program_cache.hpp"
#include "dlcaffe/storage_type.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

int Occurrences(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(KernelSources, IncludesAreReplacedByTheirTextOnce) {
  RegisterKernelSource("include_test_scale.cl",
                       "#include \"include_test_kernel.cl\"\n#define SCALE 3.f\n");
  RegisterKernelSource("include_test_kernel.cl",
                       "#include \"include_test_scale.cl\"\n"
                       "#include \"include_test_scale.cl\"\n"
                       "__kernel void scaled(const int n, __global float* x) {\n"
                       "  if (get_global_id(0) < n) x[get_global_id(0)] *= SCALE;\n}\n");
  RegisterKernelSource("include_test_main.cl", "#include \"include_test_kernel.cl\"\n");
  const std::string text = ProgramCache::SourceText("include_test_main.cl");
  EXPECT_EQ(Occurrences(text, "#include"), 0) << text;
  EXPECT_EQ(Occurrences(text, "#define SCALE 3.f"), 1) << text;
  EXPECT_EQ(Occurrences(text, "__kernel void scaled"), 1) << text;
  EXPECT_LT(text.find("#define SCALE"), text.find("__kernel void scaled")) << text;

  // The device builds it and runs it.
  Context& ctx = TestContext();
  const std::vector<float> values = {1.f, -2.f, 0.5f};
  BufferPtr x = ctx.Allocate(values.size() * sizeof(float));
  ctx.Write(x->mem(), 0, values.size() * sizeof(float), values.data());
  ctx.Launch1D(ctx.Kernel("include_test_main.cl", "", "scaled"), values.size(),
               static_cast<int>(values.size()), x->mem());
  std::vector<float> got(values.size());
  ctx.Read(x->mem(), 0, got.size() * sizeof(float), got.data());
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(got[i], 3.f * values[i]);
}

// The GEMM's kernel sources: each form's holds gemm.cl's definitions and
// helper kernels once, and its own kernel.
TEST(KernelSources, GemmFormsIncludeTheFamilysDefinitions) {
  for (const char* form : {"gemm_register.cl", "gemm_tiled.cl"}) {
    const std::string text = ProgramCache::SourceText(form);
    EXPECT_EQ(Occurrences(text, "__kernel void gemm_scale_c("), 1) << form;
    EXPECT_EQ(Occurrences(text, "#define EPILOGUE_RELU"), 1) << form;
    EXPECT_GE(Occurrences(text, "void gemm_tiled("), 1) << form;
  }
  EXPECT_EQ(Occurrences(ProgramCache::SourceText("gemm.cl"), "void gemm_tiled("), 0);
}


// Every storage type is one row of the traits table: its name, size and
// caffe::Type find it back, and the kernels' macros are generated from it
// into the shared header.
TEST(StorageTypes, OneRowPerTypeFindsItselfBack) {
  ASSERT_EQ(AllStorageTypes().size(), 3u);
  for (StorageType type : AllStorageTypes()) {
    const StorageTraits& row = StorageTraitsOf(type);
    EXPECT_EQ(row.type, type);
    StorageType found = StorageType::kFloat32;
    ASSERT_TRUE(StorageTypeNamed(row.name, &found)) << row.name;
    EXPECT_EQ(found, type);
    found = StorageType::kFloat32;
    ASSERT_TRUE(StorageTypeOf(row.caffe_type, &found)) << row.name;
    EXPECT_EQ(found, type);
    EXPECT_EQ(CaffeTypeOf(type), row.caffe_type);
    const std::string code = std::to_string(static_cast<int>(type));
    const std::string header = ProgramCache::SourceText("common.cl");
    EXPECT_EQ(Occurrences(header, "#define STORAGE_LOAD_" + code + "(p, i) " + row.load + "\n"),
              1)
        << header;
    EXPECT_EQ(Occurrences(header, "#define STORAGE_ELEM_" + code + " " + row.cl_element + "\n"),
              1);
  }
  StorageType none;
  EXPECT_FALSE(StorageTypeOf(caffe::DOUBLE, &none));
  EXPECT_FALSE(StorageTypeOf(caffe::TF32, &none));
  EXPECT_FALSE(StorageTypeNamed("int8", &none));
}

// The generated loads and stores, one, four and sixteen wide, round as the
// host's conversions do (to nearest even) and read back what they stored.
TEST(StorageTypes, GeneratedLoadsAndStoresRoundAsTheHostDoes) {
  RegisterKernelSource("storage_round_trip_test.cl", R"(
__kernel void round_trip(__global const float* in, __global STORAGE_ELEM(T)* stored,
                         __global float* out) {
  const int g = get_global_id(0);  // one of 3 groups of 16 values
  const int i = g * 16;
  if (g == 0) {
    for (int k = 0; k < 16; ++k) STORAGE_STORE(T, stored, i + k, in[i + k]);
    for (int k = 0; k < 16; ++k) out[i + k] = STORAGE_LOAD(T, stored, i + k);
  } else if (g == 1) {
    for (int k = 0; k < 16; k += 4)
      STORAGE_CAT(STORAGE_STORE4_, T)(stored, i + k, vload4(0, in + i + k));
    for (int k = 0; k < 16; k += 4)
      vstore4(STORAGE_CAT(STORAGE_LOAD4_, T)(stored, i + k), 0, out + i + k);
  } else {
    STORAGE_CAT(STORAGE_STORE16_, T)(stored, i, vload16(0, in + i));
    vstore16(STORAGE_CAT(STORAGE_LOAD16_, T)(stored, i), 0, out + i);
  }
})");
  Context& ctx = TestContext();
  std::vector<float> values(48);
  for (size_t k = 0; k < values.size(); ++k)
    values[k] = (static_cast<float>(k) - 23.3f) * 1.0009765625f * (k % 3 ? 1.f : 1e-3f);
  values[5] = 65519.f;       // rounds to half's largest value
  values[6] = 1.00390625f;   // a bfloat16 tie, to even
  for (StorageType type : AllStorageTypes()) {
    BufferPtr in = ctx.Allocate(values.size() * sizeof(float));
    BufferPtr stored = ctx.Allocate(values.size() * StorageBytes(type));
    BufferPtr out = ctx.Allocate(values.size() * sizeof(float));
    ctx.Write(in->mem(), 0, values.size() * sizeof(float), values.data());
    ctx.Launch(ctx.Kernel("storage_round_trip_test.cl",
                          "-DT=" + std::to_string(static_cast<int>(type)), "round_trip"),
               NDRange(3), NDRange(1), in->mem(), stored->mem(), out->mem());
    std::vector<float> got(values.size()), expected(values.size());
    ctx.Read(out->mem(), 0, got.size() * sizeof(float), got.data());
    std::vector<char> bits(values.size() * StorageBytes(type));
    FloatsToStorage(values.data(), static_cast<int>(values.size()), type, bits.data());
    StorageToFloats(bits.data(), static_cast<int>(values.size()), type, expected.data());
    for (size_t k = 0; k < values.size(); ++k)
      EXPECT_EQ(got[k], expected[k]) << StorageTypeName(type) << " value " << k << " ("
                                     << values[k] << ")";
  }
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
