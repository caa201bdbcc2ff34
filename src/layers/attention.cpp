// Attention (dlcaffe "Attention", attention_param): scaled dot-product
// attention, fused, softmax(Q K^T * scale + mask) V for every batch item and
// head, forward and backward, without storing the T x S scores (the
// flash-attention scheme, src/cl/attention.cl): memory O(T * D) per head.
//
// Bottoms Q, K, V and an optional additive mask; the layouts are in
// caffe.proto's AttentionParameter: (B, H, T, D) tensors, or with num_heads
// the heads side by side in (B, T, H*D) or (T, B, H*D), Q, K and V separate
// or packed in one bottom. The kernels address every tensor as offset + b *
// sb + h * sh + t * st + d, so no layout costs a copy (an exported
// nn.MultiheadAttention reads its packed, sequence-first projection as is:
// passes/fuse_attention_heads.cpp). causal lets query t see keys
// s <= t + S - T. A mask that needs a gradient (a trained bias, such as
// swin's relative positions) gets dS = P o (dO V^T - delta) summed over the
// axes it is broadcast along (deterministically: every (b, h)'s dS to a
// scratch buffer, then one sum per mask element), as does force_backward.
// Q, K, V, the output and their gradients may be stored in 16 bits (mixed
// precision, with the key/value cache in the same type); the mask stays
// float32, and the kernels compute in float.
//
// Incremental decoding (decode_state.hpp): the layer keeps the keys and
// values of every position so far in a cache of the state's capacity; each
// pass appends the new positions' K and V (which must be as many as the
// queries) and attends over the cache, so a new token costs one row's work.
// A net rebuilt for a new input length hands the cache on (TakeDecodeCache).
//
// Tiles: a work-group of query (or key) rows, the keys (or queries) of a tile
// in __local memory; the tile's length follows the device's local memory, the
// group's size its work-group limit.
//
// On NVIDIA's tensor cores (src/cl/attention_mma.cl): where the pass's math
// (forward_math, backward_math; by default the storage type's) is FLOAT16
// or BFLOAT16, Q, K, V are stored in that type, the head sizes are
// multiples of 16 up to 128 and the device has the matrix engine, the four
// products of each tile run as mma.sync with float sums -- the
// probabilities and dS rounded to the 16-bit type as the A operand of the
// next product, as the GEMMs round their inputs. Float math keeps the float
// kernels (attention.cl) in any storage type.
#include <algorithm>
#include <cmath>
#include <string>

#include "core/layer_math.hpp"
#include "core/matrix_engine.hpp"
#include "core/storage_option.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "dlcaffe/logging.hpp"

namespace dlcaffe {

class AttentionLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Attention"; }
  bool SupportsStorage(StorageType) const override { return true; }
  bool KeepsBottomInFloat(int index) const override { return index == MaskIndex(); }
  int MinBottomBlobs() const override { return 1; }
  int MaxBottomBlobs() const override { return 4; }
  int ExactNumTopBlobs() const override { return 1; }

  void SetDecodeState(const DecodeState& state) override {
    if (!state.incremental || state.capacity != decode_.capacity) cached_ = 0;
    decode_ = state;
  }

