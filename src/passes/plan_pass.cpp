#include "passes/plan_pass.hpp"

namespace dlcaffe {

bool IsInPlaceOn(const Net& net, int layer, const Blob* blob) {
  const auto& bottom = net.bottom_vecs()[layer];
  const auto& top = net.top_vecs()[layer];
  return bottom.size() == 1 && top.size() == 1 && bottom[0] == blob && top[0] == blob;
}

bool PlaysRoleOn(const Net& net, int layer, const Blob* blob, EpilogueRole role) {
  return IsInPlaceOn(net, layer, blob) && net.layers()[layer]->RoleInEpilogue(*blob) == role;
}

bool Supports(const Net& net, int layer, LayerEpilogue::Part part) {
  return (net.layers()[layer]->EpilogueSupport() & part) != 0;
}

}  // namespace dlcaffe
