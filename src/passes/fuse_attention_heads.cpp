// An Attention layer over (B, H, T, D) bottoms that the exporter gathered,
// head by head, out of a projection's output becomes one that reads the
// projection where it lies and writes its output in the order the layers
// after it wanted (AttentionParameter num_heads, layout, packed_qkv), so the
// gathers -- strided copies, forward and backward -- disappear.
// nn.MultiheadAttention as torch.onnx.export writes it (vit_b_16: ten copies
// a block):
//   qkv (T, B, 3E) -> Reshape (T, B, 3, E) -> Reshape (1, T, B, 3, E)
//     -> Permute [3, 1, 2, 0, 4] -> Reshape (3, T, B, E) -> StridedSlice i
//     -> Reshape (T, B, E) -> Reshape (T, B*H, D) -> Permute [1, 0, 2]
//     -> Reshape (B, H, T, D) -> Attention -> Permute [2, 0, 1, 3] (T, B, H, D)
// and separate projections (B, T, E) -> Reshape (B, T, H, D) -> Permute
// [0, 2, 1, 3] -> Attention -> Permute [0, 2, 1, 3].
//
// GPT's split of a packed (B, T, 3E) projection (Slice, then Reshape
// (B, T, H, D) and Permute [0, 2, 1, 3] each) fuses the same way.
//
// Rather than matching one exporter's spelling, the pass follows each
// operand's view layers (Reshape, Permute, StridedSlice, Slice) from the
// projection as a strided view and fuses only where every element of Q, K
// and V lies where the fused layer's layout reads it. The first Reshape of
// each chain stays (a first Slice becomes one), reshaping the projection to
// the layer's 3-D bottom (a Reshape shares its bottom's memory); the
// Permute after the Attention becomes a Reshape of its 3-D top.
#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "passes/net_pass.hpp"

