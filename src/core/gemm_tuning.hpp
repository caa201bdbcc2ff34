// GEMM configurations chosen by measurement: `dlcaffe tune` records the
// products a net runs, times every configuration of the kernel family that
// suits the device on each, and stores the winners in a file per device and
// driver under the user's cache (RunOptions::tuning_cache: a dir, or off). Gemm()
// then takes a stored winner before the built-in rule. Only members of
// GemmConfigFamily() -- the configurations test_gemm proves -- are ever
// stored or taken back. Internal to the library.
#pragma once
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "gemm_config.hpp"

namespace dlcaffe {

// What a tuned winner is keyed by: the product's sizes, transposes, which
// operands are image-grouped (bits 1, 2, 4 for A, B, C; 8: B is implicit
// convolution windows, 16: channels-last ones), batch count, and what picks another kernel for the
// same shape: the math (a matrix engine's form) and the operands' storage
// types (their loads and stores).
struct GemmShapeKey {
  int M = 0, N = 0, K = 0;
  bool trans_a = false, trans_b = false;
  int grouped = 0;
  int batch = 1;
  MatrixMath math = MatrixMath::kFloat32;
  StorageType a_type = StorageType::kFloat32, b_type = StorageType::kFloat32,
              c_type = StorageType::kFloat32;
  // "M N K ta tb grouped batch math a b c", the types by name
  // ("37 41 43 0 1 0 1 tf32 float32 float32 float32").
  std::string Text() const;
  bool operator<(const GemmShapeKey& other) const;
};
GemmShapeKey ShapeKeyOf(const GemmArgs& args);

// The stored winner for this device and shape, if `dlcaffe tune` measured one
// (or, while a ScopedGemmChoices is alive on this context, its entry).
bool LookupTunedGemmConfig(const Context& ctx, const GemmShapeKey& key,
                           GemmConfig* config);

// While alive, Gemm() on `ctx` takes its configurations from `choices`
// (the rule's for shapes not in it) instead of the stored winners: the
// tuner times a whole net both ways with it.
class ScopedGemmChoices {
 public:
  ScopedGemmChoices(Context& ctx, const std::map<GemmShapeKey, GemmConfig>& choices);
  ~ScopedGemmChoices();
  ScopedGemmChoices(const ScopedGemmChoices&) = delete;
  ScopedGemmChoices& operator=(const ScopedGemmChoices&) = delete;

 private:
  Context& ctx_;
  const std::map<GemmShapeKey, GemmConfig>* previous_;
};
// Adds (or replaces) winners in this device's file, written atomically.
void StoreTunedGemmConfigs(const Context& ctx,
                           const std::map<GemmShapeKey, GemmConfig>& winners);
// The file that holds this device's winners ("" if the cache is off).
std::string GemmTuningFile(const Context& ctx);

// While alive, Gemm() on `ctx` also records the first arguments it sees
// for each shape key.
class GemmRecording {
 public:
  explicit GemmRecording(Context& ctx);
  ~GemmRecording();
  GemmRecording(const GemmRecording&) = delete;
  GemmRecording& operator=(const GemmRecording&) = delete;
  const std::vector<GemmArgs>& products() const { return products_; }
  void Record(const GemmArgs& args);

 private:
  Context& ctx_;
  std::map<GemmShapeKey, size_t> seen_;
  std::vector<GemmArgs> products_;
};

struct GemmTuning {
  GemmShapeKey key;
  GemmConfig rule, best;             // the built-in rule's choice, the fastest
  double rule_ms = 0, best_ms = 0;   // per call
  int candidates = 0, rejected = 0;  // rejected: results differing from the rule's
};
// Times the rule's choice and every family member suited to the device on a
// product shaped as `args` (its layout, over fresh buffers of random
// values), `iterations` calls each after a warm-up call; a candidate whose
// result differs from the rule's beyond rounding is rejected. A candidate
// whose first round is 1.5 times slower than the best so far is not timed
// again, and none is started after `deadline`.
GemmTuning TuneGemm(Context& ctx, const GemmArgs& args, int iterations,
                    std::chrono::steady_clock::time_point deadline =
                        std::chrono::steady_clock::time_point::max());

}  // namespace dlcaffe
