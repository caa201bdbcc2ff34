#include "passes/plan_pass.hpp"

#include <algorithm>

#include "dlcaffe/error.hpp"

namespace dlcaffe {

namespace {
std::vector<NamedPlanPass>& Registry() {
  static std::vector<NamedPlanPass> passes;
  return passes;
}
}  // namespace

void PlanPassRegistry::Add(const std::string& name, int rank, PlanPass pass) {
  std::vector<NamedPlanPass>& passes = Registry();
  passes.push_back({name, rank, std::move(pass)});
  std::stable_sort(passes.begin(), passes.end(),
                   [](const NamedPlanPass& a, const NamedPlanPass& b) { return a.rank < b.rank; });
}

const std::vector<NamedPlanPass>& PlanPassRegistry::Passes() { return Registry(); }

const PlanPass& PlanPassRegistry::Find(const std::string& name) {
  for (const NamedPlanPass& p : Registry())
    if (p.name == name) return p.pass;
  DLC_FAIL("no plan pass '" << name << "'");
}

bool IsInPlaceOn(const Net& net, int layer, const Blob* blob) {
  const auto& bottom = net.bottom_vecs()[layer];
  const auto& top = net.top_vecs()[layer];
  return bottom.size() == 1 && top.size() == 1 && bottom[0] == blob && top[0] == blob;
}

bool IsInPlaceReluOn(const Net& net, int layer, const Blob* blob) {
  const Layer& relu = *net.layers()[layer];
  // ReLU's bottom and top counts are fixed at one each.
  return std::string(relu.type()) == "ReLU" &&
         relu.layer_param().relu_param().negative_slope() == 0.f &&
         net.bottom_vecs()[layer][0] == blob && net.top_vecs()[layer][0] == blob;
}

bool Supports(const Net& net, int layer, LayerEpilogue::Part part) {
  return (net.layers()[layer]->EpilogueSupport() & part) != 0;
}

}  // namespace dlcaffe
