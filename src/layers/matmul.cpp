// MatMul (dlcaffe "MatMul", matmul_param): numpy.matmul / ONNX MatMul /
// torch.matmul of a and b.
//
// - The last two axes of each operand are its matrix; the axes before them
//   are batch axes, broadcast against each other as numpy broadcasts (right-
//   aligned; equal sizes, or 1). top = broadcast batch axes + [M, N].
// - A 1-D operand is a vector: a of shape [K] is read as [1, K] and b of
//   shape [K] as [K, 1], and that added axis is removed from the top (so [K]
//   x [K] gives a scalar, a blob of no axes).
// - transpose_a / transpose_b transpose the last two axes of a / b first
//   (op(a) is M x K, op(b) is K x N). A 1-D operand cannot be transposed.
// - Two bottoms are a and b. With one bottom, the other operand is the
//   layer's learnable blobs[0] of matmul_param.operand_shape (filled by
//   operand_filler, default constant 0): b, or a with operand_first, like an
//   ONNX MatMul with an initializer.
//
// Every product runs through the library's GEMM: batches whose strides are
// uniform over the trailing batch axes run as one batched GEMM, the leading
// axes that break uniformity (mixed broadcasting) as a loop of such calls.
// The usual x @ W (W not batched) runs as one GEMM with the batch folded into
// M, forward and backward. Backward sums each operand's gradient over the
// batch axes it was broadcast along (in a fixed order: deterministic).
// Forward products use the layer's forward math, the gradients its backward
// math (core/layer_math.hpp).
//
// The operands and the top may be stored in 16 bits (mixed precision); a
// learned operand and its gradient stay float, as InnerProduct's weights
// do (a product rounds it to the activations' type where the tensor cores
// would anyway, as InnerProduct does). A 16-bit gradient summed over
// broadcast axes is summed in float and rounded once.
#include <numeric>
#include <string>

#include "core/layer_math.hpp"
#include "core/matrix_engine.hpp"
#include "core/pointwise_kernel.hpp"
#include "core/storage_convert.hpp"
#include "core/typed_product.hpp"
#include "dlcaffe/filler.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "dlcaffe/math.hpp"

