// Passes over an execution plan (core/execution_plan.hpp), each in its own
// file and testable alone: one pattern of layers that one layer's kernels
// can stand for, recorded in that layer's LayerFusion. They see the Net as
// set up (layers, blobs in place, which layers need backward), match layers
// by what they can be in an epilogue (Layer::RoleInEpilogue), never by type,
// and fold only what the layer's EpilogueSupport allows. A pass registers
// itself with REGISTER_PLAN_PASS (core/pass_registry.hpp, the registry the description
// rewrites use too); ExecutionPlan runs them all in order of rank (a fold
// before the ReLU clamp that may follow what it folded).
#pragma once
#include "../core/execution_plan.hpp"
#include "../core/pass_registry.hpp"
#include "dlcaffe/net.hpp"

namespace dlcaffe {

using PlanPassRegistry = PassRegistry<PlanPass>;
using NamedPlanPass = PlanPassRegistry::Entry;
#define REGISTER_PLAN_PASS(name, rank, pass) \
  static ::dlcaffe::PassRegisterer<::dlcaffe::PlanPass> g_plan_pass_##name(#name, rank, pass)

// ---- what plan passes share ----

// Layer `layer` reads and writes `blob` alone, in place.
bool IsInPlaceOn(const Net& net, int layer, const Blob* blob);
// ... and can be `role` in the epilogue of the layer that wrote `blob`.
bool PlaysRoleOn(const Net& net, int layer, const Blob* blob, EpilogueRole role);
// Whether layer `layer` can apply the epilogue part (LayerEpilogue::Part).
bool Supports(const Net& net, int layer, LayerEpilogue::Part part);

}  // namespace dlcaffe