  // The caches' storage and the positions they hold, from the layer this one
  // replaces (Net::FollowInputShapes); ReshapeCache keeps them while their
  // shape and type are this layer's.
  void TakeDecodeCache(Layer& earlier) override {
    auto* from = dynamic_cast<AttentionLayer*>(&earlier);
    if (!from || !decode_.incremental || from->cached_ == 0 ||
        from->decode_.capacity != decode_.capacity)
      return;
    for (auto [mine, theirs] : {std::pair{&k_cache_, &from->k_cache_}, {&v_cache_, &from->v_cache_}}) {
      mine->set_storage_type(theirs->storage_type());
      mine->ReshapeLike(*theirs);
      mine->ShareData(*theirs);
    }
    cached_ = from->cached_;
  }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::AttentionParameter& p = param_.attention_param();
    DLC_REQUIRE(std::isfinite(p.scale()) && p.scale() >= 0.f,
                Where() << "attention_param.scale must be finite and >= 0 (0: 1/sqrt(Dk)), got "
                        << p.scale());
    heads_ = static_cast<int>(p.num_heads());
    causal_ = p.causal();
    packed_ = p.packed_qkv();
    sequence_first_ = p.layout() == caffe::AttentionParameter::SEQUENCE_FIRST;
    DLC_REQUIRE(heads_ > 0 || (!packed_ && !sequence_first_),
                Where() << "attention_param.packed_qkv and layout need num_heads");
    const int operands = packed_ ? 1 : 3;
    DLC_REQUIRE(int(bottom.size()) == operands || int(bottom.size()) == operands + 1,
                Where() << "takes " << (packed_ ? "the packed Q, K, V" : "Q, K and V")
                        << " and an optional mask: " << operands << " or " << operands + 1
                        << " bottoms, got " << bottom.size());
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int operands = packed_ ? 1 : 3;
    for (int i = 0; i < operands; ++i)
      DLC_REQUIRE(bottom[i] != top[0], Where() << "cannot work in place");
    storage_ = bottom[0]->storage_type();
    for (int i = 0; i <= operands; ++i) {
      const Blob* b = i < operands ? bottom[i] : top[0];
      DLC_REQUIRE(b->storage_type() == storage_,
                  Where() << "stores Q, K, V and its output in one type; Q is "
                          << StorageTypeName(storage_) << ", another "
                          << StorageTypeName(b->storage_type()));
    }
    if (heads_ == 0) {
      ReshapeSeparateHeads(*bottom[0], *bottom[1], *bottom[2], top[0]);
    } else if (packed_) {
      ReshapePacked(*bottom[0], top[0]);
    } else {
      ReshapeSideBySide(*bottom[0], *bottom[1], *bottom[2], top[0]);
    }
    DLC_REQUIRE(dk_ > 0 && dv_ > 0 && dk_ <= kMaxHeadSize && dv_ <= kMaxHeadSize,
                Where() << "head sizes Dk " << dk_ << " and Dv " << dv_ << " must be 1 to "
                        << kMaxHeadSize);
    if (decode_.incremental) ReshapeCache(bottom);
    if (HasMask(bottom)) CheckMask(*bottom[MaskIndex()]);
    scale_ = param_.attention_param().scale() > 0.f ? param_.attention_param().scale()
                                                    : 1.f / std::sqrt(static_cast<float>(dk_));
    lse_.Reshape({batch_ * H_ * T_});
    delta_.Reshape({batch_ * H_ * T_});
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    if (top[0]->count() == 0) return;
    const bool cached = decode_.incremental;
    if (cached) AppendToCache(bottom);
    // Cached keys and values: the cache's rows, of which the first S_ count.
    const Strides q = OperandStrides(0), k = cached ? CacheStrides(dk_) : OperandStrides(1),
                  v = cached ? CacheStrides(dv_) : OperandStrides(2), o = OutputStrides();
    const cl_mem k_data = cached ? k_cache_.data() : Operand(bottom, 1)->data();
    const cl_mem v_data = cached ? v_cache_.data() : Operand(bottom, 2)->data();
    const Mask mask = MaskOf(bottom);
    const Kernels kernels = KernelsFor(ForwardMatrixMath(param_, storage_, choices_));
    ctx_->Launch(kernels.Get("forward"), kernels.Rows(T_), kernels.Group(), T_, S_, H_, scale_,
                 int(causal_), bottom[0]->data(), q.offset, q.b, q.h, q.t, k_data, k.offset,
                 k.b, k.h, k.t, v_data, v.offset, v.b, v.h, v.t, mask.data, mask.batches,
                 mask.b, mask.h, top[0]->data(), o.offset, o.b, o.h, o.t, lse_.data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    DLC_REQUIRE(!decode_.incremental,
                Where() << "cannot run backward while the net decodes incrementally");
    if (top[0]->count() == 0) return;
    // A packed bottom's gradient is dQ, dK and dV side by side: all or none.
    const bool want_dq = propagate_down[0], want_dk = propagate_down[packed_ ? 0 : 1],
               want_dv = propagate_down[packed_ ? 0 : 2];
    const bool want_dmask = HasMask(bottom) && int(propagate_down.size()) > MaskIndex() &&
                            propagate_down[MaskIndex()];
    if (!want_dq && !want_dk && !want_dv && !want_dmask) return;
    if (S_ == 0) {  // no keys: the output is 0 whatever Q is
      if (want_dq) bottom[0]->SetDiff(0.f);  // packed: there is no K or V either
      return;
    }
    const Strides q = OperandStrides(0), k = OperandStrides(1), v = OperandStrides(2),
                  o = OutputStrides();
    const Blob &q_blob = *Operand(bottom, 0), &k_blob = *Operand(bottom, 1),
               &v_blob = *Operand(bottom, 2);
    const Mask mask = MaskOf(bottom);
    const int rows = batch_ * H_ * T_;
    ctx_->Launch1D(ctx_->Kernel("attention.cl", Options(), "attention_backward_delta"), rows, T_,
                   H_, rows, top[0]->data(), o.offset, o.b, o.h, o.t, top[0]->diff(),
                   delta_.data());
    const Kernels kernels = KernelsFor(BackwardMatrixMath(param_, storage_, choices_));
    // dS for the mask: straight into its gradient where it has every (b, h)
    // plane, else into the scratch buffer, summed below.
    Blob* const mask_blob = want_dmask ? bottom[MaskIndex()] : nullptr;
    const bool mask_whole = want_dmask && mask_blob->count() == batch_ * H_ * T_ * S_;
    cl_mem ds_out = delta_.data();  // named, not written, without want_dmask
    if (want_dmask) {
      if (!mask_whole) ds_scratch_.Reshape({batch_ * H_ * T_ * S_});
      Blob& ds = mask_whole ? *mask_blob : ds_scratch_;
      ds.SetDiff(0.f);  // the dS of keys a query does not see
      ds_out = ds.diff();
    }
    if (want_dq || want_dmask)
      ctx_->Launch(kernels.Get("backward_dq"), kernels.Rows(T_), kernels.Group(), T_, S_,
                   H_, scale_, int(causal_), q_blob.data(), q.offset, q.b, q.h, q.t,
                   k_blob.data(), k.offset, k.b, k.h, k.t, v_blob.data(), v.offset, v.b, v.h,
                   v.t, mask.data, mask.batches, mask.b, mask.h, top[0]->diff(), o.offset, o.b,
                   o.h, o.t, lse_.data(), delta_.data(),
                   want_dq ? q_blob.diff() : delta_.data(), int(want_dq), ds_out,
                   int(want_dmask));
    if (want_dmask && !mask_whole) {
      const int mask_b = mask_blob->num_axes() == 4 ? mask_blob->shape(0) : 1;
      const int mask_h = mask_blob->num_axes() == 4 ? mask_blob->shape(1) : 1;
      const int count = mask_blob->count();
      ctx_->Launch1D(ctx_->Kernel("attention.cl", Options(), "attention_mask_gradient"), count,
                     count, batch_, H_, T_, S_, mask_b, mask_h, ds_scratch_.diff(),
                     mask_blob->diff());
    }
    if (want_dk || want_dv) {
      // An unwanted gradient's pointer still has to name a buffer.
      const cl_mem dk = want_dk ? k_blob.diff() : delta_.data();
      const cl_mem dv = want_dv ? v_blob.diff() : delta_.data();
      ctx_->Launch(kernels.Get("backward_dkv"), kernels.Rows(S_), kernels.Group(), T_, S_,
                   H_, scale_, int(causal_), q_blob.data(), q.offset, q.b, q.h, q.t,
                   k_blob.data(), k.offset, k.b, k.h, k.t, v_blob.data(), v.offset, v.b, v.h,
                   v.t, mask.data, mask.batches, mask.b, mask.h, top[0]->diff(), o.offset, o.b,
                   o.h, o.t, lse_.data(), delta_.data(), dk, dv, int(want_dk), int(want_dv));
    }
  }

