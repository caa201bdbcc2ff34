// LayerNorm as exporters spell it before opset 17:
//   m = ReduceMean(x, last k axes); d = x - m; v = ReduceMean(d ^ 2)
//   y = d / sqrt(v + eps)  [* gamma] [+ beta]
// (Reduce MEAN, BinaryOp SUB, Power 2, Reduce MEAN, Power shift eps, Power
// 0.5, BinaryOp DIV, then one-bottom BinaryOps MUL/ADD with the learned
// operands) becomes one LayerNorm layer that keeps gamma and beta.
#include "passes/net_pass.hpp"

namespace dlcaffe {

namespace {

// A Reduce MEAN with keepdims over trailing axes; their first, or -1.
int TrailingMeanAxis(const caffe::LayerParameter& l, int rank_hint) {
  if (l.type() != "Reduce" || l.reduce_param().operation() != caffe::ReduceParameter::MEAN ||
      !l.reduce_param().keepdims() || l.reduce_param().axis_size() == 0)
    return -1;
  const auto& axes = l.reduce_param().axis();
  for (int i = 1; i < axes.size(); ++i)
    if (axes[i] != axes[i - 1] + 1) return -1;
  (void)rank_hint;
  return axes[0];
}

bool IsBinary(const caffe::LayerParameter& l, caffe::BinaryOpParameter::Operation op) {
  return l.type() == "BinaryOp" && l.bottom_size() == 2 && l.binary_op_param().operation() == op;
}

// The learned scale (MUL) or shift (ADD) over the normalized axes [axis,
// axis + k): a Scale or Bias layer with its own blob there, or a one-bottom
// BinaryOp with a stored operand on the right.
bool IsAffine(const caffe::LayerParameter& l, caffe::BinaryOpParameter::Operation op, int axis, int k) {
  if (l.bottom_size() != 1 || l.blobs_size() != 1) return false;
  if (op == caffe::BinaryOpParameter::MUL && l.type() == "Scale")
    return !l.scale_param().bias_term() && l.scale_param().axis() == axis &&
           l.scale_param().num_axes() == k;
  if (op == caffe::BinaryOpParameter::ADD && l.type() == "Bias")
    return l.bias_param().axis() == axis && l.bias_param().num_axes() == k;
  return l.type() == "BinaryOp" && l.binary_op_param().operation() == op &&
         !l.binary_op_param().operand_first() && l.blobs(0).shape().dim_size() == k;
}

int FuseLayerNorm(caffe::NetParameter* net, const BlobSet& keep) {
  int fused = 0;
  for (int r1 = 0; r1 < net->layer_size(); ++r1) {
    const int axis = TrailingMeanAxis(net->layer(r1), 0);
    if (axis < 0) continue;
    const BlobUses uses(*net);
    const std::string x = net->layer(r1).bottom(0), mean = net->layer(r1).top(0);
    const int sub = uses.SingleReader(mean);
    if (sub < 0 || !IsBinary(net->layer(sub), caffe::BinaryOpParameter::SUB) ||
        net->layer(sub).bottom(0) != x || net->layer(sub).bottom(1) != mean)
      continue;
    const std::string d = net->layer(sub).top(0);
    auto readers = uses.readers.find(d);
    if (readers == uses.readers.end() || readers->second.size() != 2) continue;
    int sq = -1, div = -1;
    for (int r : readers->second) {
      if (IsPower(net->layer(r), 2.f, 1.f, 0.f)) sq = r;
      if (IsBinary(net->layer(r), caffe::BinaryOpParameter::DIV) && net->layer(r).bottom(0) == d) div = r;
    }
    if (sq < 0 || div < 0) continue;
    const int r2 = uses.SingleReader(net->layer(sq).top(0));
    if (r2 < 0 || TrailingMeanAxis(net->layer(r2), 0) != axis ||
        net->layer(r2).reduce_param().axis_size() != net->layer(r1).reduce_param().axis_size())
      continue;
    const int add_eps = uses.SingleReader(net->layer(r2).top(0));
    if (add_eps < 0 || net->layer(add_eps).type() != "Power" ||
        net->layer(add_eps).power_param().power() != 1.f || net->layer(add_eps).power_param().scale() != 1.f)
      continue;
    const float eps = net->layer(add_eps).power_param().shift();
    const int root = uses.SingleReader(net->layer(add_eps).top(0));
    if (root < 0 || !IsPower(net->layer(root), 0.5f, 1.f, 0.f) ||
        net->layer(div).bottom(1) != net->layer(root).top(0) || uses.SingleReader(net->layer(root).top(0)) != div)
      continue;
    std::set<int> removed = {r1, sub, sq, r2, add_eps, root, div};
    std::vector<std::string> inner = {mean, d, net->layer(sq).top(0), net->layer(r2).top(0),
                                      net->layer(add_eps).top(0), net->layer(root).top(0)};
    // The learned scale and shift after it, if any.
    int last = div, mul = -1, add = -1;
    const int next = uses.SingleReader(net->layer(div).top(0));
    const int k = net->layer(r1).reduce_param().axis_size();
    if (next >= 0 && IsAffine(net->layer(next), caffe::BinaryOpParameter::MUL, axis, k) &&
        !keep.count(net->layer(div).top(0))) {
      mul = next;
      const int after = uses.SingleReader(net->layer(mul).top(0));
      if (after >= 0 && IsAffine(net->layer(after), caffe::BinaryOpParameter::ADD, axis, k) &&
          !keep.count(net->layer(mul).top(0)))
        add = after;
    }
    if (mul >= 0) {
      inner.push_back(net->layer(div).top(0));
      removed.insert(div);
      last = mul;
      if (add >= 0) {
        inner.push_back(net->layer(mul).top(0));
        removed.insert(mul);
        last = add;
      }
    }
    bool blocked = false;
    for (const auto& blob : inner) blocked = blocked || keep.count(blob);
    if (blocked) continue;
    caffe::LayerParameter ln;
    ln.set_name(net->layer(last).name());
    ln.set_type("LayerNorm");
    ln.add_bottom(x);
    ln.add_top(net->layer(last).top(0));
    caffe::LayerNormParameter* p = ln.mutable_layer_norm_param();
    p->set_axis(axis);
    p->set_eps(eps);
    p->set_elementwise_affine(mul >= 0);
    p->set_bias(add >= 0);
    if (mul >= 0) {
      // Operands must span the normalized axes exactly (no broadcast inside).
      const caffe::BlobProto& gamma = net->layer(mul).blobs(0);
      *ln.add_blobs() = gamma;
      *ln.add_param() = net->layer(mul).param_size() ? net->layer(mul).param(0) : caffe::ParamSpec();
      if (add >= 0) {
        *ln.add_blobs() = net->layer(add).blobs(0);
        *ln.add_param() = net->layer(add).param_size() ? net->layer(add).param(0) : caffe::ParamSpec();
      }
    }
    net->mutable_layer(last)->Swap(&ln);
    removed.erase(last);
    RemoveLayers(net, removed);
    ++fused;
    r1 = -1;
  }
  return fused;
}

}  // namespace

REGISTER_FUSION_PASS(LayerNorm, FuseLayerNorm);

}  // namespace dlcaffe
