// Split (Caffe "Split"): one bottom, N tops that share the bottom's data (no
// copy); backward sums the top diffs into the bottom diff. The Net inserts it
// where a blob feeds several layers, as Caffe does.
#include "core/pointwise_kernel.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "dlcaffe/math.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;
// 16-bit diffs (float ones keep split.cl and Axpy), summed in float.
const PointwiseKernel kSplitSum2("split_sum2_typed", {In("a"), In("b"), Out("dx")}, "dx = a + b;");
const PointwiseKernel kSplitAdd("split_add_typed", {In("a"), InOut("dx")}, "dx = dx + a;");
}  // namespace

class SplitLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Split"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int MinTopBlobs() const override { return 1; }
  bool SupportsStorage(StorageType) const override { return true; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    for (Blob* t : top) {
      DLC_REQUIRE(t != bottom[0], Where() << "Split cannot work in place");
      t->ReshapeLike(*bottom[0]);
      t->ShareData(*bottom[0]);
    }
  }

  // Re-shares in case a top was given new storage since Reshape.
  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    for (Blob* t : top) t->ShareData(*bottom[0]);
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    const int n = bottom[0]->count();
    if (top.size() == 1) {
      ctx_->Copy(top[0]->diff(), 0, bottom[0]->diff(), 0,
                 static_cast<size_t>(n) * bottom[0]->element_bytes());
      return;
    }
    if (bottom[0]->storage_type() != StorageType::kFloat32) {
      kSplitSum2.Launch(*ctx_, n, {Diff(*top[0]), Diff(*top[1]), Diff(*bottom[0])}, {}, {},
                        KernelShapeOf(choices_));
      for (size_t i = 2; i < top.size(); ++i)
        kSplitAdd.Launch(*ctx_, n, {Diff(*top[i]), Diff(*bottom[0])}, {}, {},
                         KernelShapeOf(choices_));
      return;
    }
    ctx_->Launch1D(ctx_->Kernel("split.cl", "", "split_sum2"), n, n, top[0]->diff(),
                   top[1]->diff(), bottom[0]->diff());
    for (size_t i = 2; i < top.size(); ++i)
      Axpy(*ctx_, n, 1.f, top[i]->diff(), 0, bottom[0]->diff(), 0);
  }
};

REGISTER_LAYER_CLASS(Split);

}  // namespace dlcaffe
