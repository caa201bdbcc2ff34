// Convolution -> BatchNorm (stored statistics) [-> Scale], the two in place on
// the convolution's top, in a net that never runs their backward: the
// convolution writes scale[c] * t + shift[c] (core/channel_affine_fold.hpp)
// and the two layers' passes are skipped.
#include "passes/plan_pass.hpp"

namespace dlcaffe {

namespace {

void FoldChannelAffine(const Net& net, std::vector<LayerFusion>* fusions) {
  const auto& layers = net.layers();
  const int n = static_cast<int>(layers.size());
  for (int i = 0; i + 1 < n; ++i) {
    LayerFusion& f = (*fusions)[i];
    if (f.absorbed || net.top_vecs()[i].size() != 1) continue;
    const Blob* top = net.top_vecs()[i][0];
    if (top->num_axes() < 2 || !Supports(net, i, LayerEpilogue::kChannelAffine) ||
        !PlaysRoleOn(net, i + 1, top, EpilogueRole::kStoredStatisticsAffine) ||
        layers[i + 1]->blobs()[0]->count() != top->shape(1))
      continue;
    int absorbed = 1;
    if (i + 2 < n && PlaysRoleOn(net, i + 2, top, EpilogueRole::kChannelScale))
      absorbed = 2;
    for (int j = i; j <= i + absorbed; ++j)
      if (net.layer_need_backward()[j]) absorbed = 0;
    f.absorbed = absorbed;
    f.channel_affine = absorbed > 0;
  }
}

}  // namespace

REGISTER_PLAN_PASS(fold_channel_affine, 10, FoldChannelAffine);

}  // namespace dlcaffe
