// The tensor-core kernels are built only by NVIDIA's driver, which no CI
// machine has: tests compile them with clang to PTX for NVIDIA's OpenCL
// target instead (-target nvptx64-nvidia-nvcl; clang spells inline assembly
// as a GNU keyword), so that an error in their OpenCL C fails here.
#pragma once
#include <string>

namespace dlcaffe {
namespace test {

// The clang on the PATH ("" where there is none).
std::string FindClang();

// `source` (a whole kernel text, includes inlined) compiled with `defines`
// to PTX: the PTX text; on failure "" and the compiler's output in *log.
std::string CompileToPtx(const std::string& source, const std::string& defines,
                         std::string* log);

// How often `what` occurs in `text`.
size_t Occurrences(const std::string& text, const std::string& what);

}  // namespace test
}  // namespace dlcaffe
