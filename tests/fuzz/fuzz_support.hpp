// What the fuzz targets share: one OpenCL context for the process, quiet
// logging, a scratch file per process for APIs that read paths, and the rule
// that decides what is a finding. A target returns normally when dlcaffe
// rejects its input with dlcaffe::Error (a clear message is the right answer
// to a bad file); anything else escaping (another exception, a crash, a
// sanitizer report, an allocation over libFuzzer's limit) is a finding.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>

#include "dlcaffe/context.hpp"
#include "dlcaffe/error.hpp"

namespace dlcaffe {
namespace fuzz {

// The default device (PoCL here), created once, with small memory limits;
// glog shows errors only.
Context& FuzzContext();

// Writes `size` bytes to this process's scratch file named `name` (under
// $TMPDIR or /tmp) and returns its path.
std::string WriteScratchFile(const std::string& name, const uint8_t* data, size_t size);

// A fresh, empty scratch directory of this process named `name`.
std::string ScratchDirectory(const std::string& name);

// Whether DLCAFFE_FUZZ_VERBOSE is set: rejections are then printed (to see
// that seeds get past the checks instead of being turned away).
bool Verbose();

// Runs `body` and swallows dlcaffe::Error only. Any other exception is a
// finding: it is reported and the process traps, so that libFuzzer keeps the
// input (left to escape, it ends in std::terminate, and one such abort in CI
// left no input behind).
template <typename Body>
void ExpectCleanRejection(Body body) {
  try {
    body();
  } catch (const dlcaffe::Error& e) {
    if (Verbose()) std::fprintf(stderr, "rejected: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: an exception other than dlcaffe::Error escaped: %s\n", e.what());
    __builtin_trap();
  }
}

}  // namespace fuzz
}  // namespace dlcaffe