namespace dlcaffe {

namespace {

using pointwise::BufferArg;
using pointwise::Data;
using pointwise::Diff;

std::string ShapeString(const std::vector<int>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The batch-axis strides of the three operands of a batched product, one per
// output batch axis (0 where the operand is broadcast along it).
struct BatchStrides {
  std::vector<size_t> a, b, c;
};

// Runs `g` (its offsets the origin of each operand) for every index of the
// batch axes `sizes`, operand X's matrix at its offset + sum index[d] *
// strides.X[d]. The longest run of trailing axes over which every operand's
// stride is uniform (and the destination's not 0) is one batched call; the
// axes before it are looped over. With a destination stride 0 along a looped
// axis the calls add into the same matrix: the caller passes beta 1.
void RunBatched(Context& ctx, GemmArgs g, const std::vector<int>& sizes,
                const BatchStrides& strides) {
  const int nb = static_cast<int>(sizes.size());
  for (int s : sizes)
    if (s == 0) return;
  // The batched suffix [first, nb) and its uniform strides.
  long long unit_a = -1, unit_b = -1, unit_c = -1;
  long long span = 1;  // the product of sizes after d
  int first = nb;
  const auto uniform = [&](long long& unit, size_t stride) {
    if (unit < 0) {
      unit = static_cast<long long>(stride);
      return true;
    }
    return static_cast<long long>(stride) == unit * span;
  };
  for (int d = nb - 1; d >= 0; --d) {
    if (sizes[d] == 1) {
      first = d;
      continue;
    }
    long long ua = unit_a, ub = unit_b, uc = unit_c;
    if (!uniform(ua, strides.a[d]) || !uniform(ub, strides.b[d]) || !uniform(uc, strides.c[d]) ||
        uc == 0)
      break;
    unit_a = ua;
    unit_b = ub;
    unit_c = uc;
    span *= sizes[d];
    first = d;
  }
  g.batch = static_cast<int>(span);
  g.a_batch_stride = span > 1 ? static_cast<size_t>(unit_a) : 0;
  g.b_batch_stride = span > 1 ? static_cast<size_t>(unit_b) : 0;
  g.c_batch_stride = span > 1 ? static_cast<size_t>(unit_c) : 0;
  const size_t a0 = g.a_offset, b0 = g.b_offset, c0 = g.c_offset;
  std::vector<int> index(first, 0);
  while (true) {
    g.a_offset = a0;
    g.b_offset = b0;
    g.c_offset = c0;
    for (int d = 0; d < first; ++d) {
      g.a_offset += index[d] * strides.a[d];
      g.b_offset += index[d] * strides.b[d];
      g.c_offset += index[d] * strides.c[d];
    }
    Gemm(ctx, g);
    int d = first - 1;
    while (d >= 0 && ++index[d] == sizes[d]) index[d--] = 0;
    if (d < 0) break;
  }
}

}  // namespace

class MatMulLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "MatMul"; }
  int MinBottomBlobs() const override { return 1; }
  int MaxBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  // Two activations multiplied (Q K^T, scores V) mix positions.
  bool DecodesIncrementally() const override { return !two_operands_; }
  bool SupportsStorage(StorageType) const override { return true; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::MatMulParameter& p = param_.matmul_param();
    two_operands_ = bottom.size() == 2;
    if (bottom.size() == 2) {
      DLC_REQUIRE(!p.has_operand_shape() && !p.operand_first(),
                  Where() << "operand_shape and operand_first are for one bottom; this layer "
                             "has two (a and b)");
      return;
    }
    DLC_REQUIRE(p.has_operand_shape(),
                Where() << "with one bottom, matmul_param.operand_shape must give the shape of "
                        << (p.operand_first() ? "a" : "b") << ", the learned operand");
    std::vector<int> shape;
    for (int i = 0; i < p.operand_shape().dim_size(); ++i) {
      const long long dim = p.operand_shape().dim(i);
      DLC_REQUIRE(dim > 0 && dim <= (1LL << 30),
                  Where() << "operand_shape dimension " << i << " is " << dim
                          << "; it must be positive");
      shape.push_back(static_cast<int>(dim));
    }
    DLC_REQUIRE(!shape.empty(), Where() << "operand_shape needs at least one axis");
    if (blobs_.empty()) {
      blobs_.push_back(std::make_shared<Blob>(*ctx_, shape));
      FillBlob(p.operand_filler(), blobs_[0].get());
    }
    DLC_REQUIRE(blobs_.size() == 1 && blobs_[0]->shape() == shape,
                Where() << "the learned operand has shape " << ShapeString(blobs_[0]->shape())
                        << ", but operand_shape says " << ShapeString(shape));
    set_param_propagate_down(0, true);
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::MatMulParameter& p = param_.matmul_param();
    const Blob& a = A(bottom);
    const Blob& b = B(bottom);
    trans_a_ = p.transpose_a();
    trans_b_ = p.transpose_b();
    const std::string shapes =
        "a " + ShapeString(a.shape()) + (trans_a_ ? " (transposed)" : "") + ", b " +
        ShapeString(b.shape()) + (trans_b_ ? " (transposed)" : "");
    DLC_REQUIRE(a.num_axes() >= 1 && b.num_axes() >= 1,
                Where() << "both operands need at least one axis: " << shapes);
    a_vector_ = a.num_axes() == 1;
    b_vector_ = b.num_axes() == 1;
    DLC_REQUIRE(!(a_vector_ && trans_a_) && !(b_vector_ && trans_b_),
                Where() << "a 1-D operand cannot be transposed: " << shapes);
    // op(a) is M x K, op(b) is K x N.
    const int a_rows = a_vector_ ? 1 : a.shape(-2), a_cols = a.shape(-1);
    const int b_rows = b_vector_ ? b.shape(0) : b.shape(-2), b_cols = b_vector_ ? 1 : b.shape(-1);
    M_ = trans_a_ ? a_cols : a_rows;
    const int ka = trans_a_ ? a_rows : a_cols;
    const int kb = trans_b_ ? b_cols : b_rows;
    N_ = trans_b_ ? b_rows : b_cols;
    DLC_REQUIRE(ka == kb, Where() << "the inner dimensions differ (" << ka << " and " << kb
                                  << "): " << shapes);
    K_ = ka;
    // Batch axes, right-aligned and broadcast.
    const std::vector<int> a_batch(a.shape().begin(), a.shape().end() - (a_vector_ ? 1 : 2));
    const std::vector<int> b_batch(b.shape().begin(), b.shape().end() - (b_vector_ ? 1 : 2));
    const int nb = static_cast<int>(std::max(a_batch.size(), b_batch.size()));
    const auto aligned = [nb](const std::vector<int>& batch, int d) {
      const int i = d - (nb - static_cast<int>(batch.size()));
      return i < 0 ? 1 : batch[i];
    };
    batch_.assign(nb, 1);
    for (int d = 0; d < nb; ++d) {
      const int sa = aligned(a_batch, d), sb = aligned(b_batch, d);
      DLC_REQUIRE(sa == sb || sa == 1 || sb == 1,
                  Where() << "the batch axes do not broadcast (" << sa << " against " << sb
                          << "): " << shapes);
      batch_[d] = sa == 1 ? sb : sa;
    }
    // Matrix strides along each batch axis (0: broadcast).
    strides_.a.assign(nb, 0);
    strides_.b.assign(nb, 0);
    strides_.c.assign(nb, 0);
    size_t run_a = size_t(M_) * K_, run_b = size_t(K_) * N_, run_c = size_t(M_) * N_;
    for (int d = nb - 1; d >= 0; --d) {
      const int sa = aligned(a_batch, d), sb = aligned(b_batch, d);
      if (sa > 1) strides_.a[d] = run_a;
      if (sb > 1) strides_.b[d] = run_b;
      if (batch_[d] > 1) strides_.c[d] = run_c;
      run_a *= sa;
      run_b *= sb;
      run_c *= batch_[d];
    }
    batch_count_ = 1;
    for (int s : batch_) batch_count_ *= s;
    std::vector<int> top_shape = batch_;
    if (!a_vector_) top_shape.push_back(M_);
    if (!b_vector_) top_shape.push_back(N_);
    top[0]->Reshape(top_shape);
    Math(bottom, false);  // a math field that is not a math type fails here, not in Forward
    Math(bottom, true);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    if (top[0]->count() == 0) return;
    if (K_ == 0) {
      top[0]->SetData(0.f);
      return;
    }
    const MatrixMath math = Math(bottom, false);
    const StorageType activations = bottom[0]->storage_type();
    BufferPtr rounded;
    GemmArgs g = TypedProduct(trans_a_, trans_b_, M_, N_, K_,
                              Operand(A(bottom), activations, math, &rounded),
                              Operand(B(bottom), activations, math, &rounded), Data(*top[0]), 0.f,
                              math, choices_);
    if (FoldsIntoRows()) {  // C (batch * M x N) = A (batch * M x K) op(B)
      g.M = batch_count_ * M_;
      Gemm(*ctx_, g);
      return;
    }
    RunBatched(*ctx_, g, batch_, strides_);
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    const bool learned = bottom.size() == 1;
    const bool operand_first = learned && param_.matmul_param().operand_first();
    // Which of a and b get a gradient, and whether it adds into a parameter diff.
    const bool want_a = operand_first ? param_propagate_down(0) : propagate_down[0];
    const bool want_b = learned ? (operand_first ? propagate_down[0] : param_propagate_down(0))
                                : propagate_down[1];
    Blob& a = A(bottom);
    Blob& b = B(bottom);
    const MatrixMath math = Math(bottom, true);
    if (want_a) Gradient(true, a, b, *top[0], &a, learned && operand_first, math);
    if (want_b) Gradient(false, a, b, *top[0], &b, learned && !operand_first, math);
  }

