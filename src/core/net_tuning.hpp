// `dlcaffe tune`: GEMM configurations chosen for one net on one device,
// within a time budget, and kept only if the whole net runs faster with
// them than with the built-in rule. Internal to the library.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "gemm_tuning.hpp"

namespace dlcaffe {

class Net;

struct NetTuningOptions {
  int iterations = 5;          // calls per timed round of one product
  double budget_seconds = 20;  // for the whole run (candidates stop early)
  int net_iterations = 5;      // forward + backward passes per timed round
};

struct NetTuningReport {
  int products = 0;  // distinct GEMM shapes of one forward + backward pass
  int tuned = 0;     // of which the budget allowed tuning
  double tuned_share = 0;  // their share of the GEMM arithmetic
  std::vector<GemmTuning> tunings;  // in the order tuned (slowest first)
  // One forward + backward pass of the net, fastest of 3 rounds each way.
  double net_rule_ms = 0, net_tuned_ms = 0;
  bool kept = false;  // the winners were stored (the net ran faster)
  std::map<GemmShapeKey, GemmConfig> stored;
  double seconds = 0;  // the whole tuning run
};

// Records the GEMM products of one forward and backward pass of `net`
// (built on `ctx`; its inputs are overwritten with zeros), then tunes them,
// those with the most arithmetic first, until the budget is spent;
// finally times the whole net with the rule and with the winners. Where the
// winners are faster, those that differ from the rule are stored for this
// device; where not, the rule's choices are stored for the tuned shapes
// instead (replacing any older winners), so that a tuned net is never
// slower than an untuned one in the tuner's own measurement.
NetTuningReport TuneNet(Context& ctx, Net& net, const NetTuningOptions& options);

}  // namespace dlcaffe