 private:
  // Incremental decoding: S_ becomes every position so far; the caches are
  // (re)made for the state's capacity in this layer's layout.
  void ReshapeCache(const std::vector<Blob*>& bottom) {
    DLC_REQUIRE(!HasMask(bottom),
                Where() << "cannot decode incrementally with a mask bottom (use causal)");
    DLC_REQUIRE(S_ == T_, Where() << "while decoding incrementally K and V must hold the new "
                                     "positions only, as many as the queries (" << T_
                                  << "), got " << S_);
    DLC_REQUIRE(decode_.position <= cached_,
                Where() << "decoding from position " << decode_.position << ", but the cache "
                           "holds " << cached_ << " positions only (positions run in order)");
    DLC_REQUIRE(decode_.position + T_ <= decode_.capacity,
                Where() << "positions " << decode_.position << " to " << decode_.position + T_ - 1
                        << " pass the key/value cache's capacity " << decode_.capacity);
    S_ = decode_.position + T_;
    const std::vector<int> k_shape = CacheShape(dk_), v_shape = CacheShape(dv_);
    if (k_cache_.storage_type() != storage_) {
      k_cache_.set_storage_type(storage_);
      v_cache_.set_storage_type(storage_);
      cached_ = 0;
    }
    if (k_cache_.shape() != k_shape || v_cache_.shape() != v_shape) {
      k_cache_.Reshape(k_shape);
      v_cache_.Reshape(v_shape);
      cached_ = 0;
      DLC_REQUIRE(decode_.position == 0,
                  Where() << "the key/value cache is empty: decoding must start at position 0, "
                             "got " << decode_.position);
    }
  }

