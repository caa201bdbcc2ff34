// BatchNorm (batch statistics) -> Scale, both in place: the BatchNorm writes
// gamma * x_hat + beta and accumulates the Scale's parameter gradients
// (LayerEpilogue::scale), and the Scale's passes are skipped. Only where the
// Scale takes gradients no more than the BatchNorm does: in place, every
// blob's data and diff then end as in the unfused net (out of place, the
// BatchNorm's top diff would keep the Scale's input gradient).
#include "passes/plan_pass.hpp"

namespace dlcaffe {

namespace {

void AbsorbScale(const Net& net, std::vector<LayerFusion>* fusions) {
  const auto& layers = net.layers();
  const auto& need_backward = net.layer_need_backward();
  const int n = static_cast<int>(layers.size());
  for (int i = 0; i + 1 < n; ++i) {
    LayerFusion& f = (*fusions)[i];
    if (f.absorbed || net.top_vecs()[i].size() != 1) continue;
    const Blob* top = net.top_vecs()[i][0];
    if (top->num_axes() >= 2 && Supports(net, i, LayerEpilogue::kScale) &&
        IsInPlaceOn(net, i, top) && PlaysRoleOn(net, i + 1, top, EpilogueRole::kChannelScale) &&
        (need_backward[i] || !need_backward[i + 1]))
      f.absorbed = 1;
  }
}

}  // namespace

REGISTER_PLAN_PASS(absorb_scale, 20, AbsorbScale);

}  // namespace dlcaffe
