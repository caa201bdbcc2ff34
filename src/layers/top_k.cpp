// TopK (dlcaffe; ONNX TopK): top 0 holds the k largest (largest: false, the
// smallest) values along `axis`, top 1 their indices (floats), falling (or
// rising) with ties in index order, as ONNX specifies; `sorted: false`
// gets that order too. k is top_k_param.k, or a run-time scalar in bottom 1
// (torchvision's detectors take min(candidates, boxes found)): then
// Forward reads it (one host read) and sizes the tops, and a k outside
// [0, axis size] is an error naming the layer. The gradient reaches the
// picked elements; the rest of the bottom's is 0.
#include <algorithm>
#include <utility>
#include <vector>

#include "core/grow_buffer.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class TopKLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "TopK"; }
  int MinBottomBlobs() const override { return 1; }
  int MaxBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 2; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index == 0; }
  bool SizesTopsInForward() const override { return runtime_k_; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>&) override {
    group_ = static_cast<int>(std::min<size_t>(256, ctx_->info().max_work_group_size));
    runtime_k_ = bottom.size() > 1;
    DLC_REQUIRE(runtime_k_ || param_.top_k_param().k() >= 0,
                Where() << "k is " << param_.top_k_param().k() << "; it must be at least 0");
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const Blob& x = *bottom[0];
    const int rank = x.num_axes();
    const int axis = param_.top_k_param().axis();
    DLC_REQUIRE(rank >= 1 && axis >= -rank && axis < rank,
                Where() << "axis " << axis << " is out of range for a bottom of shape "
                        << x.shape_string());
    axis_ = axis < 0 ? axis + rank : axis;
    n_ = x.shape(axis_);
    outer_ = x.count(0, axis_);
    inner_ = x.count(axis_ + 1);
    if (runtime_k_) {
      DLC_REQUIRE(bottom[1]->count() == 1,
                  Where() << "k (bottom 1) must hold one value, got shape "
                          << bottom[1]->shape_string());
      k_ = n_;  // the bound; Forward reads k
    } else {
      k_ = param_.top_k_param().k();
      DLC_REQUIRE(k_ <= n_, Where() << "k " << k_ << " exceeds axis " << axis_ << " of the bottom ("
                                    << x.shape_string() << ")");
    }
    ShapeTops(x, top);
    capacity_ = 1;
    while (capacity_ < n_) capacity_ <<= 1;
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    if (runtime_k_) {
      float k = 0;
      ctx_->Read(bottom[1]->data(), 0, sizeof(float), &k);
      DLC_REQUIRE(k >= 0 && k <= n_ && k == static_cast<int>(k),
                  Where() << "k (bottom 1) is " << k << "; it must be a whole number from 0 to "
                          << n_ << ", the size of axis " << axis_);
      k_ = static_cast<int>(k);
      ShapeTops(*bottom[0], top);
    }
    const int slices = outer_ * inner_;
    if (slices == 0 || k_ == 0) return;
    const int largest = static_cast<int>(param_.top_k_param().largest());
    // Chunks of pairs that fit in half of local memory, at most 4096.
    int chunk = 4096;
    while (chunk > 64 && size_t(chunk) * 8 > ctx_->info().local_mem_bytes / 2) chunk >>= 1;
    if (n_ > chunk && k_ <= chunk / 2) return SelectByChunks(bottom, top, slices, chunk, largest);
    // A slice's keys in local memory where they fit in half of it (a
    // detector's class scores), else in the global scratch.
    const size_t local_bytes = size_t(capacity_) * (sizeof(float) + sizeof(int));
    if (local_bytes <= ctx_->info().local_mem_bytes / 2) {
      ctx_->Launch(ctx_->Kernel("top_k.cl", "", "top_k_select_local"),
                   NDRange(size_t(group_) * slices), NDRange(group_), n_, inner_, k_, largest,
                   bottom[0]->data(), LocalMemory{capacity_ * sizeof(float)},
                   LocalMemory{capacity_ * sizeof(int)}, top[0]->data(), top[1]->data());
      return;
    }
    GrowBuffer(*ctx_, &key_, size_t(slices) * capacity_ * sizeof(float));
    GrowBuffer(*ctx_, &id_, size_t(slices) * capacity_ * sizeof(int));
    ctx_->Launch(ctx_->Kernel("top_k.cl", "", "top_k_select"), NDRange(size_t(group_) * slices),
                 NDRange(group_), n_, inner_, k_, largest, capacity_, bottom[0]->data(),
                 key_->mem(), id_->mem(), top[0]->data(), top[1]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (bottom.size() > 1 && propagate_down[1]) bottom[1]->SetDiff(0.f);
    if (!propagate_down[0]) return;
    bottom[0]->SetDiff(0.f);
    const int count = top[0]->count();
    ctx_->Launch1D(ctx_->Kernel("top_k.cl", "", "top_k_backward"), count, count, n_, inner_, k_,
                   top[1]->data(), top[0]->diff(), bottom[0]->diff());
  }

 private:
  // Long slices with a small k (RetinaNet's classes x anchors of a level):
  // rounds that keep each chunk's best k, in parallel over the chunks, until
  // a slice's survivors fit one chunk; then its best k.
  void SelectByChunks(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top, int slices,
                      int chunk, int largest) {
    const size_t first = size_t(slices) * ((n_ + chunk - 1) / chunk) * k_;
    GrowBuffer(*ctx_, &key_, first * sizeof(float));
    GrowBuffer(*ctx_, &id_, first * sizeof(int));
    GrowBuffer(*ctx_, &key2_, first * sizeof(float));
    GrowBuffer(*ctx_, &id2_, first * sizeof(int));
    cl_mem in_key = key2_->mem(), in_id = id2_->mem(), out_key = key_->mem(), out_id = id_->mem();
    int length = n_, from_x = 1;
    while (length > chunk) {
      const int chunks = (length + chunk - 1) / chunk;
      ctx_->Launch(ctx_->Kernel("top_k.cl", "", "top_k_chunks"),
                   NDRange(size_t(group_) * slices * chunks), NDRange(group_), length, inner_, k_,
                   largest, from_x, bottom[0]->data(), in_key, in_id, chunk, out_key, out_id,
                   LocalMemory{chunk * sizeof(float)}, LocalMemory{chunk * sizeof(int)});
      std::swap(in_key, out_key);
      std::swap(in_id, out_id);
      length = chunks * k_;
      from_x = 0;
    }
    ctx_->Launch(ctx_->Kernel("top_k.cl", "", "top_k_pairs_select"), NDRange(size_t(group_) * slices),
                 NDRange(group_), length, inner_, k_, largest, in_key, in_id, top[0]->data(),
                 top[1]->data(), LocalMemory{chunk * sizeof(float)}, LocalMemory{chunk * sizeof(int)});
  }

  void ShapeTops(const Blob& x, const std::vector<Blob*>& top) {
    std::vector<int> shape = x.shape();
    shape[axis_] = k_;
    top[0]->Reshape(shape);
    top[1]->Reshape(shape);
  }

  int group_ = 1, axis_ = 0, n_ = 0, outer_ = 0, inner_ = 0, k_ = 0, capacity_ = 1;
  bool runtime_k_ = false;
  BufferPtr key_, id_, key2_, id2_;  // sort scratch, or the chunk rounds' pairs
};

REGISTER_LAYER_CLASS(TopK);

}  // namespace dlcaffe
