// Passes over an execution plan (core/execution_plan.hpp), each in its own
// file and testable alone: one pattern of layers that one layer's kernels
// can stand for, recorded in that layer's LayerFusion. They see the Net as
// set up (layers, blobs in place, which layers need backward) and fold only
// what the layer's EpilogueSupport allows. A pass registers itself with
// REGISTER_PLAN_PASS; ExecutionPlan runs them all in order of rank (a fold
// before the ReLU clamp that may follow what it folded).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "../core/execution_plan.hpp"
#include "dlcaffe/net.hpp"

namespace dlcaffe {

using PlanPass = std::function<void(const Net& net, std::vector<LayerFusion>* fusions)>;

struct NamedPlanPass {
  std::string name;
  int rank;
  PlanPass pass;
};

class PlanPassRegistry {
 public:
  static void Add(const std::string& name, int rank, PlanPass pass);
  // In order of rank.
  static const std::vector<NamedPlanPass>& Passes();
  // The pass of that name (throws if there is none).
  static const PlanPass& Find(const std::string& name);
};

struct PlanPassRegisterer {
  PlanPassRegisterer(const std::string& name, int rank, PlanPass pass) {
    PlanPassRegistry::Add(name, rank, std::move(pass));
  }
};
#define REGISTER_PLAN_PASS(name, rank, pass) \
  static ::dlcaffe::PlanPassRegisterer g_plan_pass_##name(#name, rank, pass)

// ---- what plan passes share ----

// Layer `layer` reads and writes `blob` alone, in place.
bool IsInPlaceOn(const Net& net, int layer, const Blob* blob);
// ... and is a ReLU with negative_slope 0.
bool IsInPlaceReluOn(const Net& net, int layer, const Blob* blob);
// Whether layer `layer` can apply the epilogue part (LayerEpilogue::Part).
bool Supports(const Net& net, int layer, LayerEpilogue::Part part);

}  // namespace dlcaffe
