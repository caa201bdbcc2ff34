// BinaryOp (dlcaffe; ONNX Add, Sub, Mul, Div, Pow, Max, Min with two
// inputs): y = a OP b with numpy's (multidirectional) broadcasting: the
// shapes align at their last axes, and each axis must be equal or 1 in one
// of them. Two bottoms are a and b. With one bottom, the other operand is
// the layer's blobs[0] of operand_shape (no dims: a scalar), on the right
// (b) unless operand_first; operand_filler fills it (default constant 0) and
// its gradient accumulates into blobs[0]'s diff like any parameter's.
//
// Gradients, each summed over the axes along which its operand was
// broadcast (as PyTorch's autograd):
//   ADD dy, dy; SUB dy, -dy; MUL dy b, dy a; DIV dy / b, -dy (a / b) / b;
//   POW dy b a^(b-1) (0 where b = 0), dy a^b ln(a) (0 where a = 0 and
//     b >= 0), as torch.pow's;
//   MAX/MIN: dy to the larger/smaller operand, and half of dy to each where
//     they are equal (torch.maximum/minimum's convention; ONNX defines no
//     gradient);
//   EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL (1 where true, else 0):
//     none.
// Forward MAX/MIN are OpenCL's fmax/fmin: a NaN operand yields the other one.
//
// Kernels: when both operands have the top's shape, or one has it and the
// other is a per-channel broadcast of it (its non-1 axes one contiguous run
// of the top's: [1,C,1,1] or [C,1,1] against N,C,H,W, [N,C,1,1] gates, a
// trailing [W], a scalar), the passes are generated pointwise kernels
// (core/pointwise_kernel.hpp) and the broadcast operand's gradient one
// per-channel reduction (core/reduce_kernel.hpp). Any other broadcast takes
// src/cl/binary_op.cl. Only ADD and SUB may work in place (top = a bottom
// of the top's shape): the others need both inputs for their gradients.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/pointwise_kernel.hpp"
#include "core/reduce_kernel.hpp"
#include "dlcaffe/filler.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;
using Op = caffe::BinaryOpParameter_Operation;

constexpr int kMaxGroups = 8;

// The formulas over `real` values a, b and dy (binary_op.cl has the same).
struct Formulas {
  const char* forward;
  const char* grad_a;
  const char* grad_b;
};

Formulas FormulasOf(Op op) {
  switch (op) {
    case caffe::BinaryOpParameter_Operation_ADD:
      return {"a + b", "dy", "dy"};
    case caffe::BinaryOpParameter_Operation_SUB:
      return {"a - b", "dy", "-dy"};
    case caffe::BinaryOpParameter_Operation_MUL:
      return {"a * b", "dy * b", "dy * a"};
    case caffe::BinaryOpParameter_Operation_DIV:
      return {"a / b", "dy / b", "-dy * (a / b) / b"};
    case caffe::BinaryOpParameter_Operation_POW:
      return {"pow(a, b)", "b == 0.f ? (real)0.f : dy * b * pow(a, b - 1.f)",
              "(a == 0.f) & (b >= 0.f) ? (real)0.f : dy * pow(a, b) * log(a)"};
    case caffe::BinaryOpParameter_Operation_MAX:
      return {"fmax(a, b)", "a > b ? dy : (a == b ? 0.5f * dy : (real)0.f)",
              "b > a ? dy : (a == b ? 0.5f * dy : (real)0.f)"};
    case caffe::BinaryOpParameter_Operation_MIN:
      return {"fmin(a, b)", "a < b ? dy : (a == b ? 0.5f * dy : (real)0.f)",
              "b < a ? dy : (a == b ? 0.5f * dy : (real)0.f)"};
    // Comparisons give 0/1 and pass no gradient (a step function).
    case caffe::BinaryOpParameter_Operation_EQUAL:
      return {"a == b ? (real)1.f : (real)0.f", "(real)0.f", "(real)0.f"};
    case caffe::BinaryOpParameter_Operation_LESS:
      return {"a < b ? (real)1.f : (real)0.f", "(real)0.f", "(real)0.f"};
    case caffe::BinaryOpParameter_Operation_LESS_EQUAL:
      return {"a <= b ? (real)1.f : (real)0.f", "(real)0.f", "(real)0.f"};
    case caffe::BinaryOpParameter_Operation_GREATER:
      return {"a > b ? (real)1.f : (real)0.f", "(real)0.f", "(real)0.f"};
    case caffe::BinaryOpParameter_Operation_GREATER_EQUAL:
      return {"a >= b ? (real)1.f : (real)0.f", "(real)0.f", "(real)0.f"};
    default:
      DLC_FAIL("BinaryOp: unknown operation " << op);
  }
}

