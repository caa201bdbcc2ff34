// Scaled dot-product attention as PyTorch's exporters spell it (for
// F.scaled_dot_product_attention and nn.MultiheadAttention):
//   scores = MatMul(q * a, Permute(k, last two axes swapped) * b) * c
//   [scores = scores * kept + fill]   masked_fill, stored operands
//   [scores = scores + mask]          a stored additive mask
//   o = MatMul(Softmax(scores, axis 3), v)
//   [o = MatMul(max(Softmax(...), 0), v)]  PyTorch's NaN guard
// (a, b, c: fixed scalar Power or BinaryOp MUL/DIV layers, any of them
// absent; torch.export writes K's transpose as Reshape(Permute(k3, [0,2,1]))
// of k3 = (B*H, S, d) instead) becomes one Attention layer (src/layers/attention.cpp) of scale
// a * b * c: a stored mask that is the causal pattern becomes causal: true,
// any other additive mask a Parameter layer feeding the Attention's fourth
// bottom; swin's relative-position bias (trained or folded), with its
// shifted windows' mask, becomes a (1 or W, H, T, S) mask bottom made from
// it (SkipWindowBias). The T x S scores are never stored again.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "passes/net_pass.hpp"

namespace dlcaffe {

namespace {

// Masked positions: -inf, or the large negative values exporters fill with.
constexpr float kMasked = -1e30f;

// A fixed scalar factor: Power x * scale, or a BinaryOp MUL or DIV by a scalar.
bool ScalarFactor(const caffe::LayerParameter& l, float* factor) {
  if (l.type() == "Power" && l.bottom_size() == 1 && l.power_param().power() == 1.f &&
      l.power_param().shift() == 0.f) {
    *factor = l.power_param().scale();
    return true;
  }
  float c;
  if (ScalarOperand(l, caffe::BinaryOpParameter::MUL, &c)) {
    *factor = c;
    return true;
  }
  if (ScalarOperand(l, caffe::BinaryOpParameter::DIV, &c) && c != 0.f) {
    *factor = 1.f / c;
    return true;
  }
  return false;
}

// Whether `blob` may disappear into the fused layer: one reader, not kept.
bool Internal(const BlobUses& uses, const BlobSet& keep, const std::string& blob) {
  return uses.SingleReader(blob) >= 0 && !keep.count(blob);
}

// Walks up from `blob` through scalar factors whose outputs only feed the
// chain; returns the first blob above them, their product in `factor`.
std::string SkipScalars(const caffe::NetParameter& net, const BlobUses& uses,
                        const BlobSet& keep, std::string blob, float* factor,
                        std::set<int>* removed) {
  for (;;) {
    const int p = uses.Producer(blob);
    float f;
    if (p < 0 || !Internal(uses, keep, blob) || !ScalarFactor(net.layer(p), &f)) return blob;
    *factor *= f;
    removed->insert(p);
    blob = net.layer(p).bottom(0);
  }
}

// A stored (T, S) operand of a one-bottom BinaryOp (leading axes of 1) or
// frozen Bias: its values and T, S.
bool PlaneOperand(const caffe::LayerParameter& l, caffe::BinaryOpParameter::Operation op,
                  std::vector<float>* values, int* T, int* S) {
  // A frozen Bias over the last two axes of the (4-D) scores: how the
  // importer writes an added constant plane.
  if (l.type() == "Bias" && op == caffe::BinaryOpParameter::ADD) {
    const auto& b = l.bias_param();
    if (l.bottom_size() != 1 || l.blobs_size() != 1 || l.param_size() != 1 ||
        l.param(0).has_name() || l.param(0).lr_mult() != 0.f || (b.axis() != 2 && b.axis() != -2) ||
        b.num_axes() != 2 || l.blobs(0).shape().dim_size() != 2)
      return false;
    *T = static_cast<int>(l.blobs(0).shape().dim(0));
    *S = static_cast<int>(l.blobs(0).shape().dim(1));
    if (l.blobs(0).data_size() != *T * *S) return false;
    values->assign(l.blobs(0).data().begin(), l.blobs(0).data().end());
    return true;
  }
  if (l.type() != "BinaryOp" || l.bottom_size() != 1 || l.blobs_size() != 1) return false;
  const auto& p = l.binary_op_param();
  if (p.operation() != op || p.operand_first()) return false;
  if (l.param_size() > 0 && l.param(0).has_name()) return false;  // learnable
  const auto& shape = p.operand_shape();
  const int axes = shape.dim_size();
  if (axes < 2) return false;
  int64_t planes = 1;
  for (int i = 0; i + 2 < axes; ++i) planes *= shape.dim(i);
  *T = static_cast<int>(shape.dim(axes - 2));
  *S = static_cast<int>(shape.dim(axes - 1));
  const int64_t plane = int64_t(*T) * *S;
  if (l.blobs(0).data_size() != planes * plane) return false;
  // A plane repeated over the batch (PyTorch's masks expanded to B x 1 x
  // T x S): one plane, when every copy is equal.
  const auto& data = l.blobs(0).data();
  for (int64_t i = plane; i < planes * plane; ++i)
    if (data[i] != data[i % plane]) return false;
  values->assign(data.begin(), data.begin() + plane);
  return true;
}

struct Mask {
  bool present = false;
  int T = 0, S = 0;
  std::vector<float> additive;  // T x S
};

// Walks up from the softmax's input through an additive mask and a
// masked_fill (scores * kept + fill, kept 0 or 1, fill where kept is 0 a
// masked value); returns the blob above them.
std::string SkipMask(const caffe::NetParameter& net, const BlobUses& uses, const BlobSet& keep,
                     std::string blob, Mask* mask, std::set<int>* removed, bool* ok) {
  *ok = true;
  const int a = uses.Producer(blob);
  std::vector<float> add;
  int T, S;
  if (a < 0 || !Internal(uses, keep, blob) ||
      !PlaneOperand(net.layer(a), caffe::BinaryOpParameter::ADD, &add, &T, &S))
    return blob;
  std::string above = net.layer(a).bottom(0);
  std::vector<float> kept(add.size(), 1.f);
  const int m = uses.Producer(above);
  std::vector<float> mul;
  int T2, S2;
  const bool masked_fill = m >= 0 && Internal(uses, keep, above) &&
                           PlaneOperand(net.layer(m), caffe::BinaryOpParameter::MUL, &mul, &T2,
                                        &S2) && T2 == T && S2 == S;
  if (masked_fill) kept = mul;
  mask->present = true;
  mask->T = T, mask->S = S;
  mask->additive.resize(add.size());
  for (size_t i = 0; i < add.size(); ++i) {
    if (kept[i] == 1.f) {
      mask->additive[i] = add[i];
    } else if (kept[i] == 0.f && add[i] <= kMasked) {
      mask->additive[i] = -std::numeric_limits<float>::infinity();
    } else {
      *ok = false;  // a fill that is a value, not a mask
      return blob;
    }
  }
  removed->insert(a);
  if (masked_fill) {
    removed->insert(m);
    above = net.layer(m).bottom(0);
  }
  return above;
}

// The shape of `blob` where the layers above it fix it: a Reshape to
// explicit dimensions, a Permute of a known shape; empty where unknown.
std::vector<int64_t> KnownShape(const caffe::NetParameter& net, const BlobUses& uses,
                                const std::string& blob) {
  const int p = uses.Producer(blob);
  if (p < 0) return {};
  const caffe::LayerParameter& l = net.layer(p);
  if (l.type() == "Reshape") {
    const auto& r = l.reshape_param();
    if (r.axis() != 0 || r.num_axes() != -1) return {};
    std::vector<int64_t> dims(r.shape().dim().begin(), r.shape().dim().end());
    for (int64_t d : dims)
      if (d <= 0) return {};
    return dims;
  }
  if (l.type() == "Permute" && l.bottom_size() == 1) {
    const std::vector<int64_t> in = KnownShape(net, uses, l.bottom(0));
    const auto& order = l.permute_param().order();
    if (in.empty() || size_t(order.size()) != in.size()) return {};
    std::vector<int64_t> out;
    for (int axis : order) {
      if (axis < 0 || size_t(axis) >= in.size()) return {};
      out.push_back(in[axis]);
    }
    return out;
  }
  return {};
}

// torch.export's K^T: kt = Reshape(Permute(k3, [0,2,1]), (B, H, d, S)) where
// k3 is (B*H, S, d). Returns the Reshape's index (its Permute's in
// `permute`), or -1 where kt is not that.
int ReshapedTransposeOfK(const caffe::NetParameter& net, const BlobUses& uses,
                         const BlobSet& keep, const std::string& kt, int* permute) {
  const int r = uses.Producer(kt);
  if (r < 0 || !Internal(uses, keep, kt) || net.layer(r).type() != "Reshape") return -1;
  const std::vector<int64_t> bhds = KnownShape(net, uses, kt);
  const std::string& transposed = net.layer(r).bottom(0);
  *permute = uses.Producer(transposed);
  if (bhds.size() != 4 || *permute < 0 || !Internal(uses, keep, transposed)) return -1;
  const caffe::LayerParameter& p = net.layer(*permute);
  if (p.type() != "Permute" || p.bottom_size() != 1 || p.permute_param().order_size() != 3 ||
      p.permute_param().order(0) != 0 || p.permute_param().order(1) != 2 ||
      p.permute_param().order(2) != 1)
    return -1;
  const std::vector<int64_t> k3 = KnownShape(net, uses, p.bottom(0));
  if (k3 != std::vector<int64_t>{bhds[0] * bhds[1], bhds[3], bhds[2]}) return -1;
  return r;
}

// Swin's attention bias (torchvision's ShiftedWindowAttention, as both
// exporters write it): scores + a relative-position bias of (H, T, S) -- a
// Bias layer over axes 1 to 3 whose second bottom is the bias (a training
// import: gathered from the trained table) or whose blob is (folded, as a
// plain import writes it) -- then, in shifted blocks, the windows' mask:
// Reshape to (B / W, W, H, T, S), a BinaryOp ADD of a stored (1, W, 1, T, S)
// operand, Reshape back to (B, H, T, S).
struct WindowBias {
  bool present = false;
  int bias = -1;  // the Bias layer
  int H = 0, T = 0, S = 0;
  int windows = 0;                 // W; 0 without the windows' mask
  int window_add = -1;             // the BinaryOp adding it
  std::vector<int> slots;          // the layers it replaces, in the net's order
};

// Walks up from the softmax's input through swin's bias; returns the blob
// above it (the scores), or `blob` where it is not there.
std::string SkipWindowBias(const caffe::NetParameter& net, const BlobUses& uses,
                           const BlobSet& keep, const std::string& blob, WindowBias* bias,
                           std::set<int>* removed) {
  std::string above = blob;
  std::vector<int> taken;
  std::vector<int64_t> scores_shape;  // (B, H, T, S), where the windows' Reshape says
  const int r4 = uses.Producer(blob);
  if (r4 >= 0 && Internal(uses, keep, blob) && net.layer(r4).type() == "Reshape") {
    const std::vector<int64_t> bhts = KnownShape(net, uses, blob);
    const std::string& added = net.layer(r4).bottom(0);
    const int a = uses.Producer(added);
    if (bhts.size() == 4 && a >= 0 && Internal(uses, keep, added)) {
      const caffe::LayerParameter& add = net.layer(a);
      const auto& op = add.binary_op_param();
      const auto& dims = op.operand_shape();
      const bool stored_window_mask =
          add.type() == "BinaryOp" && add.bottom_size() == 1 && add.blobs_size() == 1 &&
          op.operation() == caffe::BinaryOpParameter::ADD && !op.operand_first() &&
          (add.param_size() == 0 || !add.param(0).has_name()) && dims.dim_size() == 5 &&
          dims.dim(0) == 1 && dims.dim(2) == 1 && dims.dim(3) == bhts[2] &&
          dims.dim(4) == bhts[3] && add.blobs(0).data_size() == dims.dim(1) * bhts[2] * bhts[3];
      const std::string& windowed = add.bottom(0);
      const int r5 = uses.Producer(windowed);
      if (stored_window_mask && r5 >= 0 && Internal(uses, keep, windowed) &&
          net.layer(r5).type() == "Reshape" &&
          KnownShape(net, uses, windowed) ==
              std::vector<int64_t>{bhts[0] / dims.dim(1), dims.dim(1), bhts[1], bhts[2], bhts[3]} &&
          bhts[0] % dims.dim(1) == 0) {
        bias->windows = static_cast<int>(dims.dim(1));
        bias->window_add = a;
        taken = {r5, a, r4};
        scores_shape = bhts;
        above = net.layer(r5).bottom(0);
      }
    }
  }
  const int b = uses.Producer(above);
  if (b < 0 || !Internal(uses, keep, above)) return blob;
  const caffe::LayerParameter& l = net.layer(b);
  if (l.type() != "Bias" || l.bias_param().axis() != 1 || l.bias_param().num_axes() != 3)
    return blob;
  std::vector<int64_t> hts;
  if (l.bottom_size() == 2 && l.bottom(1) != l.bottom(0)) {
    hts = KnownShape(net, uses, l.bottom(1));
  } else if (l.bottom_size() == 1 && l.blobs_size() == 1 && l.param_size() == 1) {
    hts.assign(l.blobs(0).shape().dim().begin(), l.blobs(0).shape().dim().end());
  }
  if (hts.size() != 3) return blob;
  if (!scores_shape.empty() && std::vector<int64_t>(scores_shape.begin() + 1, scores_shape.end()) != hts)
    return blob;
  bias->present = true;
  bias->bias = b;
  bias->H = static_cast<int>(hts[0]), bias->T = static_cast<int>(hts[1]),
  bias->S = static_cast<int>(hts[2]);
  taken.insert(taken.begin(), b);
  bias->slots = taken;
  removed->insert(taken.begin(), taken.end());
  return l.bottom(0);
}

// The layers that make swin's bias (and windows' mask) an Attention mask of
// (1, H, T, S), or (W, H, T, S) with the windows': the bias reshaped (or its
// blob as a Parameter layer, keeping its name and ParamSpec, so that an
// imported parameter stays where RelocateParameters finds it), tiled W
// times, plus the stored windows' mask. Gradients flow back through them
// to the bias.
std::vector<caffe::LayerParameter> WindowBiasLayers(const caffe::NetParameter& net,
                                                    const WindowBias& bias) {
  const caffe::LayerParameter& l = net.layer(bias.bias);
  std::vector<caffe::LayerParameter> made(1);
  caffe::LayerParameter& source = made[0];
  caffe::BlobShape one_item;
  for (int d : {1, bias.H, bias.T, bias.S}) one_item.add_dim(d);
  if (l.bottom_size() == 2) {
    source.set_name(l.name() + "/mask");
    source.set_type("Reshape");
    source.add_bottom(l.bottom(1));
    *source.mutable_reshape_param()->mutable_shape() = one_item;
  } else {
    source.set_name(l.name());
    source.set_type("Parameter");
    *source.mutable_parameter_param()->mutable_shape() = one_item;
    *source.add_blobs() = l.blobs(0);
    *source.mutable_blobs(0)->mutable_shape() = one_item;
    *source.add_param() = l.param(0);
  }
  source.add_top(l.name() + "/mask");
  if (bias.windows) {
    caffe::LayerParameter tile;
    tile.set_name(l.name() + "/windows");
    tile.set_type("Tile");
    tile.add_bottom(source.top(0));
    tile.add_top(tile.name());
    tile.mutable_tile_param()->set_axis(0);
    tile.mutable_tile_param()->set_tiles(bias.windows);
    caffe::LayerParameter add = net.layer(bias.window_add);  // the stored mask, its spec
    add.set_name(l.name() + "/window_mask");
    add.set_bottom(0, tile.top(0));
    add.set_top(0, add.name());
    caffe::BlobShape windows;
    for (int d : {bias.windows, 1, bias.T, bias.S}) windows.add_dim(d);
    *add.mutable_binary_op_param()->mutable_operand_shape() = windows;
    if (add.blobs(0).has_shape()) *add.mutable_blobs(0)->mutable_shape() = windows;
    made.push_back(tile);
    made.push_back(add);
  }
  return made;
}

// The causal pattern, queries as the last T of S positions: 0 where
// s <= t + S - T, masked elsewhere.
bool IsCausal(const Mask& mask) {
  for (int t = 0; t < mask.T; ++t)
    for (int s = 0; s < mask.S; ++s) {
      const float v = mask.additive[size_t(t) * mask.S + s];
      if (s <= t + mask.S - mask.T ? v != 0.f : v > kMasked) return false;
    }
  return true;
}

int FuseAttention(caffe::NetParameter* net, const BlobSet& keep) {
  int fused = 0;
  for (int sm = 0; sm < net->layer_size(); ++sm) {
    const caffe::LayerParameter& softmax = net->layer(sm);
    if (softmax.type() != "Softmax" || softmax.softmax_param().axis() != 3 ||
        softmax.bottom_size() != 1)
      continue;
    const BlobUses uses(*net);
    std::set<int> removed = {sm};
    // [p = max(p, 0)]: PyTorch's guard against the NaN of a row masked
    // entirely (Where(IsNaN(p), 0, p)); the Attention layer gives such a
    // row 0, as the guard does.
    std::string probs = softmax.top(0);
    float floor;
    const int guard = uses.SingleReader(probs);
    if (guard >= 0 && !keep.count(probs) &&
        ScalarOperand(net->layer(guard), caffe::BinaryOpParameter::MAX, &floor) && floor == 0.f) {
      removed.insert(guard);
      probs = net->layer(guard).top(0);
    }
    // o = MatMul(p, v)
    const int m2 = uses.SingleReader(probs);
    if (m2 < 0 || keep.count(probs)) continue;
    const caffe::LayerParameter& out = net->layer(m2);
    if (out.type() != "MatMul" || out.bottom_size() != 2 || out.bottom(0) != probs ||
        out.matmul_param().transpose_a() || out.matmul_param().transpose_b())
      continue;
    bool ok;
    Mask mask;
    float scale = 1.f;
    std::string scores = SkipMask(*net, uses, keep, softmax.bottom(0), &mask, &removed, &ok);
    if (!ok) continue;
    WindowBias window_bias;
    if (!mask.present)
      scores = SkipWindowBias(*net, uses, keep, scores, &window_bias, &removed);
    scores = SkipScalars(*net, uses, keep, scores, &scale, &removed);
    // scores = MatMul(q', kt')
    const int m1 = uses.Producer(scores);
    if (m1 < 0 || !Internal(uses, keep, scores)) continue;
    const caffe::LayerParameter& qk = net->layer(m1);
    if (qk.type() != "MatMul" || qk.bottom_size() != 2 || qk.matmul_param().transpose_a() ||
        qk.matmul_param().transpose_b())
      continue;
    removed.insert(m1);
    const std::string q = SkipScalars(*net, uses, keep, qk.bottom(0), &scale, &removed);
    const std::string kt = SkipScalars(*net, uses, keep, qk.bottom(1), &scale, &removed);
    // kt = Permute(x, order) with the last two axes of K swapped, or
    // torch.export's reshaped transpose of a 3-D K.
    const int pk = uses.Producer(kt);
    int k3_permute = -1;
    const int k3_reshape = ReshapedTransposeOfK(*net, uses, keep, kt, &k3_permute);
    std::string k;
    if (k3_reshape >= 0) {
      if (!(scale > 0.f) || !std::isfinite(scale)) continue;
      const std::string& k3 = net->layer(k3_permute).bottom(0);
      if (q == kt || q == k3) continue;  // not the pattern (a Gram matrix)
      // The Reshape now makes K itself, (B, H, S, d), from k3.
      caffe::LayerParameter* reshape = net->mutable_layer(k3_reshape);
      reshape->set_bottom(0, k3);
      caffe::BlobShape* dims = reshape->mutable_reshape_param()->mutable_shape();
      const int64_t d = dims->dim(2);
      dims->set_dim(2, dims->dim(3));
      dims->set_dim(3, d);
      removed.insert(k3_permute);
      k = reshape->top(0);
    } else {
      if (pk < 0 || !Internal(uses, keep, kt) || net->layer(pk).type() != "Permute" ||
          net->layer(pk).permute_param().order_size() != 4)
        continue;
      std::vector<int> order(net->layer(pk).permute_param().order().begin(),
                             net->layer(pk).permute_param().order().end());
      std::swap(order[2], order[3]);
      const bool identity = order == std::vector<int>{0, 1, 2, 3};
      const std::string k_source =
          SkipScalars(*net, uses, keep, net->layer(pk).bottom(0), &scale, &removed);
      if (!(scale > 0.f) || !std::isfinite(scale)) continue;
      if (q == kt || q == k_source) continue;  // not the pattern (a Gram matrix)
      k = k_source;
      if (identity) {
        removed.insert(pk);
      } else {  // the Permute now makes K itself, from the scalars' source
        caffe::LayerParameter* permute = net->mutable_layer(pk);
        permute->set_bottom(0, k_source);
        for (int i = 0; i < 4; ++i) permute->mutable_permute_param()->set_order(i, order[i]);
        k = permute->top(0);
      }
    }

    caffe::LayerParameter attention;
    attention.set_name(out.name());
    attention.set_type("Attention");
    attention.add_bottom(q);
    attention.add_bottom(k);
    attention.add_bottom(out.bottom(1));
    attention.add_top(out.top(0));
    attention.mutable_attention_param()->set_scale(scale);
    if (mask.present && IsCausal(mask)) {
      attention.mutable_attention_param()->set_causal(true);
    } else if (mask.present) {
      // The mask as a blob of a Parameter layer where the softmax was.
      caffe::LayerParameter parameter;
      parameter.set_name(out.name() + "/mask");
      parameter.set_type("Parameter");
      parameter.add_top(parameter.name());
      caffe::BlobShape* shape = parameter.mutable_parameter_param()->mutable_shape();
      shape->add_dim(mask.T);
      shape->add_dim(mask.S);
      caffe::BlobProto* blob = parameter.add_blobs();
      *blob->mutable_shape() = *shape;
      for (float v : mask.additive) blob->add_data(v);
      caffe::ParamSpec* spec = parameter.add_param();
      spec->set_lr_mult(0.f);
      spec->set_decay_mult(0.f);
      attention.add_bottom(parameter.name());
      net->mutable_layer(sm)->Swap(&parameter);
      removed.erase(sm);
    } else if (window_bias.present) {
      // The new layers take the places of the ones they replace (in order,
      // above the Attention layer).
      std::vector<caffe::LayerParameter> made = WindowBiasLayers(*net, window_bias);
      attention.add_bottom(made.back().top(0));
      for (size_t i = 0; i < made.size(); ++i) {
        net->mutable_layer(window_bias.slots[i])->Swap(&made[i]);
        removed.erase(window_bias.slots[i]);
      }
    }
    net->mutable_layer(m2)->Swap(&attention);
    RemoveLayers(net, removed);
    ++fused;
    sm = -1;  // indices moved: scan again
  }
  return fused;
}

}  // namespace

REGISTER_FUSION_PASS(Attention, FuseAttention);

}  // namespace dlcaffe