 private:
  Blob& A(const std::vector<Blob*>& bottom) const {
    if (bottom.size() == 2) return *bottom[0];
    return param_.matmul_param().operand_first() ? *blobs_[0] : *bottom[0];
  }
  Blob& B(const std::vector<Blob*>& bottom) const {
    if (bottom.size() == 2) return *bottom[1];
    return param_.matmul_param().operand_first() ? *bottom[0] : *blobs_[0];
  }
  // The math of the forward or the backward products, the activation's
  // storage type where the layer sets none: bottom[0] (a, or the one
  // bottom), never a learned operand, which stays float.
  MatrixMath Math(const std::vector<Blob*>& bottom, bool backward) const {
    const StorageType storage = bottom[0]->storage_type();
    return backward ? BackwardMatrixMath(param_, storage, choices_)
                    : ForwardMatrixMath(param_, storage, choices_);
  }

  // A learned operand rounded to the activations' 16-bit type `activations`
  // for products in `math` where the tensor cores would round it as they
  // load it (the same product, which the cp.async pipeline can stream:
  // MmaRoundedWeights, kept until the weights change), also in `rounded`;
  // any other operand, or where they would not, the blob's data.
  BufferArg Operand(const Blob& blob, StorageType activations, MatrixMath math,
                    BufferPtr* rounded) const {
    if (blobs_.empty() || &blob != blobs_[0].get()) return Data(blob);
    *rounded = MmaRoundedWeights(*ctx_, choices_, blob, math, activations, rounded_weights_);
    return *rounded ? BufferArg((*rounded)->mem(), activations) : Data(blob);
  }