// How the pointwise kernels see the operands.
enum Variant {
  kBothFull = 0,     // a and b have the top's shape
  kBPerChannel = 1,  // a has it, b is per channel
  kAPerChannel = 2,  // b has it, a is per channel
};
const char* const kVariantNames[] = {"full", "b_channel", "a_channel"};

std::vector<Arg> OperandArgs(int variant) {
  return {variant == kAPerChannel ? Channel("a") : In("a"),
          variant == kBPerChannel ? Channel("b") : In("b")};
}

// How an operand of `shape` broadcasts to the top's `top` shape.
struct Broadcast {
  enum Kind { kFull, kPerChannel, kGeneral } kind = kGeneral;
  int channels = 1, inner = 1;  // kPerChannel: channel c of element i is (i / inner) % channels
};

Broadcast Classify(const std::vector<int>& shape, const std::vector<int>& top) {
  const int rank = static_cast<int>(top.size());
  std::vector<int> x(rank - shape.size(), 1);
  x.insert(x.end(), shape.begin(), shape.end());
  Broadcast b;
  if (x == top) {
    b.kind = Broadcast::kFull;
    return b;
  }
  int first = rank, last = -1;
  for (int d = 0; d < rank; ++d) {
    if (x[d] != 1) {
      first = std::min(first, d);
      last = d;
    }
  }
  for (int d = first; d <= last; ++d) {
    if (x[d] != top[d]) return b;  // a broadcast axis inside the run
    b.channels *= x[d];
  }
  for (int d = last + 1; d < rank; ++d) b.inner *= top[d];
  if (last < 0) b.inner = std::max(1, b.inner);
  b.kind = Broadcast::kPerChannel;
  return b;
}

// binary_op.cl's binary_axes.
struct BinaryAxes {
  cl_int size[kMaxGroups];
  cl_int a[kMaxGroups];
  cl_int b[kMaxGroups];
  cl_int y[kMaxGroups];
};

