// x * sigmoid(x) -> Swish (SiLU) and x * hardsigmoid(x) (alpha 1/6, beta
// 1/2) -> HardSwish: how exporters spell these activations before their
// opsets had them.
#include <cmath>

#include "passes/net_pass.hpp"

namespace dlcaffe {

namespace {

bool IsHardSwishGate(const caffe::LayerParameter& l) {
  return l.type() == "HardSigmoid" &&
         std::fabs(l.hard_sigmoid_param().alpha() - 1.f / 6.f) < 1e-6f &&
         std::fabs(l.hard_sigmoid_param().beta() - 0.5f) < 1e-6f;
}

// gate(x) feeding only an Eltwise PROD with x: one `fused_type` layer.
int FuseGate(caffe::NetParameter* net, const BlobSet& keep,
             bool (*is_gate)(const caffe::LayerParameter&), const std::string& fused_type) {
  int fused = 0;
  for (int i = 0; i < net->layer_size(); ++i) {
    const caffe::LayerParameter& gate = net->layer(i);
    if (!is_gate(gate) || gate.bottom_size() != 1 || gate.top_size() != 1) continue;
    const std::string x = gate.bottom(0), g = gate.top(0);
    if (x == g || keep.count(g)) continue;
    const BlobUses uses(*net);
    const int m = uses.SingleReader(g);
    if (m < 0) continue;
    const caffe::LayerParameter& mul = net->layer(m);
    if (mul.type() != "Eltwise" || mul.eltwise_param().operation() != caffe::EltwiseParameter::PROD ||
        mul.bottom_size() != 2 || mul.top_size() != 1 || mul.top(0) == x)
      continue;
    if (!((mul.bottom(0) == x && mul.bottom(1) == g) || (mul.bottom(0) == g && mul.bottom(1) == x)))
      continue;
    caffe::LayerParameter replacement;
    replacement.set_name(mul.name());
    replacement.set_type(fused_type);
    replacement.add_bottom(x);
    replacement.add_top(mul.top(0));
    net->mutable_layer(m)->Swap(&replacement);
    RemoveLayers(net, {i});
    ++fused;
    --i;
  }
  return fused;
}

int FuseSwish(caffe::NetParameter* net, const BlobSet& keep) {
  return FuseGate(net, keep, [](const caffe::LayerParameter& l) { return l.type() == "Sigmoid"; },
                  "Swish");
}

int FuseHardSwish(caffe::NetParameter* net, const BlobSet& keep) {
  return FuseGate(net, keep, IsHardSwishGate, "HardSwish");
}

}  // namespace

REGISTER_FUSION_PASS(Swish, FuseSwish);
REGISTER_FUSION_PASS(HardSwish, FuseHardSwish);

}  // namespace dlcaffe