  std::vector<int> CacheShape(int d) const {
    if (heads_ == 0) return {batch_, H_, decode_.capacity, d};
    return {batch_, decode_.capacity, H_ * d};
  }

  // The new positions' keys and values, from the bottoms' layout into the
  // caches' (slices of rows: (b, h) without num_heads, b with it).
  void AppendToCache(const std::vector<Blob*>& bottom) {
    const int slices = heads_ == 0 ? batch_ * H_ : batch_;
    const auto kernel = ctx_->Kernel("attention.cl", Options(), "attention_cache_append");
    for (int operand : {1, 2}) {
      const int d = operand == 1 ? dk_ : dv_;
      const int width = heads_ == 0 ? d : H_ * d;
      const Strides src = OperandStrides(operand);
      const int count = slices * T_ * width;
      ctx_->Launch1D(kernel, count, count, T_, width, decode_.capacity, decode_.position,
                     Operand(bottom, operand)->data(), src.offset, heads_ == 0 ? src.h : src.b,
                     src.t, (operand == 1 ? k_cache_ : v_cache_).data());
    }
    cached_ = decode_.position + T_;
  }

  // The kernels of one pass: the float ones (attention.cl, a work-item per
  // row) or the tensor cores' (attention_mma.cl, a warp per 16 rows).
  struct Kernels {
    Context* ctx;
    std::string source, options;
    size_t rows_per_group, threads;
    cl_kernel Get(const std::string& name) const {
      const std::string prefix = source == "attention.cl" ? "attention_" : "attention_mma_";
      return ctx->Kernel(source, options, prefix + name);
    }
    NDRange Rows(int rows) const {
      const size_t groups = (size_t(rows) + rows_per_group - 1) / rows_per_group;
      return NDRange(groups * threads, batch_heads);
    }
    NDRange Group() const { return NDRange(threads, 1); }
    size_t batch_heads;
  };

