// GELU as exporters spell it: x * (1 + erf(x / sqrt 2)) * 0.5, i.e.
//   t = x / 1.41421 (a Power scale 1/sqrt 2, or a BinaryOp DIV)
//   e = Erf(t); p = e + 1 (Power shift 1); m = x * p (Eltwise PROD)
//   y = m * 0.5 (Power scale 0.5)
// becomes one GELU layer.
#include <cmath>

#include "passes/net_pass.hpp"

namespace dlcaffe {

namespace {

bool DividesBySqrt2(const caffe::LayerParameter& l) {
  float c;
  if (ScalarOperand(l, caffe::BinaryOpParameter::DIV, &c)) return std::fabs(c - std::sqrt(2.f)) < 1e-5f;
  if (ScalarOperand(l, caffe::BinaryOpParameter::MUL, &c)) return std::fabs(c - std::sqrt(0.5f)) < 1e-5f;
  return IsPower(l, 1.f, std::sqrt(0.5f), 0.f, 1e-5f);
}

bool AddsOne(const caffe::LayerParameter& l) {
  float c;
  return IsPower(l, 1.f, 1.f, 1.f) || (ScalarOperand(l, caffe::BinaryOpParameter::ADD, &c) && c == 1.f);
}

bool HalvesIt(const caffe::LayerParameter& l) {
  float c;
  return IsPower(l, 1.f, 0.5f, 0.f) || (ScalarOperand(l, caffe::BinaryOpParameter::MUL, &c) && c == 0.5f) ||
         (ScalarOperand(l, caffe::BinaryOpParameter::DIV, &c) && c == 2.f);
}

int FuseGelu(caffe::NetParameter* net, const BlobSet& keep) {
  int fused = 0;
  for (int e = 0; e < net->layer_size(); ++e) {
    if (net->layer(e).type() != "Erf") continue;
    const BlobUses uses(*net);
    const caffe::LayerParameter& erf = net->layer(e);
    const int d = uses.Producer(erf.bottom(0));
    if (d < 0 || !DividesBySqrt2(net->layer(d)) || uses.SingleReader(erf.bottom(0)) != e) continue;
    const std::string x = net->layer(d).bottom(0);
    const int a = uses.SingleReader(erf.top(0));
    if (a < 0 || !AddsOne(net->layer(a))) continue;
    const int m = uses.SingleReader(net->layer(a).top(0));
    if (m < 0) continue;
    const caffe::LayerParameter& mul = net->layer(m);
    const std::string p = net->layer(a).top(0);
    if (mul.type() != "Eltwise" || mul.eltwise_param().operation() != caffe::EltwiseParameter::PROD ||
        mul.bottom_size() != 2 ||
        !((mul.bottom(0) == x && mul.bottom(1) == p) || (mul.bottom(0) == p && mul.bottom(1) == x)))
      continue;
    const int h = uses.SingleReader(mul.top(0));
    if (h < 0 || !HalvesIt(net->layer(h))) continue;
    const std::vector<std::string> inner = {net->layer(d).top(0), erf.top(0), p, mul.top(0)};
    bool kept = false;
    for (const auto& blob : inner) kept = kept || keep.count(blob) || blob == x;
    if (kept) continue;
    caffe::LayerParameter gelu;
    gelu.set_name(net->layer(h).name());
    gelu.set_type("GELU");
    gelu.add_bottom(x);
    gelu.add_top(net->layer(h).top(0));
    net->mutable_layer(h)->Swap(&gelu);
    RemoveLayers(net, {d, e, a, m});
    ++fused;
    e = -1;  // indices moved: scan again
  }
  return fused;
}

}  // namespace

REGISTER_FUSION_PASS(GELU, FuseGelu);

}  // namespace dlcaffe