namespace dlcaffe {

namespace {

// A view of a contiguous source blob. Each axis is a product of atoms (a
// reshape that merges axes which are not adjacent in memory keeps them as
// several atoms, outermost first); element (i_0, ...) lies at offset plus
// each axis's index spread over its atoms times their strides. Atoms of size
// 1 are dropped.
struct Atom {
  int64_t size, stride;
};
using Axis = std::vector<Atom>;
struct View {
  std::vector<Axis> axes;
  int64_t offset = 0;
};

int64_t SizeOf(const Axis& axis) {
  int64_t n = 1;
  for (const Atom& a : axis) n *= a.size;
  return n;
}

View Contiguous(const std::vector<int64_t>& dims) {
  View v;
  v.axes.resize(dims.size());
  int64_t stride = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    if (dims[i] != 1) v.axes[i].push_back({dims[i], stride});
    stride *= dims[i];
  }
  return v;
}

// Numpy's reshape of a view, over atoms: the atoms in order, regrouped into
// the new axes, an atom split where a new axis ends inside it. False where
// the sizes do not divide.
bool Reshaped(const View& in, const std::vector<int64_t>& dims, View* out) {
  std::vector<Atom> atoms;
  for (const Axis& axis : in.axes) atoms.insert(atoms.end(), axis.begin(), axis.end());
  View v;
  v.offset = in.offset;
  size_t next = 0;
  for (int64_t dim : dims) {
    if (dim <= 0) return false;
    Axis axis;
    int64_t need = dim;
    while (need > 1) {
      if (next == atoms.size()) return false;
      Atom& a = atoms[next];
      if (a.size <= need) {
        if (need % a.size) return false;
        axis.push_back(a);
        need /= a.size;
        ++next;
      } else {
        if (a.size % need) return false;
        axis.push_back({need, a.stride * (a.size / need)});  // the outer part
        a.size /= need;
        need = 1;
      }
    }
    v.axes.push_back(axis);
  }
  if (next != atoms.size()) return false;
  *out = v;
  return true;
}

// Elements [begin, begin + kept * step) by step along `axis`, which must be
// one atom (or of size 1).
bool Sliced(View* v, int axis, int64_t begin, int64_t kept, int64_t step) {
  Axis& a = v->axes[axis];
  if (a.empty()) return begin == 0 && kept == 1;
  if (a.size() != 1 || step <= 0) return false;
  v->offset += begin * a[0].stride;
  a[0] = {kept, a[0].stride * step};
  if (kept == 1) a.clear();
  return kept > 0;
}

std::vector<int64_t> Dims(const View& v) {
  std::vector<int64_t> dims;
  for (const Axis& a : v.axes) dims.push_back(SizeOf(a));
  return dims;
}

int NormalizedAxis(int axis, int rank) { return axis < 0 ? axis + rank : axis; }

// Caffe's Slice: the part [begin, end) of an axis of n that top `top` takes.
bool SlicePart(const caffe::LayerParameter& l, int top, int64_t n, int64_t* begin,
               int64_t* end) {
  const caffe::SliceParameter& p = l.slice_param();
  if (p.slice_point_size() == 0) {
    if (n % l.top_size()) return false;
    *begin = top * (n / l.top_size()), *end = *begin + n / l.top_size();
  } else {
    if (p.slice_point_size() + 1 != l.top_size()) return false;
    *begin = top == 0 ? 0 : p.slice_point(top - 1);
    *end = top < p.slice_point_size() ? p.slice_point(top) : n;
  }
  return 0 <= *begin && *begin <= *end && *end <= n;
}

int SliceAxis(const caffe::SliceParameter& p, int rank) {
  return NormalizedAxis(p.has_axis() || !p.has_slice_dim() ? p.axis() : int(p.slice_dim()), rank);
}

// `v` after `l`, whose top `top` the chain follows; false where the pass
// does not follow it.
bool Apply(const caffe::LayerParameter& l, int top, View* v) {
  const int rank = static_cast<int>(v->axes.size());
  const std::vector<int64_t> in = Dims(*v);
  if (l.type() == "Reshape") {
    const caffe::ReshapeParameter& p = l.reshape_param();
    if (p.axis() != 0 || p.num_axes() != -1) return false;
    std::vector<int64_t> dims;
    int inferred = -1;
    int64_t known = 1;
    for (int i = 0; i < p.shape().dim_size(); ++i) {
      int64_t d = p.shape().dim(i);
      if (d == 0) {
        if (i >= rank) return false;
        d = in[i];
      }
      if (d == -1) {
        if (inferred >= 0) return false;
        inferred = i;
      } else {
        known *= d;
      }
      dims.push_back(d);
    }
    int64_t count = 1;
    for (int64_t d : in) count *= d;
    if (inferred >= 0) {
      if (known <= 0 || count % known) return false;
      dims[inferred] = count / known;
    }
    return Reshaped(*v, dims, v);
  }
  if (l.type() == "Permute") {
    const auto& order = l.permute_param().order();
    if (order.size() != rank) return false;
    View p;
    p.offset = v->offset;
    std::set<int> seen;
    for (int axis : order) {
      if (axis >= rank || !seen.insert(int(axis)).second) return false;
      p.axes.push_back(v->axes[axis]);
    }
    *v = p;
    return true;
  }
  if (l.type() == "StridedSlice") {
    const caffe::StridedSliceParameter& p = l.strided_slice_param();
    if (p.end_size() != p.start_size() || (p.axis_size() && p.axis_size() != p.start_size()) ||
        (p.step_size() && p.step_size() != p.start_size()))
      return false;
    for (int k = 0; k < p.start_size(); ++k) {
      const int axis = NormalizedAxis(p.axis_size() ? p.axis(k) : k, rank);
      const int64_t step = p.step_size() ? p.step(k) : 1;
      if (axis < 0 || axis >= rank || step <= 0) return false;
      const int64_t n = in[axis];
      int64_t b = p.start(k), e = p.end(k);  // ONNX's rules, as the layer's
      if (b < 0) b += n;
      if (e < 0) e += n;
      b = std::min(std::max<int64_t>(b, 0), n);
      e = std::min(std::max<int64_t>(e, 0), n);
      if (!Sliced(v, axis, b, std::max<int64_t>((e - b + step - 1) / step, 0), step))
        return false;
    }
    return true;
  }
  if (l.type() == "Slice") {  // Caffe's: top j between slice points
    const int axis = SliceAxis(l.slice_param(), rank);
    if (axis < 0 || axis >= rank) return false;
    int64_t begin, end;
    return SlicePart(l, top, in[axis], &begin, &end) && Sliced(v, axis, begin, end - begin, 1);
  }
  return false;
}

bool IsViewLayer(const caffe::LayerParameter& l) {
  return l.bottom_size() == 1 && (l.type() == "Reshape" || l.type() == "Permute" ||
                                  l.type() == "StridedSlice" || l.type() == "Slice");
}

// An operand's view layers, from its source (the first blob not made by one)
// down to the Attention's bottom, and the view of the source they make.
struct Chain {
  std::string source;
  std::vector<int> layers;  // source first; layers[0] a Reshape or Slice
  View view;
  int64_t source_count = 0;
};

// The product of a Reshape's dimensions where all are explicit, else 0.
int64_t ExplicitCount(const caffe::LayerParameter& l) {
  if (l.type() != "Reshape" || l.reshape_param().axis() != 0 ||
      l.reshape_param().num_axes() != -1)
    return 0;
  int64_t n = 1;
  for (int64_t d : l.reshape_param().shape().dim()) {
    if (d <= 0) return 0;
    n *= d;
  }
  return n;
}

// The view a chain's first layer makes of its source, whose shape is written
// nowhere: a Reshape to explicit dimensions makes it a contiguous tensor of
// those; a Slice along the last axis of an InnerProduct's output (GPT's
// split of its packed projection) sees it as rows of num_output values, as
// many rows as the Reshape after the Slice implies.
bool FirstView(const caffe::NetParameter& net, const BlobUses& uses, const Chain& c, int top,
               View* view, int64_t* source_count) {
  const caffe::LayerParameter& first = net.layer(c.layers[0]);
  if (first.type() == "Reshape") {
    *source_count = ExplicitCount(first);
    if (*source_count == 0) return false;
    std::vector<int64_t> dims(first.reshape_param().shape().dim().begin(),
                              first.reshape_param().shape().dim().end());
    *view = Contiguous(dims);
    return true;
  }
  const int producer = uses.Producer(c.source);
  if (first.type() != "Slice" || c.layers.size() < 2 || producer < 0 ||
      net.layer(producer).type() != "InnerProduct")
    return false;
  const caffe::InnerProductParameter& ip = net.layer(producer).inner_product_param();
  const int64_t width = ip.num_output();
  const int rank = ip.axis() + 1;
  const int64_t part_count = ExplicitCount(net.layer(c.layers[1]));
  int64_t begin, end;
  if (ip.axis() < 0 || width <= 0 || part_count == 0 ||
      SliceAxis(first.slice_param(), rank) != rank - 1 ||
      !SlicePart(first, top, width, &begin, &end) || end == begin ||
      part_count % (end - begin))
    return false;
  const int64_t rows = part_count / (end - begin);
  *source_count = rows * width;
  *view = Contiguous({rows, width});
  return Sliced(view, 1, begin, end - begin, 1);
}

bool Trace(const caffe::NetParameter& net, const BlobUses& uses, const std::string& bottom,
           Chain* chain) {
  std::vector<int> layers;
  std::vector<int> tops;  // which top of each layer the chain follows
  std::string blob = bottom;
  for (;;) {
    const int p = uses.Producer(blob);
    if (p < 0 || !IsViewLayer(net.layer(p))) break;
    const caffe::LayerParameter& l = net.layer(p);
    const int top = int(std::find(l.top().begin(), l.top().end(), blob) - l.top().begin());
    layers.push_back(p);
    tops.push_back(top);
    blob = l.bottom(0);
  }
  if (layers.empty()) return false;
  std::reverse(layers.begin(), layers.end());
  std::reverse(tops.begin(), tops.end());
  chain->source = blob;
  chain->layers = layers;
  if (!FirstView(net, uses, *chain, tops[0], &chain->view, &chain->source_count)) return false;
  for (size_t i = 1; i < layers.size(); ++i)
    if (!Apply(net.layer(layers[i]), tops[i], &chain->view)) return false;
  return true;
}

// The stride of an axis of one atom; any stride fits an axis of size 1.
bool StrideIs(const Axis& axis, int64_t stride) {
  return axis.empty() || (axis.size() == 1 && axis[0].stride == stride);
}

// Whether a (B, H, rows, D) operand lies in its source as the fused layer
// reads it: rows of `width` values in (B, rows) or (rows, B) order, head h
// at offset + h * D.
bool Fits(const Chain& c, bool sequence_first, int64_t width, int64_t offset) {
  const std::vector<int64_t> d = Dims(c.view);
  if (d.size() != 4) return false;
  const int64_t B = d[0], rows = d[2], D = d[3];
  const auto& a = c.view.axes;
  return c.view.offset == offset && StrideIs(a[3], 1) && StrideIs(a[1], D) &&
         StrideIs(a[0], sequence_first ? width : rows * width) &&
         StrideIs(a[2], sequence_first ? B * width : width) &&
         c.source_count == B * rows * width;
}

int FuseAttentionHeads(caffe::NetParameter* net, const BlobSet& keep) {
  int fused = 0;
  for (int at = 0; at < net->layer_size(); ++at) {
    const caffe::LayerParameter& att = net->layer(at);
    if (att.type() != "Attention" || att.attention_param().num_heads() != 0 ||
        att.bottom_size() < 3 || att.top_size() != 1)
      continue;
    const BlobUses uses(*net);
    // The output: one Permute to (B, T, H, Dv) or (T, B, H, Dv).
    const std::string& out = att.top(0);
    const int permute = uses.SingleReader(out);
    if (permute < 0 || keep.count(out) || net->layer(permute).type() != "Permute" ||
        net->layer(permute).bottom_size() != 1)
      continue;
    const std::vector<int> order(net->layer(permute).permute_param().order().begin(),
                                 net->layer(permute).permute_param().order().end());
    const bool sequence_first = order == std::vector<int>{2, 0, 1, 3};
    if (!sequence_first && order != std::vector<int>{0, 2, 1, 3}) continue;

    Chain q, k, v;
    if (!Trace(*net, uses, att.bottom(0), &q) || !Trace(*net, uses, att.bottom(1), &k) ||
        !Trace(*net, uses, att.bottom(2), &v))
      continue;
    const std::vector<int64_t> qd = Dims(q.view), kd = Dims(k.view), vd = Dims(v.view);
    if (qd.size() != 4 || kd.size() != 4 || vd.size() != 4) continue;
    const int64_t B = qd[0], H = qd[1], T = qd[2], dk = qd[3], S = kd[2], dv = vd[3];
    const bool packed = q.source == k.source && k.source == v.source;
    bool fits;
    if (packed) {
      const int64_t width = 3 * H * dk;
      fits = S == T && dv == dk && Fits(q, sequence_first, width, 0) &&
             Fits(k, sequence_first, width, H * dk) &&
             Fits(v, sequence_first, width, 2 * H * dk);
    } else {
      fits = q.source != k.source && q.source != v.source && k.source != v.source &&
             Fits(q, sequence_first, H * dk, 0) &&
             Fits(k, sequence_first, H * dk, 0) && Fits(v, sequence_first, H * dv, 0);
    }
    if (!fits || kd[0] != B || kd[1] != H || vd[0] != B || vd[1] != H) continue;

    // Every blob the chains make is theirs alone: read only by the chains
    // and the Attention, none of them kept.
    std::set<int> chain_layers;
    for (const Chain* c : {&q, &k, &v}) chain_layers.insert(c->layers.begin(), c->layers.end());
    bool internal = true;
    for (int l : chain_layers)
      for (const std::string& top : net->layer(l).top()) {
        if (keep.count(top)) internal = false;
        auto readers = uses.readers.find(top);
        if (readers == uses.readers.end()) continue;
        for (int r : readers->second)
          if (r != at && !chain_layers.count(r)) internal = false;
      }
    if (!internal) continue;

    // Each source's first Reshape now makes the fused layer's 3-D bottom.
    std::set<int> kept_reshapes;
    std::vector<std::string> operands;
    for (const Chain* c : packed ? std::vector<const Chain*>{&q}
                                 : std::vector<const Chain*>{&q, &k, &v}) {
      caffe::LayerParameter* reshape = net->mutable_layer(c->layers[0]);
      if (reshape->type() == "Slice") {  // becomes a Reshape of the whole projection
        const std::string top = reshape->top(0);
        reshape->set_type("Reshape");
        reshape->clear_slice_param();
        reshape->clear_top();
        reshape->add_top(top);
      }
      const int64_t rows = c == &q ? T : S;
      const int64_t width = packed ? 3 * H * dk : (c == &v ? H * dv : H * dk);
      caffe::BlobShape* shape = reshape->mutable_reshape_param()->mutable_shape();
      shape->clear_dim();
      shape->add_dim(sequence_first ? rows : B);
      shape->add_dim(sequence_first ? B : rows);
      shape->add_dim(width);
      kept_reshapes.insert(c->layers[0]);
      operands.push_back(reshape->top(0));
    }
    caffe::LayerParameter* fused_layer = net->mutable_layer(at);
    std::vector<std::string> bottoms = operands;
    for (int i = 3; i < fused_layer->bottom_size(); ++i) bottoms.push_back(fused_layer->bottom(i));
    fused_layer->clear_bottom();
    for (const std::string& b : bottoms) fused_layer->add_bottom(b);
    caffe::AttentionParameter* p = fused_layer->mutable_attention_param();
    p->set_num_heads(static_cast<uint32_t>(H));
    if (sequence_first) p->set_layout(caffe::AttentionParameter::SEQUENCE_FIRST);
    p->set_packed_qkv(packed);
    // The Permute after it: a Reshape of the 3-D top to its 4-D output.
    caffe::LayerParameter* after = net->mutable_layer(permute);
    after->set_type("Reshape");
    after->clear_permute_param();
    caffe::BlobShape* shape = after->mutable_reshape_param()->mutable_shape();
    for (int64_t d : sequence_first ? std::vector<int64_t>{T, B, H, dv}
                                    : std::vector<int64_t>{B, T, H, dv})
      shape->add_dim(d);
    std::set<int> removed;
    for (int l : chain_layers)
      if (!kept_reshapes.count(l)) removed.insert(l);
    RemoveLayers(net, removed);
    ++fused;
    at = -1;  // indices moved: scan again
  }
  return fused;
}

}  // namespace

REGISTER_FUSION_PASS(AttentionHeads, FuseAttentionHeads);

}  // namespace dlcaffe