  Kernels KernelsFor(MatrixMath math) {
    const size_t batch_heads = size_t(batch_) * H_;
    const MmaForm form = TensorCoreForm(math);
    if (form != MmaForm::kNone) {
      const std::string options = "-DDK=" + std::to_string(dk_) + " -DDV=" +
                                  std::to_string(dv_) + " -DMMA=" +
                                  std::to_string(static_cast<int>(form)) + " -DEMULATE_MMA=" +
                                  (choices_.matrix_emulate ? "1" : "0") + " -DSTAGES=" +
                                  std::to_string(MmaStages());
      try {
        ctx_->Kernel("attention_mma.cl", options, "attention_mma_forward");  // builds it
        return {ctx_, "attention_mma.cl", options, kMmaRows, kMmaThreads, batch_heads};
      } catch (const Error& e) {
        LOG(WARNING) << Where() << "the tensor-core kernels did not build, so this layer runs "
                                   "the float ones: " << e.what();
        tensor_cores_failed_ = true;
      }
    }
    return {ctx_, "attention.cl", Options(), Rows(), Rows(), batch_heads};
  }

  // The tensor-core form this layer's products in `math` run in, kNone for
  // the float kernels (see the file's comment for when).
  MmaForm TensorCoreForm(MatrixMath math) const {
    if (tensor_cores_failed_ || dk_ % 16 || dv_ % 16 || dk_ > 128 || dv_ > 128) return MmaForm::kNone;
    const MmaForm wanted = math == MatrixMath::kFloat16    ? MmaForm::kF16
                           : math == MatrixMath::kBFloat16 ? MmaForm::kBF16
                                                           : MmaForm::kNone;
    if (wanted == MmaForm::kNone || storage_ != MmaInputType(wanted)) return MmaForm::kNone;
    const DeviceInfo& info = ctx_->info();
    if (info.max_work_group_size < kMmaThreads || info.local_mem_bytes < MmaLocalBytes(1))
      return MmaForm::kNone;
    if (choices_.matrix_emulate) return wanted;
    return MmaFormFor(*ctx_, choices_, math) == wanted ? wanted : MmaForm::kNone;
  }

  // attention_mma.cl's __local memory in `stages` stages: the tiles (rows
  // padded by 8 values), the log-sum-exps and deltas, the emulation's
  // exchange area.
  uint64_t MmaLocalBytes(int stages) const {
    return uint64_t(stages) * kMmaRows * ((dk_ + 8 + dv_ + 8) * 2 + 2 * 4) + 4 * 32 * 6 * 4;
  }
  // Two stages (the next tile fetched during this one's products) where
  // they fit the device's __local memory: head sizes up to 64 on NVIDIA's
  // 48 KiB.
  int MmaStages() const { return MmaLocalBytes(2) <= ctx_->info().local_mem_bytes ? 2 : 1; }

  // attention_mma.cl's work-group: 4 warps, 16 rows each.
  static constexpr size_t kMmaThreads = 128, kMmaRows = 64;

  // Registers hold a row of each head size: beyond this the kernels spill.
  static constexpr int kMaxHeadSize = 256;

  // Where (b, h, t, 0) of a tensor lies: offset + b * b + h * h + t * t.
  struct Strides {
    int offset, b, h, t;
  };
  struct Mask {
    cl_mem data;
    int batches, b, h;  // batches: the mask's batch items, 0 without a mask
  };

  // The mask's bottom: after Q, K and V, or after the packed bottom.
  int MaskIndex() const { return param_.attention_param().packed_qkv() ? 1 : 3; }
  bool HasMask(const std::vector<Blob*>& bottom) const {
    return int(bottom.size()) > MaskIndex();
  }
  // The blob holding Q (0), K (1) or V (2).
  Blob* Operand(const std::vector<Blob*>& bottom, int operand) const {
    return bottom[packed_ ? 0 : operand];
  }