std::string ShapeString(const std::vector<int>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

class BinaryOpLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "BinaryOp"; }
  int MinBottomBlobs() const override { return 1; }
  int MaxBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::BinaryOpParameter& p = param_.binary_op_param();
    op_ = p.operation();
    learned_ = bottom.size() == 1;
    DLC_REQUIRE(learned_ || (!p.has_operand_shape() && !p.operand_first() &&
                             !p.has_operand_filler()),
                Where() << "operand_shape, operand_first and operand_filler are for one bottom "
                           "(the other operand learned); this layer has two");
    // With one bottom, the learned operand is a (operand_first) or b.
    learned_index_ = p.operand_first() ? 0 : 1;
    if (learned_ && blobs_.empty()) {
      std::vector<int> shape;
      for (int i = 0; i < p.operand_shape().dim_size(); ++i) {
        const int64_t dim = p.operand_shape().dim(i);
        DLC_REQUIRE(dim > 0 && dim <= INT32_MAX,
                    Where() << "operand_shape dimension " << i << " is " << dim
                            << "; dimensions must be positive");
        shape.push_back(static_cast<int>(dim));
      }
      blobs_.push_back(std::make_shared<Blob>(*ctx_, shape));
      caffe::FillerParameter filler = p.operand_filler();
      if (!p.has_operand_filler()) {
        filler.set_type("constant");
        filler.set_value(0.f);
      }
      FillBlob(filler, blobs_[0].get());
    }
    if (learned_) set_param_propagate_down(0, true);

    const Formulas f = FormulasOf(op_);
    const std::string name = "binary_op_" + caffe::BinaryOpParameter_Operation_Name(op_);
    for (int v = 0; v < 3; ++v) {
      std::vector<Arg> args = OperandArgs(v);
      args.push_back(Out("y"));
      forward_[v] = std::make_unique<PointwiseKernel>(
          name + "_forward_" + kVariantNames[v], args, std::string("y = ") + f.forward + ";");
      for (int w = 0; w < 2; ++w) {
        // The gradient of a full-shaped operand w: pointwise, written or
        // accumulated.
        if (v == (w == 0 ? kAPerChannel : kBPerChannel)) continue;
        std::vector<Arg> grad_args = OperandArgs(v);
        grad_args.insert(grad_args.end(), {In("dy"), InOut("dx"), IntScalar("accumulate")});
        grad_full_[w][v] = std::make_unique<PointwiseKernel>(
            name + "_grad_" + "ab"[w] + "_" + kVariantNames[v], grad_args,
            std::string("const real g = ") + (w == 0 ? f.grad_a : f.grad_b) +
                ";\ndx = accumulate ? dx + g : g;");
      }
    }
    // The gradient of a per-channel operand: a sum per channel.
    for (int w = 0; w < 2; ++w) {
      std::vector<Arg> args = OperandArgs(w == 0 ? kAPerChannel : kBPerChannel);
      args.insert(args.end(), {In("dy"), ChannelOut("dx"), IntScalar("accumulate")});
      grad_channel_[w] = std::make_unique<ChannelReduceKernel>(
          name + "_grad_" + "ab"[w] + "_sum", args,
          std::vector<Reduction>{Sum("g", w == 0 ? f.grad_a : f.grad_b)},
          "dx = accumulate ? dx + g : g;");
    }
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const Blob& a = *Operand(bottom, 0);
    const Blob& b = *Operand(bottom, 1);
    // numpy broadcasting, aligned at the last axes.
    const int rank = std::max(a.num_axes(), b.num_axes());
    std::vector<int> shape(rank);
    for (int d = 0; d < rank; ++d) {
      const int i = d - (rank - a.num_axes()), j = d - (rank - b.num_axes());
      const int da = i >= 0 ? a.shape()[i] : 1, db = j >= 0 ? b.shape()[j] : 1;
      DLC_REQUIRE(da == db || da == 1 || db == 1,
                  Where() << "cannot broadcast " << OperandName(0) << " " << ShapeString(a.shape())
                          << " with " << OperandName(1) << " " << ShapeString(b.shape())
                          << ": axis " << d << " of the result would be " << da << " and " << db
                          << " (numpy rules: equal, or 1 in one of them)");
      shape[d] = da == 1 ? db : da;
    }
    in_place_ = -1;
    for (size_t i = 0; i < bottom.size(); ++i) {
      if (bottom[i] != top[0]) continue;
      DLC_REQUIRE(op_ == caffe::BinaryOpParameter_Operation_ADD ||
                      op_ == caffe::BinaryOpParameter_Operation_SUB,
                  Where() << "only ADD and SUB can work in place; "
                          << caffe::BinaryOpParameter_Operation_Name(op_)
                          << " needs both inputs for its gradients");
      DLC_REQUIRE(bottom[i]->shape() == shape,
                  Where() << "in place, the bottom " << bottom[i]->shape_string()
                          << " must have the result's shape " << ShapeString(shape));
      in_place_ = OperandIndexOfBottom(static_cast<int>(i));
    }
    top[0]->Reshape(shape);
    count_ = top[0]->count();

    const Broadcast ba = Classify(a.shape(), shape), bb = Classify(b.shape(), shape);
    if (ba.kind == Broadcast::kFull && bb.kind == Broadcast::kFull) {
      variant_ = kBothFull;
    } else if (ba.kind == Broadcast::kFull && bb.kind == Broadcast::kPerChannel) {
      variant_ = kBPerChannel;
      axis_ = {bb.channels, bb.inner};
    } else if (bb.kind == Broadcast::kFull && ba.kind == Broadcast::kPerChannel) {
      variant_ = kAPerChannel;
      axis_ = {ba.channels, ba.inner};
    } else {
      variant_ = -1;
      SetGeneralGeometry(a.shape(), b.shape(), shape);
    }
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    if (count_ == 0) return;
    const cl_mem a = Operand(bottom, 0)->data(), b = Operand(bottom, 1)->data();
    if (variant_ >= 0) {
      forward_[variant_]->Launch(*ctx_, count_, {a, b, top[0]->data()}, {}, axis_,
                                 KernelShapeOf(choices_));
      return;
    }
    ctx_->Launch1D(ctx_->Kernel("binary_op.cl", Options() + " -DRANK=" + std::to_string(rank_),
                                "binary_forward"),
                   count_, count_, axes_, a, b, top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (count_ == 0) {  // an empty result: no gradient reaches the bottoms
      for (size_t i = 0; i < bottom.size(); ++i)
        if (propagate_down[i]) ctx_->Fill(bottom[i]->diff(), 0, bottom[i]->count(), 0.f);
      return;
    }
    const cl_mem a = Operand(bottom, 0)->data(), b = Operand(bottom, 1)->data();
    const cl_mem dy = top[0]->diff();
    // An operand sharing the top's storage goes last: the others read dy first.
    const int order[2] = {in_place_ == 0 ? 1 : 0, in_place_ == 0 ? 0 : 1};
    for (int w : order) {
      const bool learned = learned_ && w == learned_index_;
      if (learned ? !param_propagate_down(0) : !propagate_down[BottomIndexOfOperand(w)]) continue;
      Blob& x = *Operand(bottom, w);
      const cl_mem dx = x.diff();
      const std::vector<ScalarArg> accumulate = {learned};
      const int per_channel = w == 0 ? kAPerChannel : kBPerChannel;
      if (variant_ == per_channel) {
        grad_channel_[w]->Launch(*ctx_, workspace_, count_ / (axis_.channels * axis_.inner),
                                 axis_.channels, axis_.inner, {a, b, dy, dx}, accumulate,
                                 KernelShapeOf(choices_));
      } else if (variant_ >= 0) {
        grad_full_[w][variant_]->Launch(*ctx_, count_, {a, b, dy, dx}, accumulate, axis_,
                                        KernelShapeOf(choices_));
      } else {
        const Grad& g = grads_[w];
        const std::string options = Options() + " -DKEPT=" + std::to_string(g.kept_groups) +
                                    " -DRED=" + std::to_string(g.reduced_groups) +
                                    " -DWRT=" + std::to_string(w);
        const int n = x.count();
        ctx_->Launch1D(ctx_->Kernel("binary_op.cl", options, "binary_backward"), n, n, g.kept,
                       g.reduced, cl_int(learned), a, b, dy, dx);
      }
    }
  }

 private:
  // Operand w (0: a, 1: b): a bottom or the learned blob.
  Blob* Operand(const std::vector<Blob*>& bottom, int w) const {
    if (!learned_) return bottom[w];
    return w == learned_index_ ? blobs_[0].get() : bottom[0];
  }
  int BottomIndexOfOperand(int w) const { return learned_ ? 0 : w; }
  int OperandIndexOfBottom(int i) const { return learned_ ? 1 - learned_index_ : i; }
  std::string OperandName(int w) const {
    if (learned_ && w == learned_index_) return "the learned operand";
    return "bottom " + std::to_string(BottomIndexOfOperand(w));
  }

  std::string Options() const { return "-DOP=" + std::to_string(int(op_)); }

  // binary_op.cl's groups: the top's axes of size above 1, neighbours where
  // each operand is broadcast alike merged.
  void SetGeneralGeometry(const std::vector<int>& a_shape, const std::vector<int>& b_shape,
                          const std::vector<int>& top) {
    const int rank = static_cast<int>(top.size());
    auto aligned = [&](const std::vector<int>& s, int d) {
      const int i = d - (rank - static_cast<int>(s.size()));
      return i >= 0 ? s[i] : 1;
    };
    struct Group {
      int size;
      bool a_broadcast, b_broadcast;
    };
    std::vector<Group> groups;
    for (int d = 0; d < rank; ++d) {
      if (top[d] == 1) continue;
      const bool ab = aligned(a_shape, d) == 1, bb = aligned(b_shape, d) == 1;
      if (!groups.empty() && groups.back().a_broadcast == ab && groups.back().b_broadcast == bb) {
        groups.back().size *= top[d];
      } else {
        groups.push_back({top[d], ab, bb});
      }
    }
    if (groups.empty()) groups.push_back({1, false, false});
    DLC_REQUIRE(groups.size() <= size_t(kMaxGroups),
                Where() << "broadcasting " << ShapeString(a_shape) << " with "
                        << ShapeString(b_shape) << " alternates " << groups.size()
                        << " times between broadcast patterns; at most " << kMaxGroups
                        << " are supported");
    const int n = static_cast<int>(groups.size());
    std::vector<int> sa(n), sb(n), sy(n);
    int stride_a = 1, stride_b = 1, stride_y = 1;
    for (int g = n - 1; g >= 0; --g) {
      sa[g] = groups[g].a_broadcast ? 0 : stride_a;
      sb[g] = groups[g].b_broadcast ? 0 : stride_b;
      sy[g] = stride_y;
      if (!groups[g].a_broadcast) stride_a *= groups[g].size;
      if (!groups[g].b_broadcast) stride_b *= groups[g].size;
      stride_y *= groups[g].size;
    }
    rank_ = n;
    axes_ = BinaryAxes();
    for (int g = 0; g < n; ++g) {
      axes_.size[g] = groups[g].size;
      axes_.a[g] = sa[g];
      axes_.b[g] = sb[g];
      axes_.y[g] = sy[g];
    }
    for (int w = 0; w < 2; ++w) {
      Grad& grad = grads_[w];
      grad = Grad();
      for (int g = 0; g < n; ++g) {
        const bool reduced = w == 0 ? groups[g].a_broadcast : groups[g].b_broadcast;
        BinaryAxes& into = reduced ? grad.reduced : grad.kept;
        int& k = reduced ? grad.reduced_groups : grad.kept_groups;
        into.size[k] = groups[g].size;
        into.a[k] = sa[g];
        into.b[k] = sb[g];
        into.y[k] = sy[g];
        ++k;
      }
    }
  }

  Op op_ = caffe::BinaryOpParameter_Operation_ADD;
  bool learned_ = false;
  int learned_index_ = 1;  // with one bottom: the learned operand (0: a, 1: b)
  int in_place_ = -1;      // the operand that shares the top's storage
  int count_ = 0;
  // The pointwise form (variant_ >= 0) and its kernels.
  int variant_ = kBothFull;
  ChannelAxis axis_;
  std::unique_ptr<PointwiseKernel> forward_[3];
  std::unique_ptr<PointwiseKernel> grad_full_[2][3];       // [operand][variant]
  std::unique_ptr<ChannelReduceKernel> grad_channel_[2];  // [operand]
  ReduceWorkspace workspace_;
  // binary_op.cl's form (variant_ < 0).
  int rank_ = 1;
  BinaryAxes axes_;
  struct Grad {
    BinaryAxes kept = {}, reduced = {};
    int kept_groups = 0, reduced_groups = 0;
  };
  Grad grads_[2];
};

REGISTER_LAYER_CLASS(BinaryOp);

}  // namespace dlcaffe
