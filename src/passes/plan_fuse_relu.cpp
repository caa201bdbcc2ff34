// An in-place clamp (EpilogueRole::kClamp: a ReLU with negative_slope 0)
// right after a layer that can clamp
// its single top (LayerEpilogue::relu), or right after the layers it absorbs:
// the pair's forward is one kernel. The ReLU's backward still runs, unless
// the layer also masks its diff (decided per pass: ExecutionPlan::ForwardPass).
#include "passes/plan_pass.hpp"

namespace dlcaffe {

namespace {

void FuseRelu(const Net& net, std::vector<LayerFusion>* fusions) {
  const int n = static_cast<int>(net.layers().size());
  for (int i = 0; i + 1 < n; ++i) {
    if (!Supports(net, i, LayerEpilogue::kRelu) || net.top_vecs()[i].size() != 1) continue;
    const Blob* top = net.top_vecs()[i][0];
    LayerFusion& f = (*fusions)[i];
    f.relu = PlaysRoleOn(net, i + 1, top, EpilogueRole::kClamp);
    const int after = i + f.absorbed + 1;
    f.relu_after_absorbed =
        f.absorbed > 0 && after < n && PlaysRoleOn(net, after, top, EpilogueRole::kClamp);
  }
}

}  // namespace

// After the folds: it looks past what they absorbed.
REGISTER_PLAN_PASS(fuse_relu, 30, FuseRelu);

}  // namespace dlcaffe