  // Q (0), K (1) or V (2) in its bottom, whose rows (b, t) are `width`
  // values long (H * D, or 3 * H * D packed).
  Strides OperandStrides(int operand) const {
    const int d = operand == 2 ? dv_ : dk_;
    // While decoding, K and V hold the new positions only, as many as Q.
    const int rows = operand == 0 || decode_.incremental ? T_ : S_;
    if (heads_ == 0) return {0, H_ * rows * d, rows * d, d};
    const int width = packed_ ? 3 * H_ * d : H_ * d;
    const int offset = packed_ ? operand * H_ * d : 0;
    if (sequence_first_) return {offset, width, d, batch_ * width};
    return {offset, rows * width, d, width};
  }
  // The top's: Q's layout with Dv, never packed.
  Strides OutputStrides() const {
    if (heads_ == 0) return {0, H_ * T_ * dv_, T_ * dv_, dv_};
    const int width = H_ * dv_;
    if (sequence_first_) return {0, width, dv_, batch_ * width};
    return {0, T_ * width, dv_, width};
  }
  // The key/value caches' ((B, H, capacity, d), or (B, capacity, H*d) with
  // num_heads whatever the bottoms' layout).
  Strides CacheStrides(int d) const {
    const int rows = decode_.capacity;
    if (heads_ == 0) return {0, H_ * rows * d, rows * d, d};
    return {0, rows * H_ * d, d, H_ * d};
  }

  // Q, K, V as (B, H, T, Dk), (B, H, S, Dk), (B, H, S, Dv).
  void ReshapeSeparateHeads(const Blob& q, const Blob& k, const Blob& v, Blob* top) {
    for (const Blob* b : {&q, &k, &v})
      DLC_REQUIRE(b->num_axes() == 4, Where() << "Q, K and V must be (B, H, T, D) without "
                                                 "num_heads, got " << b->shape_string());
    batch_ = q.shape(0), H_ = q.shape(1), T_ = q.shape(2), dk_ = q.shape(3);
    S_ = k.shape(2), dv_ = v.shape(3);
    DLC_REQUIRE(k.shape(0) == batch_ && k.shape(1) == H_ && k.shape(3) == dk_ &&
                    v.shape(0) == batch_ && v.shape(1) == H_ && v.shape(2) == S_,
                Where() << "Q " << q.shape_string() << ", K " << k.shape_string() << " and V "
                        << v.shape_string() << " do not fit (B, H, T, Dk), (B, H, S, Dk), "
                                               "(B, H, S, Dv)");
    top->Reshape({batch_, H_, T_, dv_});
  }

  // With num_heads, Q, K, V as (B, T, H*Dk), (B, S, H*Dk), (B, S, H*Dv), or
  // the first two axes swapped (SEQUENCE_FIRST).
  void ReshapeSideBySide(const Blob& q, const Blob& k, const Blob& v, Blob* top) {
    for (const Blob* b : {&q, &k, &v})
      DLC_REQUIRE(b->num_axes() == 3, Where() << "Q, K and V must be " << LayoutName("T")
                                              << " with num_heads, got " << b->shape_string());
    H_ = heads_;
    const int batch_axis = sequence_first_ ? 1 : 0, time_axis = 1 - batch_axis;
    batch_ = q.shape(batch_axis), T_ = q.shape(time_axis), S_ = k.shape(time_axis);
    DLC_REQUIRE(q.shape(2) % H_ == 0 && v.shape(2) % H_ == 0,
                Where() << "the last axes of Q " << q.shape_string() << " and V "
                        << v.shape_string() << " must split into num_heads " << H_);
    dk_ = q.shape(2) / H_, dv_ = v.shape(2) / H_;
    DLC_REQUIRE(k.shape(batch_axis) == batch_ && k.shape(2) == q.shape(2) &&
                    v.shape(batch_axis) == batch_ && v.shape(time_axis) == S_,
                Where() << "Q " << q.shape_string() << ", K " << k.shape_string() << " and V "
                        << v.shape_string() << " do not fit " << LayoutName("T") << ", "
                        << LayoutName("S") << ", " << LayoutName("S", "H*Dv"));
    top->Reshape(OutputShape());
  }

  // With packed_qkv, one bottom (B, T, 3*H*D) or (T, B, 3*H*D).
  void ReshapePacked(const Blob& qkv, Blob* top) {
    H_ = heads_;
    DLC_REQUIRE(qkv.num_axes() == 3 && qkv.shape(2) % (3 * H_) == 0,
                Where() << "the packed Q, K, V " << qkv.shape_string() << " must be "
                        << LayoutName("T", "3*H*D") << " with num_heads H " << H_);
    batch_ = qkv.shape(sequence_first_ ? 1 : 0);
    T_ = S_ = qkv.shape(sequence_first_ ? 0 : 1);
    dk_ = dv_ = qkv.shape(2) / (3 * H_);
    top->Reshape(OutputShape());
  }

