// Kernel sources that include others (ProgramCache::SourceText): a form's
// source shares its family's definitions through `#include "name.cl"`, which
// the cache replaces by that file's text (the OpenCL compiler is given one
// text and no files), each file once, cycles and repeats included.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dlcaffe/context.hpp"
#include "dlcaffe/program_cache.hpp"
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

}  // namespace
}  // namespace test
}  // namespace dlcaffe
