// NonZero (dlcaffe; ONNX NonZero, torch.nonzero transposed): the
// coordinates of the bottom's elements that are not 0, as a rank x K top of
// floats (exact below 2^24), in row-major order. K follows the data: Forward
// compacts on the device, reads K (the one host read), and sizes the top;
// Reshape gives it K's bound, the element count. No gradient.
#include <algorithm>
#include <vector>

#include "core/grow_buffer.hpp"
#include "core/zero_gradients.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class NonZeroLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "NonZero"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool SizesTopsInForward() const override { return true; }

  void LayerSetUp(const std::vector<Blob*>&, const std::vector<Blob*>&) override {
    group_ = static_cast<int>(std::min<size_t>(256, ctx_->info().max_work_group_size));
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const Blob& x = *bottom[0];
    DLC_REQUIRE(x.num_axes() >= 1, Where() << "needs a bottom with at least one axis, got a scalar");
    top[0]->Reshape(std::vector<int>{x.num_axes(), x.count()});
    if (x.shape() != dims_) {
      dims_ = x.shape();
      GrowBuffer(*ctx_, &dims_buffer_, dims_.size() * sizeof(int));
      ctx_->Write(dims_buffer_->mem(), 0, dims_.size() * sizeof(int), dims_.data());
    }
    GrowBuffer(*ctx_, &found_, size_t(x.count()) * sizeof(int));
    GrowBuffer(*ctx_, &count_, sizeof(int));
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int n = bottom[0]->count(), rank = bottom[0]->num_axes();
    int count = 0;
    if (n > 0) {
      ctx_->Launch(ctx_->Kernel("non_zero.cl", "", "non_zero_compact"), NDRange(group_),
                   NDRange(group_), n, bottom[0]->data(), found_->mem(), count_->mem(),
                   LocalMemory{group_ * sizeof(int)});
      ctx_->Read(count_->mem(), 0, sizeof(int), &count);
    }
    top[0]->Reshape(std::vector<int>{rank, count});
    ctx_->Launch1D(ctx_->Kernel("non_zero.cl", "", "non_zero_coordinates"), count, count, rank,
                   dims_buffer_->mem(), found_->mem(), top[0]->data());
  }

  void Backward(const std::vector<Blob*>&, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    WriteZeroGradients(propagate_down, bottom);
  }

 private:
  int group_ = 1;
  std::vector<int> dims_;
  BufferPtr dims_buffer_, found_, count_;
};

REGISTER_LAYER_CLASS(NonZero);

}  // namespace dlcaffe