  std::vector<int> OutputShape() const {
    if (sequence_first_) return {T_, batch_, H_ * dv_};
    return {batch_, T_, H_ * dv_};
  }
  std::string LayoutName(const std::string& rows, const std::string& width = "H*Dk") const {
    return sequence_first_ ? "(" + rows + ", B, " + width + ")" : "(B, " + rows + ", " + width + ")";
  }

  void CheckMask(const Blob& mask) {
    const int axes = mask.num_axes();
    const bool fits =
        axes >= 2 && mask.shape(-2) == T_ && mask.shape(-1) == S_ &&
        (axes == 2 || (axes == 4 && mask.shape(0) > 0 && batch_ % mask.shape(0) == 0 &&
                       (mask.shape(1) == 1 || mask.shape(1) == H_)));
    DLC_REQUIRE(fits, Where() << "the mask " << mask.shape_string() << " must be (T, S) = ("
                              << T_ << ", " << S_ << ") or (W, H or 1, T, S) with W dividing B "
                              << batch_ << " (1, B, or windows: item b reads item b % W), H "
                              << H_);
  }

  // The kernels' mask arguments: its batch items (0: no mask), strides.
  Mask MaskOf(const std::vector<Blob*>& bottom) const {
    if (!HasMask(bottom)) return {bottom[0]->data(), 0, 0, 0};
    const Blob& mask = *bottom[MaskIndex()];
    if (mask.num_axes() == 2) return {mask.data(), 1, 0, 0};
    const int plane = T_ * S_;
    return {mask.data(), mask.shape(0), mask.shape(1) * plane, mask.shape(1) == 1 ? 0 : plane};
  }

  // Rows per work-group: 64 where the device allows.
  size_t Rows() const {
    return std::min<size_t>(64, std::max<size_t>(1, ctx_->info().max_work_group_size));
  }

  // Keys (or queries) per tile: up to 32, as many as half the device's local
  // memory holds for the largest kernel's tiles.
  int TileRows() const {
    // The kernels pad head sizes to multiples of 4 (float4 rows).
    const auto padded = [](int d) { return uint64_t(d + 3) / 4 * 4; };
    const uint64_t bytes_per_row = (padded(dk_) + padded(dv_) + 2) * sizeof(float);
    const uint64_t budget = std::max<uint64_t>(ctx_->info().local_mem_bytes / 2, bytes_per_row);
    return static_cast<int>(std::min<uint64_t>(32, budget / bytes_per_row));
  }

  std::string Options() const {
    return "-DDK=" + std::to_string(dk_) + " -DDV=" + std::to_string(dv_) +
           " -DROWS=" + std::to_string(Rows()) + " -DKEYS=" + std::to_string(TileRows()) +
           StorageOption("DATA_TYPE", storage_);
  }

  int heads_ = 0;
  bool causal_ = false;
  bool packed_ = false;          // Q, K, V side by side in bottom 0
  bool sequence_first_ = false;  // with num_heads: (T, B, ...) rather than (B, T, ...)
  int batch_ = 0, H_ = 0, T_ = 0, S_ = 0, dk_ = 0, dv_ = 0;
  float scale_ = 1.f;
  StorageType storage_ = StorageType::kFloat32;  // Q's, K's, V's and the output's
  Blob ds_scratch_{*ctx_};  // dS of every (b, h), for a broadcast mask's gradient (diff)
  Blob lse_{*ctx_};    // per query row: the log of its softmax's denominator
  Blob delta_{*ctx_};  // per query row: dO . O, for backward
  DecodeState decode_;
  Blob k_cache_{*ctx_}, v_cache_{*ctx_};  // incremental decoding's keys and values
  int cached_ = 0;                       // positions the caches hold
  bool tensor_cores_failed_ = false;     // attention_mma.cl did not build here
};

REGISTER_LAYER_CLASS(Attention);

}  // namespace dlcaffe