  // b is one matrix for every batch index and a holds one per batch index in
  // order, untransposed: the batch is more rows of one product.
  bool FoldsIntoRows() const {
    if (trans_a_ || batch_count_ <= 1) return batch_count_ == 1;
    size_t expected = size_t(M_) * K_;
    for (int d = static_cast<int>(batch_.size()) - 1; d >= 0; --d) {
      if (strides_.b[d] != 0 || (batch_[d] > 1 && strides_.a[d] != expected)) return false;
      expected *= batch_[d];
    }
    return true;
  }

  // The gradient of a (for_a) or b into `target`'s diff, written, or added
  // with `accumulate` (a parameter's diff). op(a) = A', op(b) = B':
  //   dA' = dC B'^T, dB' = A'^T dC; a transposed operand gets the transpose.
  void Gradient(bool for_a, const Blob& a_blob, const Blob& b_blob, const Blob& top,
                Blob* target, bool accumulate, MatrixMath math) {
    const int count = target->count();
    if (count == 0) return;
    const std::vector<size_t>& own = for_a ? strides_.a : strides_.b;
    if (size_t(M_) * N_ * batch_count_ == 0 || K_ == 0) {  // nothing flows back
      if (!accumulate) target->SetDiff(0.f);
      return;
    }
    // dA reads b and dB reads a: that one, if learned, rounded as the
    // activation is stored (Operand).
    BufferPtr rounded;
    const BufferArg a = for_a ? Data(a_blob) : Operand(a_blob, b_blob.storage_type(), math, &rounded),
                    b = for_a ? Operand(b_blob, a_blob.storage_type(), math, &rounded) : Data(b_blob),
                    dc = Diff(top);
    BufferArg diff = Diff(*target);
    const bool fold = FoldsIntoRows();
    // Summed over broadcast axes: several products add into one matrix
    // (folded, b's gradient is one product whose depth runs over the batch).
    bool reduces = false;
    for (size_t d = 0; d < batch_.size(); ++d) reduces |= batch_[d] > 1 && own[d] == 0;
    reduces &= !fold;
    // A 16-bit sum over products is summed in float, then rounded once.
    BufferPtr float_sums;
    if (reduces && !accumulate && diff.type != StorageType::kFloat32) {
      float_sums = ctx_->Allocate(sizeof(float) * size_t(count));
      diff = BufferArg(float_sums->mem(), StorageType::kFloat32);
    }
    if (reduces && !accumulate) SetFloats(*ctx_, count, 0.f, diff.mem, 0);
    const float beta = accumulate || reduces ? 1.f : 0.f;
    const int rows = fold ? batch_count_ * M_ : M_;  // of A' and dC
    GemmArgs g;
    BatchStrides s;
    if (for_a) {
      if (!trans_a_)  // dA (M x K) = dC (M x N) B'^T
        g = TypedProduct(false, !trans_b_, rows, K_, N_, dc, b, diff, beta, math, choices_);
      else  // dA (K x M) = B' (K x N) dC^T
        g = TypedProduct(trans_b_, true, K_, M_, N_, b, dc, diff, beta, math, choices_);
      s = trans_a_ ? BatchStrides{strides_.b, strides_.c, strides_.a}
                   : BatchStrides{strides_.c, strides_.b, strides_.a};
      // Folded: one product over all rows (a is not broadcast there).
      if (fold) return Gemm(*ctx_, g);
    } else {
      if (!trans_b_)  // dB (K x N) = A'^T (K x M) dC (M x N)
        g = TypedProduct(!trans_a_, false, K_, N_, rows, a, dc, diff, beta, math, choices_);
      else  // dB (N x K) = dC^T (N x M) A' (M x K)
        g = TypedProduct(true, trans_a_, N_, K_, rows, dc, a, diff, beta, math, choices_);
      s = trans_b_ ? BatchStrides{strides_.c, strides_.a, strides_.b}
                   : BatchStrides{strides_.a, strides_.c, strides_.b};
      // Folded: the batch is the products' depth, one GEMM sums it.
      if (fold) return Gemm(*ctx_, g);
    }
    RunBatched(*ctx_, g, batch_, s);
    if (float_sums)
      ConvertStorage(*ctx_, float_sums->mem(), 0, StorageType::kFloat32, target->diff(), 0,
                     target->storage_type(), count);
  }

  bool trans_a_ = false, trans_b_ = false, a_vector_ = false, b_vector_ = false;
  int M_ = 0, N_ = 0, K_ = 0;
  std::vector<int> batch_;  // the broadcast batch axes
  int batch_count_ = 1;
  BatchStrides strides_;
  mutable DerivedCopy rounded_weights_;  // Operand's learned one, rounded
  bool two_operands_ = false;
};

REGISTER_LAYER_CLASS(MatMul);

}  // namespace dlcaffe
